/**
 * Registry contracts. Every registry belongs to one runtime instance (never a module global).
 * Implementations: part-types.ts, turn-states.ts, tools.ts, actors.ts; `createRegistries()` in index.ts.
 */
import type { AgentSkill, ApprovalDecision, PolicyResult, Principal, Routing, Scope } from '../types.js';
export type { AgentSkill } from '../types.js';

/* ------------------------------------------------------------------ part types */

/** What a delivery class or channel does with a part. */
export type DeliveryRule = 'deliver' | 'drop' | 'attach' | 'render-as-text';
export type DeliveryClass = 'streaming' | 'buffered';
/** Channel kinds spec 001 names a rule for. */
export type ChannelKind = 'email' | 'sms' | 'whatsapp' | 'webhook';

export interface PartTypeMeta {
  description: string;
  /** Flushed at once to streaming transports (ack, thinking, progress). */
  streamingPreferred: boolean;
  /** Carries data that is assembled into the envelope. */
  dataBearing: boolean;
  /** Per delivery class. */
  delivery: Record<DeliveryClass, DeliveryRule>;
  /** Per channel kind, where spec 001 names one; falls back to `delivery.buffered`. */
  channels?: { [K in ChannelKind]?: DeliveryRule | undefined } | undefined;
  /** Whether the part belongs to the settled envelope. */
  inEnvelope: boolean;
  /** Whether a model may emit it through respond() (approval-request/-response: never). */
  modelEmittable: boolean;
  /** 'text' parts carry `text`, 'data' parts carry `data`, 'either' accepts one of them. */
  carries: 'text' | 'data' | 'either';
  serialisation?: 'json' | 'text' | 'base64' | undefined;
  /**
   * How a text-only conversational transport (AAP, a chat transcript) shows the part: as the
   * agent's text, as its thinking, or (absent) not at all. Without it, a part whose streaming
   * rule is `render-as-text` is shown as text.
   */
  transcript?: 'text' | 'thinking' | undefined;
}

export interface PartTypeDefinition {
  id: string;
  isCanonical: boolean;
  meta: PartTypeMeta;
}

/** The reads every registry answers (registry.ts implements them once). */
export interface RegistryReader<T> {
  get(key: string): T | undefined;
  has(key: string): boolean;
  /** Every entry in registration order; the same frozen array until the next registration. */
  list(): readonly T[];
  /** Every key in registration order; the same frozen array until the next registration. */
  ids(): readonly string[];
}

export interface PartTypeRegistryApi extends RegistryReader<PartTypeDefinition> {
  /** Consumer registration. Duplicate ids and canonical ids are errors naming the id. */
  register(def: { id: string; meta: PartTypeMeta }): PartTypeDefinition;
  /** The rule for a part type on a delivery class, or on a channel kind (falling back to buffered). */
  deliveryFor(id: string, target: DeliveryClass | ChannelKind): DeliveryRule;
}

/* ------------------------------------------------------------------ turn states */

export interface TurnStateMeta {
  description: string;
  /** The turn ends here (complete, clarifying, error). */
  isTerminal: boolean;
  /** Entering it settles an envelope (complete). */
  emitsEnvelope: boolean;
  /** The turn stays open with the actor held until an injection resumes it (suspended, delegated). */
  holdsActor: boolean;
  /** Hands the turn to another actor (passed). */
  handsOff?: boolean | undefined;
  /** The injection kind that resumes a held state, e.g. 'approval-response', 'peer-envelope'. */
  resumeOn?: string | undefined;
  requires?: {
    /** `passTo` must be present (passed). */
    passTo?: boolean | undefined;
    /** At least one part of each listed type must be present (clarifying: clarify). */
    partTypes?: string[] | undefined;
    /** None of these part types may be present (clarifying: response). */
    forbidsPartTypes?: string[] | undefined;
  } | undefined;
}

export interface TurnStateDefinition {
  id: string;
  isCanonical: boolean;
  meta: TurnStateMeta;
}

export interface TurnStateRegistryApi extends RegistryReader<TurnStateDefinition> {
  /**
   * Consumer registration. A valid name (not `idle`, `turn`, or another reserved machine node),
   * and it must be terminal, or hold the actor with a named `resumeOn`, or hand off.
   */
  register(def: { id: string; meta: TurnStateMeta }): TurnStateDefinition;
}

/* ------------------------------------------------------------------ tools */

