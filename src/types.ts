/**
 * turnstate's shared vocabulary: parts, principals, model content, session events, mailbox
 * entries, execution and approval records. Leaf module: imports nothing from the project.
 */

/** JSON-safe value. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/* ------------------------------------------------------------------ parts */

export interface PartMetadata {
  partType: string;
  [k: string]: unknown;
}

/** One typed unit of output (A2A 1.0 style: `text` or `data`, never both). */
export interface Part {
  text?: string;
  data?: Record<string, unknown>;
  metadata: PartMetadata;
}

/* ------------------------------------------------------------------ identity */

/** Who is acting: resolved by the transport's authentication hook. */
export interface Principal {
  userId?: string | undefined;
  tenantId?: string | undefined;
  personId?: string | undefined;
  /** Free-form, e.g. `tier: 'trusted'`, visible to approval policies as `ctx.user`. */
  attributes?: Record<string, unknown> | undefined;
  /** Roles such as 'approver'; used by `canAnswerApproval`. */
  roles?: string[] | undefined;
}

/**
 * Whether `principal` may see a session of `tenantId`: the one tenant rule of the runtime and every
 * transport (a principal without a tenant sees only sessions without one).
 */
export function sameTenant(principal: Principal, tenantId: string | undefined): boolean {
  return (principal.tenantId ?? undefined) === (tenantId ?? undefined);
}

/* ------------------------------------------------------------------ model content (Anthropic-shaped) */

export interface TextBlock { type: 'text'; text: string }
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
  /** Set when the streamed input JSON could not be parsed (fine-grained streaming may truncate) or repeats a key. */
  inputError?: string | undefined;
  /** JSON Pointer of a key the input names twice in one object (then `inputError` is set too). */
  duplicateKey?: string | undefined;
  rawInput?: string | undefined;
}
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean | undefined;
}
export interface ThinkingBlock { type: 'thinking'; thinking: string; signature: string }
export interface RedactedThinkingBlock { type: 'redacted_thinking'; data: string }
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock;

export interface ModelMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** A tool as the model sees it (Anthropic tool format). */
export interface ModelTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** Fine-grained tool streaming (set on respond()). */
  eager_input_streaming?: boolean | undefined;
}

export type ModelStopReason =
  | 'end_turn'
  | 'tool_use'
  | 'max_tokens'
  | 'stop_sequence'
  | 'refusal'
  | 'pause_turn'
  | 'model_context_window_exceeded';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
}

/* ------------------------------------------------------------------ tools */

export type Scope = 'generalist' | 'specialist';
export type Routing = 'routed' | 'bypass';
/** Where a tool runs: on the server (registered) or in the client that declared it for this turn (AAP). */
export type ToolSide = 'server' | 'client';

/** A tool declared by a client for one turn (AAP client-side tools). The runtime never executes it. */
export interface ClientTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/* ------------------------------------------------------------------ messages in */

