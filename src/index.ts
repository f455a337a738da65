/**
 * turnstate's public surface. Every export is named here; internals stay internal. Optional
 * heavy edges are subpath exports so the core imports none of their dependencies:
 * `turnstate/anthropic`, `turnstate/loopback`, `turnstate/sqlite`, `turnstate/aap`, `turnstate/streams`.
 */

// The runtime.
export { createRuntime, DEFAULT_LIMITS } from './runtime.js';
export type { TurnstateRuntime } from './runtime.js';
export type {
  CreateSessionOptions,
  Injection,
  Runtime,
  RuntimeLimits,
  RuntimeOptions,
  SendOptions,
  SessionHandle,
  SessionSnapshot,
  TurnOutcome,
  TurnRef,
} from './api.js';

// Vocabulary.
export type {
  AnswerResult,
  ApprovalDecision,
  ApprovalRecord,
  ApprovalResolution,
  ClientTool,
  ContentBlock,
  DoubleTextingPolicy,
  Envelope,
  EnvelopeMeta,
  ExecutionOutcome,
  ExecutionRecord,
  InboundMessage,
  MailboxEntry,
  ModelMessage,
  ModelStopReason,
  ModelTool,
  Part,
  PartMetadata,
  PolicyResult,
  Principal,
  Routing,
  Scope,
  SessionEvent,
  SessionEventBody,
  SessionEventOf,
  SessionEventType,
  ToolSide,
  Usage,
} from './types.js';
export { assertNever } from './types.js';
export { TurnstateError, RegistrationError, ModelError } from './errors.js';
export type { ModelErrorCode } from './errors.js';

// Registries.
export {
  createRegistries,
  PartTypeRegistry,
  TurnStateRegistry,
  ToolRegistry,
  ActorRegistry,
  CANONICAL_PART_TYPES,
  CANONICAL_TURN_STATES,
} from './registries/index.js';
export type {
  ActorDefinition,
  ApprovalHandler,
  ApprovalPolicy,
  ApprovalVerdict,
  ChannelKind,
  DeliveryClass,
  DeliveryRule,
  PartTypeDefinition,
  PartTypeMeta,
  PolicyContext,
  RegisteredTool,
  Registries,
  RetryPolicy,
  ToolContext,
  ToolDefinition,
  ToolHandler,
  TurnStateDefinition,
  TurnStateMeta,
  Violation,
} from './registries/types.js';
export { compileApprovalPolicy, DEFAULT_POLICY_LIMITS } from './approvals/policy.js';
export type { PolicyLimits } from './approvals/policy.js';

// respond().
export {
  RESPOND_TOOL_NAME,
  buildRespondTool,
  respondJsonSchema,
  createRespondParser,
  respondPromptSnippet,
  compatTools,
  createCompatTracker,
} from './respond/index.js';
export type { RespondCall, RespondContext, RespondEvent, RespondResult, PartDelta, RespondParser, CompatTracker } from './respond/index.js';
export { createRespondStreamParser } from './respond/stream.js';

// Machines (pure; drawable in Stately).
export { createSessionMachine } from './machines/session.machine.js';
export type { SessionMachine, SessionContext, SessionMachineEvent } from './machines/session.machine.js';
export { createActorMachine } from './machines/actor.machine.js';
export { deriveHistory } from './machines/mailbox.js';
export type {
  MaybePromise,
  ModelEvent,
  ModelPort,
  ModelRequest,
  PersistedSession,
  SessionRecord,
  SessionStore,
  StepCommit,
} from './machines/ports.js';

// Router.
export { EventRouter, annotate, isAnnotatedRecord, FilterAndDistribute, filterAndDistribute, deliverBounded, MemoryExecutionLog } from './router/index.js';
export type {
  AnnotatedRecord,
  AnnotationSpec,
  BoundedDeliveryOptions,
  DeliveryOutcome,
  Destination,
  DestinationStats,
  DistributedView,
  DistributionMeta,
  ExecutionSink,
  OverflowPolicy,
  ToolDispatch,
  RoutedCall,
  RoutedEvent,
  RoutedResult,
  ObserveFilter,
  SessionStreams,
} from './router/index.js';

// Envelope.
export { assembleEnvelope } from './envelope/assemble.js';
export { produceLlmContext } from './envelope/llm-context.js';

// Replay and diff (the evals substrate).
export { replaySession, replayWithScript, diffSessions, extractPath, formatPath, formatDiff } from './replay/index.js';
export type { ReplayOptions, ReplayResult, SessionPath, TurnPath, PathStep, PathDiff, Divergence } from './replay/index.js';

// Models and stores that need no optional dependency.
export { createScriptedModel } from './models/scripted.js';
export type { ScriptedModel } from './models/scripted.js';
export type { ModelScript, ScriptRule, ScriptMatch, ScriptResponse, ScriptBlock } from './models/script.js';
export { createMemoryStore } from './stores/memory.js';

// Transport contracts.
export type { Authenticate, AuthResult, HttpTransport } from './transports/types.js';
