/**
 * The runtime's public session API: what embedders and every transport use.
 * Transports never reach into machine internals; they call these methods and project
 * `events()` onto their wire format.
 */
import type { Readable } from 'node:stream';
import type { Observable } from 'rxjs';
import type { InspectionEvent } from 'xstate';
import type {
  AgentCard,
  AnswerResult,
  ApprovalRecord,
  ClientTool,
  DoubleTextingPolicy,
  Envelope,
  ExecutionRecord,
  InboundMessage,
  MailboxEntry,
  QueuedEntry,
  ApprovalResolution,
  ContentBlock,
  MaybePromise,
  ModelMessage,
  ModelStopReason,
  ModelTool,
  Part,
  PersistedSession,
  Principal,
  SessionEvent,
  SessionRecord,
  StepCommit,
  Usage,
} from './types.js';
import type { RuntimeLimits } from './limits.js';
import type { Registries } from './registries/types.js';

export type { RuntimeLimits } from './limits.js';

export interface SendOptions {
  principal?: Principal | undefined;
  /** Tools declared by the client for this turn (AAP client-side tools): calls stop the turn. */
  clientTools?: ClientTool[] | undefined;
  /** Tool names a client has marked trusted for this session (AAP `trust: true`): standing approvals. */
  standingApprovals?: string[] | undefined;
  /** Restrict the acting actors' server tools to these names (AAP per-session `agent.tools`). */
  enabledTools?: string[] | undefined;
  /** How a client enables a tool left out of `enabledTools` (`{tool}` stands for its name): told to the model when it calls one. */
  howToEnableTools?: string | undefined;
  /**
   * Part types the originator of this turn consumes (what its Agent Card's `consumes` says):
   * `['llm-context']` declares a peer LLM, and the turn's envelope gets one llm-context part.
   * Unknown part types are refused (TurnstateError 'message.invalid_consumes').
   */
  consumes?: readonly string[] | undefined;
  /**
   * The originator's Agent Card (an A2A peer): the `consumes` of its parts extension count as
   * `consumes`. Only that extension is read, so a partial card is enough.
   */
  callerCard?: { [K in keyof AgentCard]?: AgentCard[K] | undefined } | undefined;
  /** @deprecated Use `consumes: ['llm-context']` (this is folded into it). */
  consumesLlmContext?: boolean | undefined;
}

/** A turn's tool settings (SendOptions' subset) that can change while the turn runs. */
export type TurnTools = Pick<SendOptions, 'enabledTools' | 'howToEnableTools' | 'standingApprovals' | 'clientTools'>;