/** What a tool handler receives besides its arguments (spec 002 "The context argument"). */
export interface ToolContext {
  actorName: string;
  sessionId: string;
  turnId: string;
  callId: string;
  userId?: string;
  personId?: string;
  tenantId?: string;
  /** Populated for calls resumed after approval. */
  approvalDecision?: { approvalId: string; decision: ApprovalDecision; by: Principal; via: string; reason?: string };
  /**
   * Aborts when the call should stop: the turn is interrupted, the session is deleted, the
   * runtime closes, or the attempt passes the tool's `timeoutMs` (reason: a `TimeoutError`).
   */
  signal: AbortSignal;
  /** Stores artifacts of this session (present when the runtime has an artifact store, which it has by default). */
  artifacts?: ToolArtifacts;
}

export type ToolHandler<A = any, R = unknown> = (args: A, ctx: ToolContext) => R | Promise<R>;

/** Context an approval policy sees (pinned: nothing else is reachable). */
export interface PolicyContext {
  actor: string;
  session: { id: string; tenantId?: string };
  turn: { id: string };
  user: Record<string, unknown>;
  tenant: { id?: string };
}

export type ApprovalVerdict = { decision: 'approve' | 'deny' | 'ask'; reason?: string | undefined };
/**
 * An approval policy as a function. `A` is the tool's argument type: the runtime calls it only
 * with arguments its `inputSchema` accepted (a copy of them), the same the handler would get.
 */
export type ApprovalHandler<A = unknown> = (args: A, ctx: PolicyContext) => ApprovalVerdict | Promise<ApprovalVerdict>;
/** A tool's `requiresApproval`: `A` is the tool's argument type, which a handler policy receives. */
export type ApprovalPolicy<A = unknown> = boolean | { autoApproveIf: string; allowStandingApproval?: boolean | undefined } | ApprovalHandler<A>;

interface ToolDefinitionCommon<A = any, R = unknown> {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown> | undefined;
  handler: ToolHandler<A, R>;
  /** Called, when a function, with the validated arguments (`A`), as the handler is. */
  requiresApproval?: ApprovalPolicy<A> | undefined;
  /** Whether a standing approval (AAP `trust: true`) may pre-approve this tool. Default true. */
  allowStandingApproval?: boolean | undefined;
  tags?: string[] | undefined;
  /**
   * Milliseconds a routed call may run. At the deadline the handler's `ctx.signal` aborts and the
   * model gets an `isError` result saying the call timed out. Routed tools only.
   */
  timeoutMs?: number | undefined;
}

/** How a failed call of an idempotent routed tool is tried again. */
export interface RetryPolicy {
  /** Attempts in all, the first included: 2 to 10. */
  attempts: number;
  /** Wait before the second attempt (default 0); each later wait is `backoffFactor` times longer. */
  backoffMs?: number | undefined;
  /** Default 2; 1 waits `backoffMs` every time. */
  backoffFactor?: number | undefined;
}

/**
 * `retry` needs `idempotent: true`: only a tool that may safely run twice for one call is ever
 * run again. A failed (thrown or rejected) or timed-out attempt is retried; a cancelled one never.
 */
type Idempotency =
  | { idempotent: true; retry?: RetryPolicy | undefined }
  | { idempotent?: false | undefined; retry?: undefined };

export type GeneralistToolDefinition<A = any, R = unknown> = ToolDefinitionCommon<A, R> & Idempotency & {
  scope: 'generalist';
  routing?: 'routed' | undefined;
  peerExposed?: boolean | undefined;
  /** Optional on a generalist tool (required on a specialist): kept as given, trimmed. */
  justification?: string | undefined;
};
export type RoutedSpecialistToolDefinition<A = any, R = unknown> = ToolDefinitionCommon<A, R> & Idempotency & {
  scope: 'specialist';
  routing?: 'routed' | undefined;
  justification: string;
};
export type BypassSpecialistToolDefinition<A = any, R = unknown> = ToolDefinitionCommon<A, R> & {
  scope: 'specialist';
  /** Bypass calls run inline, outside the router: no timeout, no retry (rejected at registration). */
  idempotent?: boolean | undefined;
  timeoutMs?: undefined;
  retry?: undefined;
  routing: 'bypass';
  bypassRouting: { reason: string };
  justification: string;
};
export type ToolDefinition<A = any, R = unknown> =
  | GeneralistToolDefinition<A, R>
  | RoutedSpecialistToolDefinition<A, R>
  | BypassSpecialistToolDefinition<A, R>;

/** A problem found by schema or semantic validation, with its JSON path. */
export interface Violation {
  /** JSON Pointer-ish path such as `/parts/0/metadata/partType` ('' for the root). */
  path: string;
  /** The rule id, e.g. `respond:passTo:requires-passed` or `schema:required`. */
  rule: string;
  message: string;
}

