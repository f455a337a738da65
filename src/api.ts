/**
 * The runtime's public session API: what embedders and every transport use.
 * Transports never reach into machine internals; they call these methods and project
 * `events()` onto their wire format.
 */
import type { Observable } from 'rxjs';
import type {
  AnswerResult,
  ApprovalRecord,
  ClientTool,
  DoubleTextingPolicy,
  Envelope,
  ExecutionRecord,
  InboundMessage,
  MailboxEntry,
  Part,
  Principal,
  SessionEvent,
  Usage,
} from './types.js';
import type { Registries } from './registries/types.js';
import type { ModelPort, SessionRecord, SessionStore } from './machines/ports.js';

export interface SendOptions {
  principal?: Principal;
  /** Tools declared by the client for this turn (AAP client-side tools): calls stop the turn. */
  clientTools?: ClientTool[];
  /** Tool names a client has marked trusted for this session (AAP `trust: true`): standing approvals. */
  standingApprovals?: string[];
  /** Restrict the acting actors' server tools to these names (AAP per-session `agent.tools`). */
  enabledTools?: string[];
  /** Declares a peer-LLM consumer for this turn: an llm-context part is produced once. */
  consumesLlmContext?: boolean;
}

/** How a turn ended. */
export interface TurnOutcome {
  turnId: string;
  finalizedBy: string;
  stop?: 'max_tokens' | 'refusal' | 'error' | 'interrupted';
  envelope?: Envelope;
  parts: Part[];
  usage: Usage;
  error?: { code: string; message: string };
  /** Spec 003 compatibility mode: the last respond_to_user text of the turn, else the final text. */
  userResponse?: string;
}

export interface TurnRef {
  turnId: string;
  /** True when the message waits behind a running turn (double-texting `queue`). */
  queued: boolean;
  /** Resolves when the turn settles, or when it stops to wait (suspended for approval or a client tool). */
  settled: Promise<TurnOutcome>;
}

/** Anything entering a turn from outside the model. */
export type Injection =
  /** Result of a client-side tool (AAP `tool` message). */
  | { kind: 'client-tool-result'; callId: string; content: string; isError?: boolean; principal?: Principal }
  /** A peer's envelope resuming a `delegated` turn. */
  | { kind: 'peer-envelope'; envelope: Envelope }
  /** Resume a consumer-registered held state by its `resumeOn` name. */
  | { kind: 'resume'; resumeOn: string; payload?: unknown };

export interface SessionSnapshot {
  id: string;
  actor: string;
  tenantId?: string;
  /** 'idle' between turns, else the current turn state ('awaiting', 'suspended', ...). */
  state: string;
  turnId?: string;
  actingActor?: string;
  lastSeq: number;
  pendingApprovals: ApprovalRecord[];
  /** Client-side tool calls the turn waits for. */
  pendingClientCalls: { callId: string; tool: string; args: unknown }[];
  queued: number;
}

export interface SessionHandle {
  readonly id: string;
  readonly record: SessionRecord;
  /** Start (or queue) a turn. Rejects with TurnstateError('session.busy') under the `reject` policy. */
  send(message: InboundMessage | string, opts?: SendOptions): Promise<TurnRef>;
  inject(injection: Injection): Promise<TurnRef | undefined>;
  /** The same path for every channel; the first answer wins. */
  answerApproval(
    approvalId: string,
    answer: { approved: boolean; reason?: string },
    by: Principal,
    via: string,
  ): Promise<AnswerResult>;
  /** Replay from the store after `afterSeq` (default 0 = everything), then live. */
  events(afterSeq?: number): Observable<SessionEvent>;
  snapshot(): Promise<SessionSnapshot>;
  mailbox(): Promise<MailboxEntry[]>;
  executions(): Promise<ExecutionRecord[]>;
  /** Resolves when no turn is running or queued. */
  idle(): Promise<void>;
}

export interface RuntimeOptions {
  model: ModelPort;
  /** A second, faster model for llm-context translation (defaults to `model`). */
  contextModel?: ModelPort;
  store?: SessionStore;
  registries?: Registries;
  /** Passed to every XState actor the runtime creates: a callback or an observer (e.g. @statelyai/inspect's `inspector.inspect`). */
  inspect?: ((event: unknown) => void) | { next?: (event: unknown) => void };
  limits?: Partial<RuntimeLimits>;
  /** Decides who may answer an approval (default: same tenant). */
  canAnswerApproval?: (approval: ApprovalRecord, by: Principal) => boolean;
  /** Passivate sessions idle this long (ms); 0 disables. */
  passivateAfterMs?: number;
  /** Clock and id source, for deterministic tests and replay. */
  now?: () => number;
  newId?: (prefix: string) => string;
}

export interface RuntimeLimits {
  maxModelCallsPerTurn: number;
  maxRespondRetries: number;
  maxFreeTextNudges: number;
  maxHandoffsPerTurn: number;
  executionResultMaxChars: number;
  /**
   * Messages that may wait behind a session's running turn (queued, or joined to it under
   * `interrupt`); one more is refused with TurnstateError('session.queue_full') (HTTP 429).
   * Default 100.
   */
  maxQueuedMessages: number;
  /**
   * Mailbox entries kept in memory, over all sessions between turns, so a session that wakes
   * reads only what is new (least recently used sessions go first; 0 keeps none). Default 100,000.
   */
  historyCacheEntries: number;
}

export interface CreateSessionOptions {
  id?: string;
  actor: string;
  tenantId?: string;
  doubleTexting?: DoubleTextingPolicy;
  metadata?: Record<string, unknown>;
}

export interface Runtime {
  readonly registries: Registries;
  readonly store: SessionStore;
  createSession(opts: CreateSessionOptions): Promise<SessionHandle>;
  /** A session by id (reactivated from the store if passivated), or undefined. */
  session(id: string): Promise<SessionHandle | undefined>;
  listSessions(filter?: { tenantId?: string }): Promise<SessionRecord[]>;
  deleteSession(id: string): Promise<boolean>;
  /** Answer an approval knowing only its id (channels that carry no session id). */
  answerApproval(
    approvalId: string,
    answer: { approved: boolean; reason?: string },
    by: Principal,
    via: string,
  ): Promise<AnswerResult>;
  /** Restore sessions with unfinished turns from the store and resume them. */
  recover(): Promise<{ resumed: string[] }>;
  /** Stop accepting work, let running steps commit, close the store. */
  close(): Promise<void>;
}