export interface InboundMessage {
  text: string;
  /** Set by the runtime from the send options when absent. */
  principal?: Principal | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export type DoubleTextingPolicy = 'queue' | 'interrupt' | 'reject';

/* ------------------------------------------------------------------ envelope */

export interface EnvelopeMeta {
  sessionId: string;
  turnId: string;
  producedAt: string;
  finalizedBy: string;
  /** What settlement left out of the envelope and why (e.g. a citation bound to nothing). */
  warnings?: EnvelopeWarning[];
}

/** A part settlement did not put in the envelope, recorded with the envelope for audit. */
export interface EnvelopeWarning {
  /** `citation.unbound`: the citation's JSON Pointer resolves to nothing in domain-data. */
  code: 'citation.unbound';
  message: string;
  /** The part left out, as the actor emitted it. */
  part: Part;
}

/** The settled output of one turn (spec 001). */
export interface Envelope {
  role: 'agent';
  parts: Part[];
  meta: EnvelopeMeta;
}

/* ------------------------------------------------------------------ approvals */

export type ApprovalDecision = 'approved' | 'denied';

/**
 * Which policy decided a call:
 * - `none`: the tool has no approval policy (`requiresApproval` absent or `false`); approves.
 * - `always`: `requiresApproval: true`; asks.
 * - `cel`: an `autoApproveIf` expression yielded `true` (approve) or `false` (ask).
 * - `cel-error`: the expression could not be evaluated (bad input, an error, not a bool); asks.
 * - `policy-budget`: the CEL evaluation ran over its time or heap budget; asks.
 * - `handler`: an approval handler's verdict.
 * - `handler-error`: the handler threw, rejected, timed out or answered something other than a verdict; asks.
 * - `policy-error`: the compiled policy's `evaluate` threw (the built-in policies never do; one from
 *   a `ToolRegistry` given its own `ApprovalCompiler` may); asks.
 * - `standing`: a standing approval (AAP `trust: true`, `SendOptions.standingApprovals`) approved it.
 */
export type PolicySource = 'none' | 'always' | 'cel' | 'cel-error' | 'policy-budget' | 'handler' | 'handler-error' | 'policy-error' | 'standing';

export interface PolicyResult {
  decision: 'approve' | 'deny' | 'ask';
  /** Which policy produced it (see `PolicySource`). */
  source: PolicySource;
  reason?: string;
}

export interface ApprovalResolution {
  decision: ApprovalDecision;
  reason?: string;
  by: Principal;
  /** The channel that answered: 'api', 'aap', 'websocket', 'sse-http', 'a2a', ... */
  via: string;
  at: string;
}

/** An approval is data, never a pending Promise. */
export interface ApprovalRecord {
  approvalId: string;
  sessionId: string;
  turnId: string;
  callId: string;
  tool: string;
  args: unknown;
  actor: string;
  tenantId?: string;
  policyResult: PolicyResult;
  requestedAt: string;
  status: 'pending' | ApprovalDecision;
  resolution?: ApprovalResolution;
}

/** Outcome of answering an approval; a second answer changes nothing and reports the first. */
export type AnswerResult =
  | { ok: true; record: ApprovalRecord }
  | { ok: false; code: 'approval.already_resolved'; message: string; record: ApprovalRecord }
  | { ok: false; code: 'approval.not_found'; message: string }
  | { ok: false; code: 'approval.forbidden'; message: string };

/* ------------------------------------------------------------------ execution log */

/** One tool execution, routed or bypass (spec 002 `specialist_execution`). */
export interface ExecutionRecord {
  kind: 'specialist_execution' | 'generalist_execution';
  sessionId: string;
  turnId: string;
  actor: string;
  tool: string;
  callId: string;
  args: unknown;
  /** JSON of the handler result, truncated to the log limit. */
  result: string;
  resultTruncated: boolean;
  isError: boolean;
  /**
   * How long the attempt ran, in ms, measured with `performance.now()`: the one field of the record
   * that is measured, not taken from the runtime's injected `now` (so it differs between two runs
   * of the same scenario; compare records without it).
   */
  durationMs: number;
  /** When the attempt started (ISO 8601), from the runtime's clock (`RuntimeOptions.now`). */
  at: string;
  scope: Scope;
  routing: Routing;
  bypassReason?: string;
  approvalId?: string;
  /** 1 for the first attempt; a retried call logs one record per attempt, in order. */
  attempt?: number;
  /** How this attempt ended (records written before attempts were logged carry none). */
  outcome?: ExecutionOutcome;
}

/** `error`: the handler threw, or its result failed its outputSchema or could not be serialised. */
export type ExecutionOutcome = 'ok' | 'error' | 'timeout' | 'cancelled';

/* ------------------------------------------------------------------ mailbox */

/** The ordered record of a session; the model's history is derived from it. */
export type MailboxEntry = { turnId: string; at: string } & (
  | { kind: 'user'; text: string; principal?: Principal }
  /** One model response: its tool_use (respond() included) and thinking blocks, as sent back to the model. */
  | { kind: 'assistant'; actor: string; content: ContentBlock[] }
  /** The llm-session view of a tool result (or a respond() ack / rejection). */
  | { kind: 'tool_result'; actor: string; callId: string; tool: string; content: string; isError: boolean }
  /** A handoff: the receiver sees the sender's parts, not its bookkeeping tool messages. */
  | { kind: 'handoff'; from: string; to: string; parts: Part[] }
  /**
   * A data-bearing record, assembled into the envelope's domain-data under `tool`: a tool's domain
   * data, or (`from: 'peer'`) the domain-data of a peer's envelope that resumed a delegated turn.
   */
  | { kind: 'data'; actor: string; callId: string; tool: string; data: unknown; from?: 'peer' }
  /** A nudge the runtime wrote to the model (free text outside respond(), ...). */
  | { kind: 'nudge'; actor: string; text: string }
  /**
   * The model refused the turn (stop reason `refusal`). Every entry of the turn stays in the
   * mailbox (the audit record), and no later model request shows any of them: Claude's guidance
   * is to reset the context (drop the turn that triggered the refusal) before continuing.
   */
  | { kind: 'refused'; actor: string }
);

/* ------------------------------------------------------------------ session events */

export type ToolCallStatus = 'running' | 'awaiting-approval' | 'awaiting-client';

interface EventBase {
  seq: number;
  sessionId: string;
  turnId: string;
  at: string;
}

/** One union for everything a session publishes; every transport switches over it exhaustively. */
export type SessionEvent = EventBase & SessionEventBody;

export type SessionEventBody =
  | { type: 'turn.started'; actor: string; input: InboundMessage }
  /**
   * A message that joined the running turn (double-texting `interrupt`) as the turn's next model
   * call takes it in: part of this turn's conversation from here (a message that joined too late
   * becomes its own turn, with its own `turn.started`, instead).
   */
  | { type: 'message.joined'; input: InboundMessage }
  /**
   * The running turn's tool settings were replaced (`SessionHandle.updateTurnTools`: an AAP
   * re-submission's overrides): the settings from here on, and the caller's metadata, persisted as
   * a message's is (AAP keeps its session config there, so it survives a restart).
   */
  | {
      type: 'turnTools.changed';
      tools: { enabledTools?: string[]; howToEnableTools?: string; standingApprovals?: string[]; clientTools?: ClientTool[] };
      metadata?: Record<string, unknown>;
    }
  | { type: 'part.delta'; callId: string; index: number; partType?: string; text: string }
  | { type: 'part.received'; callId: string; index: number; part: Part; turnState: string; actor: string }
  /**
   * The part.delta events of respond() call `callId` are void: the call was rejected, cut by an
   * interrupt, or its response failed, and no part.received follows for it.
   */
  | { type: 'part.retracted'; callId: string; reason: 'rejected' | 'interrupted' | 'failed' }
  /** `resumedBy`: the injection kind (the held state's `resumeOn`) that resumed a held turn. */
  | { type: 'turnState.changed'; from: string; to: string; actor: string; resumedBy?: string }
  | {
      type: 'tool.called';
      callId: string;
      tool: string;
      args: unknown;
      actor: string;
      side: ToolSide;
      scope?: Scope;
      routing?: Routing;
    }
  /** `denial`: the call was denied (by a person or a policy) and never ran; the view is `denialText(reason)`. */
  | { type: 'tool.result'; callId: string; tool: string; view: unknown; isError: boolean; denial?: { reason?: string } }
  | {
      type: 'approval.requested';
      approvalId: string;
      callId: string;
      tool: string;
      args: unknown;
      actor: string;
      policyResult: PolicyResult;
    }
  | {
      type: 'approval.resolved';
      approvalId: string;
      callId: string;
      decision: ApprovalDecision;
      reason?: string;
      by: Principal;
      via: string;
    }
  | { type: 'actor.passed'; from: string; to: string }
  | { type: 'model.usage'; actor: string; usage: Usage; stopReason?: ModelStopReason }
  | { type: 'envelope.settled'; envelope: Envelope }
  | {
      type: 'turn.settled';
      finalizedBy: string;
      usage: Usage;
      /** Why the turn stopped when it did not end normally (maps onto AAP stopReason). */
      stop?: 'max_tokens' | 'refusal' | 'error' | 'interrupted';
      error?: { code: string; message: string };
      /**
       * Spec 003 compatibility mode (absent otherwise): what a voice or messaging channel
       * delivers, the last respond_to_user text of the turn, else `finalContent`.
       */
      userResponse?: string;
      /** Spec 003 compatibility mode: the final text for display (the mark_work_complete summary, else the last assistant text). */
      finalContent?: string;
    };

export type SessionEventType = SessionEventBody['type'];
export type SessionEventOf<T extends SessionEventType> = EventBase & Extract<SessionEventBody, { type: T }>;

/* ------------------------------------------------------------------ stored records */

export type MaybePromise<T> = T | Promise<T>;

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
  /** The store keeps only the latest snapshot of a session: a new one replaces the last. */
  snapshot?: PersistedSession;
  /** Messages queued in this step (kept until dequeued; applied before `dequeue`). */
  enqueue?: QueuedEntry[];
  /** Turn ids of queued messages whose turn starts in this step (unknown ids are ignored). */
  dequeue?: string[];
}