/**
 * Compiles a tool's `requiresApproval` at registration (approvals/ provides it; the tool registry
 * is given one). Throws a RegistrationError naming the tool when the policy is malformed.
 */
export type ApprovalCompiler = (
  toolName: string,
  requiresApproval: ApprovalPolicy | undefined,
  allowStandingApproval?: boolean,
) => CompiledApprovalPolicy;

/** The compiled approval policy of a registered tool. */
export interface CompiledApprovalPolicy {
  kind: 'none' | 'always' | 'cel' | 'handler';
  /** The CEL source, for `kind: 'cel'`. */
  expression?: string;
  allowStandingApproval: boolean;
  /** Evaluate (never throws; a failing expression yields `ask` with source 'cel-error'). */
  evaluate(args: unknown, ctx: PolicyContext): PolicyResult | Promise<PolicyResult>;
}

export interface RegisteredTool {
  readonly name: string;
  readonly description: string;
  readonly scope: Scope;
  readonly routing: Routing;
  readonly bypassReason: string | undefined;
  readonly justification: string | undefined;
  readonly peerExposed: boolean;
  readonly tags: readonly string[];
  readonly idempotent: boolean;
  readonly timeoutMs: number | undefined;
  /** Present only on idempotent routed tools; `backoffMs` and `backoffFactor` filled in. */
  readonly retry: Readonly<{ attempts: number; backoffMs: number; backoffFactor: number }> | undefined;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema: Record<string, unknown> | undefined;
  readonly handler: ToolHandler;
  readonly approval: CompiledApprovalPolicy;
  /** ajv-compiled once at registration; returns [] when valid. */
  validateInput(args: unknown): Violation[];
  validateOutput(result: unknown): Violation[];
}

export interface ToolRegistryApi extends RegistryReader<RegisteredTool> {
  /**
   * Validates the definition; each error names the broken rule and how to fix it. `A` types the
   * arguments the handler and a handler approval policy receive (both only after validation).
   */
  register<A, R = unknown>(def: ToolDefinition<A, R>): RegisteredTool;
  /** Resolve an actor's tool names; one error lists every unknown name. */
  resolve(names: readonly string[], forActor?: string): RegisteredTool[];
}

/* ------------------------------------------------------------------ actors */

export interface ActorDefinition {
  name: string;
  description?: string | undefined;
  /** The actor's own instructions; the respond() snippet is appended by the runtime. */
  system?: string | undefined;
  /** Model id for this actor (the model port decides what it means). */
  model?: string | undefined;
  maxTokens?: number | undefined;
  /** Extended thinking: forces `tool_choice: auto` and the runtime's nudge. */
  thinking?: { budgetTokens: number } | undefined;
  /** Tool names resolved against the ToolRegistry. */
  tools?: string[] | undefined;
  /** Actors this one may hand off to with passTo. */
  handoffs?: string[] | undefined;
  /**
   * Spec 003 compatibility: the actor speaks respond_to_user / mark_work_complete instead of
   * respond(). `'respond_to_user'` is `{ mode: 'respond_to_user' }`: only the last
   * respond_to_user text is delivered, at completion; `deliverDrafts: true` delivers each one as it is made.
   */
  compat?: 'respond_to_user' | CompatSetting | undefined;
  /** Overrides of the actor's Agent Card (`runtime.agentCard(name)`); unset fields are derived. */
  card?: AgentCardOverrides | undefined;
  /**
   * Bounds of what this actor may spend in one turn (defaults from the runtime): counted from the
   * turn's start, or from the hand-off that passed the turn to it.
   */
  maxModelCalls?: number | undefined;
  maxRespondRetries?: number | undefined;
}

/** What an actor registration may set on its card (ActorDefinition `card`); each replaces the derived value. */
export interface AgentCardOverrides {
  description?: string | undefined;
  version?: string | undefined;
  skills?: AgentSkill[] | undefined;
  /** Part types the actor's envelopes carry (default: derived from its respond() mode, tools and hand-offs). */
  produces?: string[] | undefined;
  /** Part types the actor wants from peers it calls (default: ['llm-context']: it is an LLM). */
  consumes?: string[] | undefined;
  defaultInputModes?: string[] | undefined;
  defaultOutputModes?: string[] | undefined;
  provider?: { organization: string; url: string } | undefined;
  documentationUrl?: string | undefined;
  iconUrl?: string | undefined;
}