/** How a turn ended. */
export interface TurnOutcome {
  turnId: string;
  finalizedBy: string;
  stop?: 'max_tokens' | 'refusal' | 'error' | 'interrupted';
  envelope?: Envelope;
  parts: Part[];
  usage: Usage;
  error?: { code: string; message: string };
  /** Spec 003 compatibility mode: the last respond_to_user text of the turn, else `finalContent` (as on `turn.settled`). */
  userResponse?: string;
  /** Spec 003 compatibility mode: the final text for display (the mark_work_complete summary, else the last assistant text). */
  finalContent?: string;
  /**
   * Set when the turn stopped to wait instead of ending (`finalizedBy` is a state that holds the
   * actor): `resumeOn` names what resumes it ('approval-response', 'peer-envelope', or a
   * consumer's injection kind). Absent when the turn ended.
   */
  held?: { resumeOn: string };
  /**
   * A turn that settled without an envelope: the part types its originators consume, when one
   * consumes `llm-context` (`delivery.buffered(outcome)` then keeps the actor's own llm-context
   * part, as an envelope would). Absent otherwise.
   */
  consumes?: string[];
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
  | { kind: 'client-tool-result'; callId: string; content: string; isError?: boolean | undefined; principal?: Principal | undefined }
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
  /** Set while the turn waits in a state that holds the actor: what resumes it (as on TurnOutcome). */
  held?: { resumeOn: string };
  /** How many messages wait behind the running turn (double-texting `queue`). */
  queued: number;
  /**
   * The messages waiting behind the running turn, in queue order (the order their turns start):
   * each one's `turnId` (as its `TurnRef` and, later, its `turn.started` carry it) and text. The
   * log has no event for a waiting message until its turn starts; this is where a client that
   * (re)connects finds it.
   */
  queuedMessages: Array<{ turnId: string; text: string }>;
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
    answer: { approved: boolean; reason?: string | undefined },
    by: Principal,
    via: string,
  ): Promise<AnswerResult>;
  /**
   * Replaces each of the running turn's tool settings `tools` gives (an AAP re-submission's
   * overrides; one left out keeps its value, `clientTools: []` removes the client tools): its next
   * model call and tool calls use them (a call already waiting for approval still waits for its
   * answer). Written with the turn, and published as `turnTools.changed` carrying `metadata`
   * (checked and kept as a message's metadata is). Resolves false when `turnId` is not the
   * running turn.
   */
  updateTurnTools(turnId: string, tools: TurnTools, metadata?: Record<string, unknown>): Promise<boolean>;
  /**
   * Writes now what group commit still holds for this session (its record, the messages of this
   * event-loop turn; with other stores nothing is held): once it returns, what the session
   * accepted survives a crash. For an answer that says "created" (AAP's 201). Throws when the
   * store refuses the write.
   */
  persistNow(): void;
  /**
   * Replay from the store after `afterSeq` (default 0 = everything), then live. An `afterSeq` that
   * is not a non-negative integer throws `cursor.invalid`; one past the session's last seq errors
   * the subscription with `cursor.ahead` (as SSE and WebSocket refuse such a cursor).
   */
  events(afterSeq?: number): Observable<SessionEvent>;
  snapshot(): Promise<SessionSnapshot>;
  mailbox(): Promise<MailboxEntry[]>;
  executions(): Promise<ExecutionRecord[]>;
  /**
   * The session's live A2UI surfaces, in the order they were created: the ids its published
   * `a2ui-surface` parts created and did not delete since (docs/concepts/surfaces.md, surfaces:live),
   * as a client applying every part to one MessageProcessor holds them. Read from the store's
   * events, so the same after a restart or passivation.
   */
  surfaces(): Promise<string[]>;
  /** Resolves when no turn is running or queued. */
  idle(): Promise<void>;
}

export interface RuntimeOptions {
  model: ModelPort;
  /** A second, faster model for llm-context translation (defaults to `model`). */
  contextModel?: ModelPort | undefined;
  /**
   * Where tools' artifacts are kept (default: in memory, minting ids and `createdAt` with this
   * runtime's `newId` and `now`; `turnstate serve`: files under its data directory). A store
   * passed here keeps its own clock and ids: give it the same `now` and `newId` for deterministic runs.
   */
  artifacts?: ArtifactStore | undefined;
  store?: SessionStore | undefined;
  registries?: Registries | undefined;
  /**
   * Passed to every XState actor the runtime creates: a callback or an observer of XState's
   * inspection events (e.g. @statelyai/inspect's `inspector.inspect`, as it is). With it, sessions
   * run their machine on a live XState actor (without it, compiled: docs/machines/README.md).
   */
  inspect?: ((event: InspectionEvent) => void) | { next?: ((event: InspectionEvent) => void) | undefined } | undefined;
  limits?: { [K in keyof RuntimeLimits]?: RuntimeLimits[K] | undefined } | undefined;
  /** Decides who may answer an approval (default: a principal of the session's tenant; of no tenant for a session without one). */
  canAnswerApproval?: ((approval: ApprovalRecord, by: Principal) => boolean) | undefined;
  /** Passivate sessions idle this long (ms); 0 disables. */
  passivateAfterMs?: number | undefined;
  /**
   * What becomes of the model's thinking blocks as reasoning-trace parts (recorded, published,
   * enveloped): `keep` (default), `redact` (an empty part marked `redacted`), or `drop` (none).
   */
  reasoningTraces?: 'keep' | 'redact' | 'drop' | undefined;
  /** Clock and id source, for deterministic tests and replay. */
  now?: (() => number) | undefined;
  newId?: ((prefix: string) => string) | undefined;
}

