/**
 * turnstate's public surface. Every export is named here; internals stay internal. Optional
 * heavy edges are subpath exports so the core imports none of their dependencies:
 * `turnstate/anthropic`, `turnstate/loopback`, `turnstate/sqlite`, `turnstate/aap`, `turnstate/streams`.
 */

// The runtime.
export { createRuntime } from './runtime.js';
export { DEFAULT_LIMITS, sessionMachineLimits } from './limits.js';
export type { TurnstateRuntime } from './runtime.js';
export type {
  CreateSessionOptions,
  Injection,
  RecoverFailure,
  Runtime,
  RuntimeLimits,
  RuntimeOptions,
  SendOptions,
  SessionHandle,
  SessionRuntime,
  SessionSnapshot,
  TurnOutcome,
  TurnRef,
  TurnTools,
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
  EnvelopeWarning,
  ExecutionOutcome,
  ExecutionRecord,
  InboundMessage,
  Json,
  MailboxEntry,
  ModelMessage,
  ModelStopReason,
  ModelTool,
  Part,
  PartMetadata,
  PolicyResult,
  PolicySource,
  Principal,
  QueuedEntry,
  RedactedThinkingBlock,
  Routing,
  Scope,
  SessionEvent,
  SessionEventBody,
  SessionEventOf,
  SessionEventType,
  TextBlock,
  ThinkingBlock,
  ToolCallStatus,
  ToolResultBlock,
  ToolSide,
  ToolUseBlock,
  Usage,
} from './types.js';
export { assertNever } from './types.js';
export { TurnstateError, RegistrationError, ModelError, MODEL_ERROR_CODES, isModelErrorCode } from './errors.js';
export type { ModelErrorCode } from './errors.js';

// Registries.
export { createRegistries } from './create-registries.js';
export {
  PartTypeRegistry,
  TurnStateRegistry,
  ToolRegistry,
  ActorRegistry,
  SurfaceTemplateRegistry,
  A2UI_BASIC_CATALOG_ID,
  approvalKind,
  SURFACE_APPROVE_ACTION,
  SURFACE_DENY_ACTION,
  CANONICAL_PART_TYPES,
  CANONICAL_TURN_STATES,
} from './registries/index.js';
export type {
  ActorDefinition,
  ActorRegistryApi,
  ApprovalCompiler,
  CompatSetting,
  ApprovalHandler,
  ApprovalPolicy,
  ApprovalVerdict,
  BypassSpecialistToolDefinition,
  ChannelKind,
  CompiledApprovalPolicy,
  DeliveryClass,
  DeliveryRule,
  GeneralistToolDefinition,
  PartTypeDefinition,
  PartTypeMeta,
  PartTypeRegistryApi,
  PolicyContext,
  RegisteredTool,
  Registries,
  RetryPolicy,
  RoutedSpecialistToolDefinition,
  ToolContext,
  ToolArtifacts,
  ArtifactRef,
  SurfaceTemplate,
  SurfaceContext,
  SurfaceTemplateRegistryApi,
  PartCheck,
  PartCheckContext,
  ToolDefinition,
  ToolHandler,
  ToolRegistryApi,
  TurnStateDefinition,
  TurnStateMeta,
  TurnStateRegistryApi,
  Violation,
} from './registries/types.js';
export { closePolicyEvaluators, compileApprovalPolicy, DEFAULT_POLICY_LIMITS } from './approvals/policy.js';
export type { PolicyLimits } from './approvals/policy.js';

// respond().
export {
  RESPOND_TOOL_NAME,
  buildRespondTool,
  respondJsonSchema,
  createRespondParser,
  respondPromptSnippet,
  respondNotes,
  compatTools,
  createCompatTracker,
  compatOptions,
  COMPAT_COMPLETION_NUDGE,
} from './respond/index.js';
export type {
  RespondCall,
  RespondContext,
  RespondEvent,
  RespondResult,
  PartDelta,
  RespondParser,
  RespondParserOptions,
  RespondPromptOptions,
  CompatTracker,
  CompatOptions,
  RespondNote,
} from './respond/index.js';
export { createRespondStreamParser } from './respond/stream.js';
export type { RespondStreamParser, RespondStreamParserOptions } from './respond/stream.js';

