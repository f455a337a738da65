/**
 * Ports: the interfaces the machines and the runtime depend on. Interfaces only; the
 * implementations live in models/ and stores/ and are wired in runtime.ts.
 */
import type {
  ApprovalRecord,
  ApprovalResolution,
  ContentBlock,
  ExecutionRecord,
  MailboxEntry,
  ModelMessage,
  ModelStopReason,
  ModelTool,
  SessionEvent,
  Usage,
  DoubleTextingPolicy,
  InboundMessage,
} from '../types.js';
import type { SendOptions } from '../api.js';

export type MaybePromise<T> = T | Promise<T>;

/* ------------------------------------------------------------------ model port */

export interface ModelRequest {
  sessionId: string;
  turnId: string;
  actor: string;
  /** Model id (actor's, else the port's default). */
  model?: string;
  system: string;
  /**
   * The history (for a turn's calls, the session's own incremental history: read-only, and valid
   * until the call ends; a port that keeps the request longer copies it).
   */
  messages: ModelMessage[];
  tools: ModelTool[];
  /** `any` forces tool use (default); `auto` when thinking is on. */
  toolChoice: 'any' | 'auto';
  maxTokens?: number;
  thinking?: { budgetTokens: number };
  /** 'turn' for the actor loop; 'llm-context' for the secondary translator model. */
  purpose?: 'turn' | 'llm-context';
}

/**
 * What a streaming model call yields, in order. Blocks are indexed as in the Messages API.
 * A failed call throws a ModelError (see errors.ts) from the iterator.
 */
export type ModelEvent =
  | { type: 'block.start'; index: number; block: { type: 'text' } | { type: 'thinking' } | { type: 'tool_use'; id: string; name: string } }
  | { type: 'text.delta'; index: number; text: string }
  | { type: 'thinking.delta'; index: number; text: string }
  /** A chunk of a tool_use block's input JSON (respond() parts stream through this). */
  | { type: 'input.delta'; index: number; partialJson: string }
  /** The finished block; a tool_use carries its parsed `input` (or `inputError`). */
  | { type: 'block.stop'; index: number; block: ContentBlock }
  | { type: 'message.stop'; stopReason: ModelStopReason; usage: Usage; content: ContentBlock[] };

export interface ModelPort {
  readonly name: string;
  stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent>;
}

/* ------------------------------------------------------------------ store port */

/** What a store keeps about a session besides its logs. */
export interface SessionRecord {
  id: string;
  /** The entry actor: every turn starts with it. */
  actor: string;
  tenantId?: string;
  createdAt: string;
  doubleTexting: DoubleTextingPolicy;
  metadata?: Record<string, unknown>;
}

/**
 * The control state of a session, persisted with each step (small: history lives in the mailbox).
 * `machine` is the XState persisted snapshot of the session machine.
 */
export interface PersistedSession {
  machine: unknown;
  /** Runtime-side bookkeeping needed to resume (pending calls, queued messages, ...). */
  host: Record<string, unknown>;
}

/**
 * A message accepted behind a running turn (double-texting `queue`), stored as its own record
 * from the step that accepts it until the step that starts its turn (`StepCommit.dequeue`).
 */
export interface QueuedEntry {
  turnId: string;
  /** Place in the session's queue: read back in ascending order (a message put back in front gets a lower one). */
  pos: number;
  message: InboundMessage;
  opts: SendOptions;
}

/** Everything one step writes, committed atomically before any of its events is published. */
export interface StepCommit {
  /**
   * Create this session in the same commit (when it does not exist yet). With group commit the
   * runtime writes a new session with its first commit instead of a transaction of its own.
   */
  session?: SessionRecord;
  events?: SessionEvent[];
  mailbox?: MailboxEntry[];
  executions?: ExecutionRecord[];
  approvals?: ApprovalRecord[];
  /** The store keeps only the latest snapshot of a session: a new one replaces the last. */
  snapshot?: PersistedSession;
  /** Messages queued in this step (kept until dequeued; applied before `dequeue`). */
  enqueue?: QueuedEntry[];
  /** Turn ids of queued messages whose turn starts in this step (unknown ids are ignored). */
  dequeue?: string[];
}

export interface SessionStore {
  readonly kind: string;
  /**
   * The store prefers few, larger commits (each commit is a transaction). The runtime then merges
   * the steps of one event-loop turn into one commit, and writes at once before any side effect,
   * stop or settlement. Only for stores whose `commit` is synchronous.
   */
  readonly groupCommit?: boolean;

  createSession(record: SessionRecord): MaybePromise<void>;
  getSession(id: string): MaybePromise<SessionRecord | undefined>;
  listSessions(filter?: { tenantId?: string }): MaybePromise<SessionRecord[]>;
  /** Removes the session and everything recorded for it. */
  deleteSession(id: string): MaybePromise<void>;

  /** Atomic: the events, mailbox entries, executions, approvals, queue changes and snapshot of one step. */
  commit(sessionId: string, step: StepCommit): MaybePromise<void>;

  /** Events with seq > afterSeq, in order. */
  readEvents(sessionId: string, afterSeq: number, limit?: number): MaybePromise<SessionEvent[]>;
  lastSeq(sessionId: string): MaybePromise<number>;
  /**
   * The mailbox after its first `afterN` entries (default 0: all of it), in order. The mailbox is
   * append-only, so a reader holding the first n entries reads only what is new.
   */
  readMailbox(sessionId: string, afterN?: number): MaybePromise<MailboxEntry[]>;
  /** The session's queued messages (enqueued and not yet dequeued), in `pos` order. */
  readQueue(sessionId: string): MaybePromise<QueuedEntry[]>;
  readExecutions(sessionId: string): MaybePromise<ExecutionRecord[]>;
  loadSnapshot(sessionId: string): MaybePromise<PersistedSession | undefined>;

  getApproval(approvalId: string): MaybePromise<ApprovalRecord | undefined>;
  listApprovals(filter: { sessionId?: string; status?: ApprovalRecord['status'] }): MaybePromise<ApprovalRecord[]>;
  /**
   * Compare-and-set: resolves a pending approval; when it was already resolved, returns the
   * existing record unchanged with `changed: false`.
   */
  resolveApproval(
    approvalId: string,
    resolution: ApprovalResolution,
  ): MaybePromise<{ changed: boolean; record: ApprovalRecord } | undefined>;

  close(): MaybePromise<void>;
}
