/**
 * Shared helpers for the runtime tests: a runtime with a ScriptedModel, a recorder of the
 * session event stream, respond() block builders and the stream invariants every run must keep.
 */
import { expect } from 'vitest';
import type { Subscription } from 'rxjs';
import type { SessionHandle } from '../../src/api.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createScriptedModel, type ScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript, ScriptBlock, ScriptResponse } from '../../src/models/script.js';
import type { RuntimeOptions } from '../../src/api.js';
import type { Part, SessionEvent, SessionEventOf, SessionEventType } from '../../src/types.js';
import type { Registries, ToolContext } from '../../src/registries/types.js';

export function part(partType: string, text: string): Part {
  return { text, metadata: { partType } };
}
export function dataPart(partType: string, data: Record<string, unknown>): Part {
  return { data, metadata: { partType } };
}

/** A respond() tool_use block. */
export function respond(parts: Part[], turnState: string, extra: { passTo?: string; note?: string; id?: string } = {}): ScriptBlock {
  const input: Record<string, unknown> = { parts, turnState };
  if (extra.passTo !== undefined) input.passTo = extra.passTo;
  if (extra.note !== undefined) input.note = extra.note;
  return { type: 'tool_use', name: 'respond', input, ...(extra.id ? { id: extra.id } : {}) };
}
export function toolUse(name: string, input: Record<string, unknown>, id?: string): ScriptBlock {
  return { type: 'tool_use', name, input, ...(id ? { id } : {}) };
}
export function answer(...blocks: ScriptBlock[]): ScriptResponse {
  return { blocks };
}

/** A strictly sequential script: the i-th model call gets the i-th response. */
export function sequence(responses: ScriptResponse[]): ModelScript {
  return { rules: responses.map((r, i) => ({ id: `step-${i}`, times: 1, respond: r })) };
}

export interface Harness {
  rt: TurnstateRuntime;
  model: ScriptedModel;
}

export function harness(script: ModelScript, opts: Omit<RuntimeOptions, 'model'> = {}): Harness {
  const model = createScriptedModel(script);
  const rt = createRuntime({ model, ...opts });
  return { rt, model };
}

/** Registers a plain generalist tool whose handler is `fn`. */
/** Registers a tool `name` whose calls wait until `release()` is called (a tool still running). */
export function addGatedTool(registries: Registries, name: string): () => void {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  addTool(registries, name, async () => {
    await gate;
    return { ok: 1 };
  });
  return release;
}

export function addTool(
  registries: Registries,
  name: string,
  fn: (args: any, ctx: ToolContext) => unknown = (a) => ({ ok: true, echo: a }),
  extra: Record<string, unknown> = {},
): void {
  registries.tools.register({
    name,
    description: `The ${name} tool`,
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false },
    scope: 'generalist',
    handler: async (a: any, ctx: ToolContext) => fn(a, ctx),
    ...extra,
  } as any);
}

