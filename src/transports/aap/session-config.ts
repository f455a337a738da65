/**
 * A session's AAP configuration (`agent` with tools/options, client `tools`), persisted:
 * at creation in the session record's metadata, and each override with the user message that
 * brought it (the `turn.started` or `message.joined` event's input metadata) or, for a
 * re-submission, with the turn's `turnTools.changed`. The latest persisted value wins.
 * Recently used configs are cached (bounded: a server that has seen many sessions keeps only
 * the last CACHED_CONFIGS); the others are read again from the record and the history.
 */
import type { SessionHandle, SessionRuntime } from '../../api.js';
import type { SessionRecord } from '../../types.js';
import type { AgentConfig, ToolSpec } from './types.js';

export const AAP_METADATA_KEY = 'aap';

/** The message metadata key of an AAP request's id (sessions whose messages may join a running turn). */
export const AAP_REQUEST_KEY = 'aapRequest';

export interface AapSessionConfig {
  agent: AgentConfig;
  tools: ToolSpec[];
  /** Part types the client consumes (turnstate extension). */
  consumes?: string[];
}

function fromMetadata(value: unknown): Partial<AapSessionConfig> | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  return value as Partial<AapSessionConfig>;
}

/** How many sessions' configs are kept in memory (least recently used go first). */
export const CACHED_CONFIGS = 1024;

export class SessionConfigs {
  readonly #runtime: SessionRuntime;
  /** Recently used configs, oldest first. */
  readonly #cache = new Map<string, AapSessionConfig>();
  /** Configs holding an override no message recorded yet: kept until one does (never evicted). */
  readonly #unpersisted = new Map<string, AapSessionConfig>();

  constructor(runtime: SessionRuntime) {
    this.#runtime = runtime;
  }

  /** The session's current config, from its record plus the overrides persisted with its messages. */
  async get(session: SessionHandle | SessionRecord): Promise<AapSessionConfig> {
    const record = 'record' in session ? session.record : session;
    const pending = this.#unpersisted.get(record.id);
    if (pending !== undefined) return pending;
    const cached = this.#cache.get(record.id);
    if (cached !== undefined) {
      this.#remember(record.id, cached);
      return cached;
    }
    const base = fromMetadata(record.metadata?.[AAP_METADATA_KEY]);
    let config: AapSessionConfig = {
      agent: { name: record.actor, ...(base?.agent ?? {}) },
      tools: base?.tools ?? [],
      ...(base?.consumes === undefined ? {} : { consumes: base.consumes }),
    };
    const events = await this.#runtime.history(record.id);
    for (const ev of events) {
      const metadata = ev.type === 'turn.started' || ev.type === 'message.joined' ? ev.input.metadata : ev.type === 'turnTools.changed' ? ev.metadata : undefined;
      const override = fromMetadata(metadata?.[AAP_METADATA_KEY]);
      if (override !== undefined) config = merge(config, override);
    }
    this.#remember(record.id, config);
    return config;
  }

  #remember(sessionId: string, config: AapSessionConfig): void {
    this.#cache.delete(sessionId);
    this.#cache.set(sessionId, config);
    if (this.#cache.size > CACHED_CONFIGS) this.#cache.delete(this.#cache.keys().next().value!);
  }

  /**
   * Remember a config that was persisted with a message (or is about to be). `persisted: false`:
   * nothing recorded it yet (a re-submission's override, which has no user message); the next
   * user message stores it (`isPersisted`).
   */
  set(sessionId: string, config: AapSessionConfig, opts: { persisted?: boolean } = {}): void {
    if (opts.persisted === false) {
      this.#unpersisted.set(sessionId, config);
      this.#cache.delete(sessionId);
    } else {
      this.#unpersisted.delete(sessionId);
      this.#remember(sessionId, config);
    }
  }

  /** How many configs are in memory (the bounded cache and the unpersisted ones). */
  get size(): number {
    return this.#cache.size + this.#unpersisted.size;
  }

  /** False while the cached config holds an override no message recorded yet. */
  isPersisted(sessionId: string): boolean {
    return !this.#unpersisted.has(sessionId);
  }

  forget(sessionId: string): void {
    this.#cache.delete(sessionId);
    this.#unpersisted.delete(sessionId);
  }
}

/** Applies an override: tools and consumes replace, options merge by key, the agent name never changes. */
export function merge(config: AapSessionConfig, override: { agent?: Partial<AgentConfig>; tools?: ToolSpec[]; consumes?: string[] }): AapSessionConfig {
  const agent: AgentConfig = { name: config.agent.name };
  const tools = override.agent?.tools ?? config.agent.tools;
  if (tools !== undefined) agent.tools = tools;
  const options = config.agent.options === undefined && override.agent?.options === undefined
    ? undefined
    : { ...(config.agent.options ?? {}), ...(override.agent?.options ?? {}) };
  if (options !== undefined) agent.options = options;
  const consumes = override.consumes ?? config.consumes;
  return { agent, tools: override.tools ?? config.tools, ...(consumes === undefined ? {} : { consumes }) };
}
