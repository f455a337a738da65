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
} from '../types.js';

export type MaybePromise<T> = T | Promise<T>;

/* ------------------------------------------------------------------ model port */

export interface ModelRequest {
  sessionId: string;
  turnId: string;
  actor: string;
  /** Model id (actor's, else the port's default). */
  model?: string;
  system: string;
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
  snapshot?: PersistedSession;
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

  /** Atomic: the events, mailbox entries, executions, approvals and snapshot of one step. */
  commit(sessionId: string, step: StepCommit): MaybePromise<void>;

  /** Events with seq > afterSeq, in order. */
  readEvents(sessionId: string, afterSeq: number, limit?: number): MaybePromise<SessionEvent[]>;
  lastSeq(sessionId: string): MaybePromise<number>;
  readMailbox(sessionId: string): MaybePromise<MailboxEntry[]>;
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

/* ------------------------------------------------------------------ artifact store port */

/** What an artifact store keeps about one artifact (the bytes are read separately). */
export interface ArtifactRecord {
  /** `art_` + 128 random bits (base64url): unguessable, so ids cannot be probed. */
  artifactId: string;
  mimeType: string;
  sizeBytes: number;
  name?: string;
  /** The session whose tool or embedder stored it. */
  sessionId: string;
  /** Only principals of this tenant may read it (absent: principals without a tenant). */
  tenantId?: string;
  createdAt: string;
}

export interface ArtifactPut {
  data: Uint8Array;
  mimeType: string;
  name?: string;
  sessionId: string;
  tenantId?: string;
}

/**
 * Binary assets that `artifact` parts refer to. Implementations: memory (tests, embedding) and
 * the file system under the data directory (`turnstate serve`); one contract suite for both.
 *
 * Contract: `put` validates (mime type `type/subtype`, size within the store's limit) and
 * resolves once the bytes are durable; the record is visible to `head` only after that. An
 * artifact is immutable. `head` is synchronous because it runs inside respond() checking; it
 * reads metadata only, never the bytes. An id of the wrong form is simply unknown.
 */
export interface ArtifactStore {
  readonly kind: string;
  put(input: ArtifactPut): Promise<ArtifactRecord>;
  head(artifactId: string): ArtifactRecord | undefined;
  read(artifactId: string): Promise<Uint8Array | undefined>;
  close?(): MaybePromise<void>;
}