export interface CreateSessionOptions {
  id?: string | undefined;
  actor: string;
  tenantId?: string | undefined;
  doubleTexting?: DoubleTextingPolicy | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** The session API of a runtime: everything transports and embedders drive sessions with. */
export interface SessionRuntime {
  readonly registries: Registries;
  /**
   * The actor's Agent Card: name, description, skills and the part types it produces and
   * consumes, derived from its registration with its `card` overrides. Throws
   * TurnstateError('actor.unknown') for an unregistered actor.
   */
  agentCard(actorName: string): AgentCard;
  /** Throws TurnstateError('actor.unknown') for an unregistered actor, as agentCard does. */
  createSession(opts: CreateSessionOptions): Promise<SessionHandle>;
  /**
   * A session by id (reactivated from the store if passivated), or undefined (also once the runtime
   * is closed: see `closed`). With `visibleTo`, a session of another tenant than that principal's
   * (a principal without a tenant sees only sessions without one) is undefined too, and is not
   * woken from the store for the asking: what a transport serving many tenants uses.
   */
  session(id: string, opts?: { visibleTo?: Principal | undefined }): Promise<SessionHandle | undefined>;
  /**
   * True once `close()` was called. A session the runtime no longer hands out is then not
   * missing: transports answer `runtime.closed` (HTTP 503, retry against another instance), never
   * `session.not_found`.
   */
  readonly closed: boolean;
  listSessions(filter?: { tenantId?: string | undefined }): Promise<SessionRecord[]>;
  deleteSession(id: string): Promise<boolean>;
  /** Answer an approval knowing only its id (channels that carry no session id). */
  answerApproval(
    approvalId: string,
    answer: { approved: boolean; reason?: string | undefined },
    by: Principal,
    via: string,
  ): Promise<AnswerResult>;
  /**
   * A session's recorded events with seq > `afterSeq` (default 0), in order, at most `limit`:
   * what is stored now (events are stored before they are published). Never wakes a passivated
   * session; a session that does not exist has none.
   */
  history(sessionId: string, afterSeq?: number, limit?: number): Promise<SessionEvent[]>;
  /** A session's approval records, in creation order (every status unless `status` narrows it). */
  approvals(filter: { sessionId: string; status?: ApprovalRecord['status'] | undefined }): Promise<ApprovalRecord[]>;
  /** An approval by id, or undefined (channels that carry only the approval id look up its session). */
  approval(approvalId: string): Promise<ApprovalRecord | undefined>;
  /**
   * Whether `by` may answer `approval` (the runtime's `canAnswerApproval`): a channel that
   * answers several approvals at once checks them all before it applies any.
   */
  mayAnswerApproval(approval: ApprovalRecord, by: Principal): boolean;
  /**
   * Restore sessions with unfinished turns from the store and resume them. A session whose
   * stored state cannot be restored (a damaged row, a turn state no longer registered) is listed
   * in `failed` and left as stored; the others still resume.
   */
  recover(): Promise<{ resumed: string[]; failed: RecoverFailure[] }>;
  /**
   * Stop accepting work, write what was committed, close the store. Running turns stay as
   * recorded and resume on `recover()`: a running tool handler's signal aborts, and an outcome it
   * reaches after close is not recorded (the tool ran at most once; after the restart the model is
   * told its outcome is unknown, see docs/concepts/tools.md).
   */
  close(): Promise<void>;
}

/** A session `recover()` could not restore: its id and why (`session.unrestorable`). */
export interface RecoverFailure {
  sessionId: string;
  code: string;
  message: string;
}

/**
 * A runtime: the session API plus a read-only view of its store, for inspection, admin tools and
 * tests. Transports take a `SessionRuntime` and never read the store.
 */
export interface Runtime extends SessionRuntime {
  readonly store: SessionStoreReader;
}

/* ------------------------------------------------------------------ model port: what an embedder plugs in */

export interface ModelRequest {
  sessionId: string;
  turnId: string;
  actor: string;
  /** Model id (actor's, else the port's default). */
  model?: string | undefined;
  system: string;
  /**
   * The history (for a turn's calls, the session's own incremental history: read-only, and valid
   * until the call ends; a port that keeps the request longer copies it).
   */
  messages: ModelMessage[];
  tools: ModelTool[];
  /** `any` forces tool use (default); `auto` when thinking is on. */
  toolChoice: 'any' | 'auto';
  maxTokens?: number | undefined;
  thinking?: { budgetTokens: number } | undefined;
  /** 'turn' for the actor loop; 'llm-context' for the secondary translator model. */
  purpose?: 'turn' | 'llm-context' | undefined;
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

export interface SessionStore {
  readonly kind: string;
  /**
   * The store prefers few, larger commits (each commit is a transaction). The runtime then merges
   * the steps of one event-loop turn into one commit, and writes at once before any side effect,
   * stop or settlement. Only for stores whose `commit` is synchronous.
   */
  readonly groupCommit?: boolean | undefined;