// Machines (pure; drawable in Stately).
export { createSessionMachine } from './machines/session.machine.js';
export type { SessionMachine, SessionContext, SessionMachineEvent } from './machines/session.machine.js';
export { createActorMachine } from './machines/actor.machine.js';
export { deriveHistory } from './machines/mailbox.js';

// Ports (what an embedder plugs in) and the records a store keeps.
export type { ModelEvent, ModelPort, ModelRequest, SessionStore, SessionStoreReader, ArtifactStore, ArtifactRecord, ArtifactPut, ArtifactBody } from './api.js';
export type { MaybePromise, PersistedSession, SessionRecord, StepCommit } from './types.js';

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
  DispatchContext,
  EventRouterOptions,
  ExecutionSink,
  FilterAndDistributeOptions,
  OverflowPolicy,
  ToolDispatch,
  RoutedCall,
  RoutedEvent,
  RoutedResult,
  RouteOptions,
  ObserveFilter,
  SessionStreams,
} from './router/index.js';

// Envelope.
export { assembleEnvelope, mergeDomainData } from './envelope/assemble.js';
export type { ApprovalOutcome, AssembleInput, DomainData, DomainDataConflict, DomainDataSource } from './envelope/assemble.js';
export { createDelivery } from './envelope/delivery.js';
export type { Delivery, PartDelivery, BufferedView, SettledTurn, ApprovalAnswer, Flush, TranscriptClass } from './envelope/delivery.js';
export { renderForChannel } from './envelope/channels.js';
export type { ChannelMessage, ChannelAttachment, ChannelOptions, ArtifactAttachment } from './envelope/channels.js';
export { renderPartText } from './envelope/render.js';
export type { RenderOptions } from './envelope/render.js';
export { createArtifactLinks } from './envelope/artifact-links.js';
export type { ArtifactLinks, ArtifactLinksOptions, ArtifactLinkCheck } from './envelope/artifact-links.js';
export { deliveryTable } from './envelope/delivery-table.js';
export type { ReasoningTraces } from './envelope/reasoning.js';
export { produceLlmContext } from './envelope/llm-context.js';
export type { LlmContextInput, LlmContextResult } from './envelope/llm-context.js';
export { agentCard, partTypesOf, PARTS_EXTENSION_URI } from './envelope/agent-card.js';
export type { AgentCard, AgentCardOverrides, AgentExtension, AgentInterface, AgentSkill } from './envelope/agent-card.js';
export { checkA2uiMessages, checkSurfaceData, A2UI_MIME_TYPE } from './envelope/a2ui.js';
export type { A2uiProblem } from './envelope/a2ui.js';
export { buildSurfaces, SurfaceTemplateError } from './envelope/surfaces.js';
export type { SurfaceSource } from './envelope/surfaces.js';

// Replay and diff (the evals substrate).
export { replaySession, replayWithScript, diffSessions, extractPath, formatPath, formatDiff } from './replay/index.js';
export type { ReplayOptions, ReplayResult, ReplayReasoningTraces, SessionPath, TurnPath, PathStep, PathDiff, Divergence, DivergenceField } from './replay/index.js';
export type { UnmatchedCall } from './replay/results.js';

// Models and stores that need no optional dependency.
export { createScriptedModel } from './models/scripted.js';
export type { ScriptedModel, ScriptedModelOptions } from './models/scripted.js';
export type { ModelScript, ScriptRule, ScriptMatch, ScriptResponse, ScriptBlock } from './models/script.js';
export { createMemoryStore } from './stores/memory.js';
export type { StoreErrorCode, SyncSessionStore } from './stores/contract.js';
export { createMemoryArtifactStore } from './stores/artifacts-memory.js';
export { createFileArtifactStore } from './stores/artifacts-fs.js';
export type { ArtifactStoreOptions } from './stores/artifact-common.js';

// Transport contracts, and the node:http server that composes transports (as `turnstate serve` does).
export type { Authenticate, AuthResult, HttpTransport } from './transports/types.js';
export { startServer, healthTransport } from './transports/server.js';
export type { RunningServer, StartServerOptions } from './transports/server.js';
export { createArtifactsTransport } from './transports/artifacts.js';
export type { ArtifactsTransportOptions } from './transports/artifacts.js';