/** The compatibility mode with its options (ActorDefinition `compat`). */
export interface CompatSetting {
  mode: 'respond_to_user';
  /** Deliver every respond_to_user call mid-turn (default false: the last one, at completion). */
  deliverDrafts?: boolean | undefined;
}

export interface ActorRegistryApi extends RegistryReader<ActorDefinition> {
  register(def: ActorDefinition): ActorDefinition;
}

/* ------------------------------------------------------------------ part content checks */

/** Who emitted a part: what a part check may scope by. */
export interface PartCheckContext {
  actor: string;
  sessionId?: string;
  tenantId?: string;
  /**
   * The session's live A2UI surfaces when the part is checked (docs/concepts/surfaces.md,
   * surfaces:live): a part may update one without creating it, and may not create one again
   * without deleting it first. Absent: none are live (a template's surface, a check outside a session).
   */
  surfaces?: LiveSurfaceView | undefined;
}

/**
 * The A2UI surfaces a session's published parts created and did not delete since, as a client
 * holding the whole conversation has them (envelope/live-surfaces.ts keeps them).
 */
export interface LiveSurfaceView {
  has(surfaceId: string): boolean;
  /** The live surface ids, in the order they were created. */
  ids(): string[];
  /**
   * A2UI messages that rebuild the surface as a client holds it now (its createSurface, then its
   * components and data model, when it has any), a fresh copy; undefined when it is not live.
   */
  rebuild(surfaceId: string): unknown[] | undefined;
}

/**
 * A content check for the data of one part type (e.g. A2UI validity of an `a2ui-surface`, a
 * known artifact for an `artifact`), run by the respond() parser. Synchronous and side-effect
 * free; each problem's `path` is a JSON Pointer into the part's data. Runs only on parts that
 * are otherwise well formed.
 */
export interface PartCheck {
  /** The violation's rule id, e.g. `respond:a2ui-surface:valid`. */
  rule: string;
  check(data: unknown, ctx: PartCheckContext): readonly { path: string; message: string }[];
  /**
   * The data in the one form consumers read, for data `check` accepts in another form too (an
   * `a2ui-surface` holding one A2UI message becomes `{ messages: [message] }`); `undefined` when it
   * is already in that form. Runs only on parts of an accepted call; pure: the delivered part is a
   * copy, the model's own call stays as it was written.
   */
  normalize?(data: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined;
}

/* ------------------------------------------------------------------ surface templates */

/** What a surface template is told besides the data (see docs/concepts/surfaces.md). */
export interface SurfaceContext {
  /** The surface id to create: unique per session and data record. */
  surfaceId: string;
  /** The A2UI basic catalog id to put in createSurface. */
  catalogId: string;
  /** The data kind the template was chosen for. */
  kind: string;
  sessionId: string;
  turnId: string;
  /** The tool call whose result (or whose pending approval) the data comes from. */
  callId: string;
}

/**
 * Turns one data kind's domain data into A2UI v0.9 server-to-client messages (an array of
 * objects, each with `version` and exactly one of createSurface / updateComponents /
 * updateDataModel / deleteSurface). Must be pure and synchronous; what it returns is validated
 * before anything is published.
 */
export interface SurfaceTemplate {
  /** The data kind: an AnnotatedRecord's `kind`, or `approval:<tool>` for a pending approval. */
  kind: string;
  description?: string | undefined;
  build(data: unknown, ctx: SurfaceContext): readonly unknown[];
}

export interface SurfaceTemplateRegistryApi extends RegistryReader<SurfaceTemplate> {
  /** Throws a RegistrationError on a bad kind, a missing build function, an unknown field or a duplicate kind. */
  register(template: SurfaceTemplate): SurfaceTemplate;
}

/* ------------------------------------------------------------------ artifacts (handler side) */

/** What a tool handler gets back from `ctx.artifacts.put`: what an `artifact` part carries. */
export interface ArtifactRef {
  artifactId: string;
  mimeType: string;
  sizeBytes: number;
  name?: string;
}

/** The artifact writer a tool handler sees (`ctx.artifacts`), scoped to its session and tenant. */
export interface ToolArtifacts {
  /** Stores the bytes (a string is stored as UTF-8) and returns the reference to put in an `artifact` part. */
  put(input: { mimeType: string; data: Uint8Array | string; name?: string | undefined }): Promise<ArtifactRef>;
}

/** The registries of one runtime instance. */
export interface Registries {
  partTypes: PartTypeRegistryApi;
  turnStates: TurnStateRegistryApi;
  tools: ToolRegistryApi;
  actors: ActorRegistryApi;
  surfaceTemplates: SurfaceTemplateRegistryApi;
}