/**
 * A message accepted behind a running turn (double-texting `queue`), stored as its own record
 * from the step that accepts it until the step that starts its turn (`StepCommit.dequeue`).
 * `opts` are the send's options (SendOptions), kept as data.
 */
export interface QueuedEntry {
  turnId: string;
  /** Place in the session's queue: read back in ascending order (a message put back in front gets a lower one). */
  pos: number;
  message: InboundMessage;
  opts: Record<string, unknown>;
}

/** What the model (and an AAP client) reads when a call was denied, by a person or a policy. */
export const TOOL_CALL_DENIED = 'Tool call denied';

export function denialText(reason?: string): string {
  return reason ? `${TOOL_CALL_DENIED}: ${reason}` : TOOL_CALL_DENIED;
}

/**
 * `o[k] = v` as an own data property for every key, for code that rebuilds JSON data member by
 * member: assigned, a `__proto__` key (JSON.parse makes it an own member of parsed data) would set
 * the object's prototype and vanish from the data.
 */
export function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** Compile-time exhaustiveness for switches over unions. */
export function assertNever(x: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(x)}`);
}

/* ------------------------------------------------------------------ agent cards (A2A 1.0 names) */

/** A2A 1.0 `AgentSkill`. */
export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[] | undefined;
  inputModes?: string[] | undefined;
  outputModes?: string[] | undefined;
}

/** A2A 1.0 `AgentExtension`. */
export interface AgentExtension {
  uri: string;
  description?: string;
  required?: boolean;
  params?: Record<string, unknown>;
}

/** A2A 1.0 `AgentInterface`. */
export interface AgentInterface {
  url: string;
  protocolBinding: string;
  protocolVersion: string;
}

/**
 * An actor's card, A2A 1.0 field names. `supportedInterfaces` is left to the transport that
 * serves the card over A2A (only it knows its URL); everything else is filled in.
 */
export interface AgentCard {
  name: string;
  description: string;
  version: string;
  supportedInterfaces?: AgentInterface[];
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  iconUrl?: string;
  capabilities: { streaming?: boolean; pushNotifications?: boolean; extensions?: AgentExtension[] };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
}