  createSession(record: SessionRecord): MaybePromise<void>;
  getSession(id: string): MaybePromise<SessionRecord | undefined>;
  listSessions(filter?: { tenantId?: string | undefined }): MaybePromise<SessionRecord[]>;
  /** Removes the session and everything recorded for it. */
  deleteSession(id: string): MaybePromise<void>;

  /** Atomic: the events, mailbox entries, executions, approvals and snapshot of one step. */
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
  listApprovals(filter: { sessionId?: string | undefined; status?: ApprovalRecord['status'] | undefined }): MaybePromise<ApprovalRecord[]>;
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

/** The reading half of a store: what `Runtime.store` exposes (nothing that writes or closes). */
export type SessionStoreReader = Pick<
  SessionStore,
  'kind' | 'getSession' | 'listSessions' | 'readEvents' | 'lastSeq' | 'readMailbox' | 'readQueue' | 'readExecutions' | 'loadSnapshot' | 'getApproval' | 'listApprovals'
>;

/* ------------------------------------------------------------------ artifact store port */

/** What an artifact store keeps about one artifact (the bytes are read separately). */
export interface ArtifactRecord {
  /**
   * `art_` + 128 random bits (base64url): unguessable, so ids cannot be probed. A store given a
   * `newId` derives it from that instead (docs/concepts/artifacts.md).
   */
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
  name?: string | undefined;
  sessionId: string;
  tenantId?: string | undefined;
}

/**
 * An artifact's bytes ready to send: its record and either the one buffer a store holds (the
 * stored buffer itself, not a copy: read it, never change it) or a stream of the file, which the
 * caller must consume or destroy.
 */
export interface ArtifactBody {
  record: ArtifactRecord;
  data: Uint8Array | Readable;
}

/**
 * Binary assets that `artifact` parts refer to. Implementations: memory (tests, embedding) and
 * the file system under the data directory (`turnstate serve`); one contract suite for both.
 *
 * Contract: `put` validates (mime type `type/subtype`, size within the store's limit) and
 * resolves once the bytes are durable; the record is visible to `head` only after that. An
 * artifact is immutable and belongs to the session that put it. `head` is synchronous because it
 * runs inside respond() checking; it reads metadata only, never the bytes. An id of the wrong
 * form is simply unknown.
 *
 * Optional, each: `open` hands the bytes without a copy (a server streams them; without it, it
 * sends what `read` returns); `delete` removes one artifact and `deleteSession` every artifact of
 * a session (the runtime calls it when it deletes the session). A store without `deleteSession`
 * keeps the bytes of a deleted session, but nothing serves them or lets a part name them.
 */
export interface ArtifactStore {
  readonly kind: string;
  put(input: ArtifactPut): Promise<ArtifactRecord>;
  head(artifactId: string): ArtifactRecord | undefined;
  read(artifactId: string): Promise<Uint8Array | undefined>;
  /** The record and the bytes to send (a stream for the file store), or undefined when unknown. */
  open?: ((artifactId: string) => Promise<ArtifactBody | undefined>) | undefined;
  /** Removes one artifact (record and bytes); resolves false when there was none. */
  delete?: ((artifactId: string) => Promise<boolean>) | undefined;
  /** Removes every artifact of `sessionId`; resolves with how many there were. Waits for the session's puts in flight. */
  deleteSession?: ((sessionId: string) => Promise<number>) | undefined;
  close?: (() => MaybePromise<void>) | undefined;
}