/** Records every event of a session (replay, then live). */
export class Recorder {
  readonly events: SessionEvent[] = [];
  private readonly sub: Subscription;
  private waiters: { pred: (e: SessionEvent) => boolean; resolve: (e: SessionEvent) => void }[] = [];
  constructor(session: SessionHandle, onEvent?: (e: SessionEvent, r: Recorder) => void) {
    this.sub = session.events().subscribe((e) => {
      this.events.push(e);
      onEvent?.(e, this);
      const still: typeof this.waiters = [];
      for (const w of this.waiters) (w.pred(e) ? w.resolve(e) : still.push(w));
      this.waiters = still;
    });
  }
  of<T extends SessionEventType>(type: T, turnId?: string): SessionEventOf<T>[] {
    return this.events.filter((e) => e.type === type && (turnId === undefined || e.turnId === turnId)) as SessionEventOf<T>[];
  }
  types(turnId?: string): string[] {
    return this.events.filter((e) => turnId === undefined || e.turnId === turnId).map((e) => e.type);
  }
  /** Resolves with the first event (already seen or future) matching `pred`. */
  waitFor(pred: (e: SessionEvent) => boolean, ms = 5000): Promise<SessionEvent> {
    const seen = this.events.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for an event; seen: ${this.types().join(', ')}`)), ms);
      this.waiters.push({
        pred,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      });
    });
  }
  close(): void {
    this.sub.unsubscribe();
  }
}

/**
 * The invariants of a session's event stream:
 * - seq is 1..n with no gaps (`session:seq:gapless`);
 * - each turn settles at most once, exactly once when `settledTurns` lists it (`session:settle:exactly-once`);
 * - nothing is published for a turn after its turn.settled (`session:settle:nothing-after`);
 * - envelope.settled iff the final state emits an envelope, just before turn.settled (`session:envelope:iff-emits`);
 * - every turn.started precedes the turn's other events.
 */
export function checkStream(events: readonly SessionEvent[], registries: Registries, opts: { settledTurns?: string[] } = {}): void {
  events.forEach((e, i) => expect(e.seq, `seq of event #${i} (${e.type})`).toBe(i + 1));
  const settled = new Map<string, number>();
  const started = new Set<string>();
  for (const [i, e] of events.entries()) {
    if (e.type === 'turn.started') {
      expect(started.has(e.turnId), `turn ${e.turnId} started twice`).toBe(false);
      started.add(e.turnId);
      continue;
    }
    // approval.resolved may name a turn that already settled (a late answer) only if it was a no-op;
    // every other event belongs to a running turn.
    expect(started.has(e.turnId), `${e.type} (seq ${e.seq}) before turn.started of ${e.turnId}`).toBe(true);
    expect(settled.has(e.turnId), `${e.type} (seq ${e.seq}) published after turn ${e.turnId} settled`).toBe(false);
    if (e.type === 'turn.settled') {
      settled.set(e.turnId, i);
      const def = registries.turnStates.get(e.finalizedBy);
      expect(def, `turn settled in unregistered state ${e.finalizedBy}`).toBeDefined();
      expect(def!.meta.isTerminal, `turn settled in non-terminal state ${e.finalizedBy}`).toBe(true);
      const env = events.filter((x) => x.type === 'envelope.settled' && x.turnId === e.turnId);
      if (def!.meta.emitsEnvelope) {
        expect(env, `envelope.settled for turn ${e.turnId} settled ${e.finalizedBy}`).toHaveLength(1);
        const envEvent = env[0] as SessionEventOf<'envelope.settled'>;
        expect(envEvent.envelope.meta.finalizedBy).toBe(e.finalizedBy);
        expect(envEvent.envelope.meta.turnId).toBe(e.turnId);
      } else {
        expect(env, `no envelope.settled for turn ${e.turnId} settled ${e.finalizedBy}`).toHaveLength(0);
      }
    }
  }
  for (const id of opts.settledTurns ?? []) expect(settled.has(id), `turn ${id} settled`).toBe(true);
}

export function settledOf(events: readonly SessionEvent[], turnId: string): SessionEventOf<'turn.settled'>[] {
  return events.filter((e) => e.type === 'turn.settled' && e.turnId === turnId) as SessionEventOf<'turn.settled'>[];
}

/** The content blocks of the last user message of a model request. */
export function lastUserBlocks(req: { messages: { role: string; content: any[] }[] }): any[] {
  for (let i = req.messages.length - 1; i >= 0; i--) if (req.messages[i]!.role === 'user') return req.messages[i]!.content;
  return [];
}

export function toolResultsIn(req: { messages: { role: string; content: any[] }[] }): any[] {
  return req.messages.flatMap((m) => m.content.filter((b: any) => b.type === 'tool_result'));
}

/**
 * The Messages API's shape rules for a request's history (`model:history:well-formed`): it starts
 * with a user message, roles alternate, and every assistant tool_use is answered by a tool_result
 * in the very next user message (tool_results first), with no tool_result for an unknown id.
 */
export function checkHistory(req: { messages: { role: string; content: any[] }[] }): void {
  const msgs = req.messages;
  expect(msgs[0]?.role, 'history starts with a user message').toBe('user');
  for (let i = 1; i < msgs.length; i++) expect(msgs[i]!.role, `message ${i} alternates roles`).not.toBe(msgs[i - 1]!.role);
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (m.role === 'user') {
      const prev = msgs[i - 1];
      const asked = new Set((prev?.content ?? []).filter((b: any) => b.type === 'tool_use').map((b: any) => b.id));
      let seenText = false;
      for (const b of m.content) {
        if (b.type === 'tool_result') {
          expect(seenText, `message ${i}: tool_result blocks come first`).toBe(false);
          expect(asked.has(b.tool_use_id), `message ${i}: tool_result ${b.tool_use_id} answers a tool_use of message ${i - 1}`).toBe(true);
        } else seenText = true;
      }
      continue;
    }
    const uses = m.content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.id);
    if (uses.length === 0) continue;
    const next = msgs[i + 1];
    if (!next) continue; // the last message may be the model's own pending call (not sent back yet)
    const answered = new Set(next.content.filter((b: any) => b.type === 'tool_result').map((b: any) => b.tool_use_id));
    for (const id of uses) expect(answered.has(id), `tool_use ${id} of message ${i} has a tool_result in message ${i + 1}`).toBe(true);
  }
}
