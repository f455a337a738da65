/**
 * The public type surface, as a consumer imports it: every type a public signature names is
 * importable by name from the entry point that exports the function, the tool's argument type
 * reaches its approval handler, and the subpath entries export no internals. Type-level only:
 * checked by `npm run typecheck` (and vitest's build:typecheck), never run. 'turnstate' and its
 * subpaths resolve through package.json `exports` (the `turnstate-source` condition: src/).
 */
import * as anthropic from 'turnstate/anthropic';
import * as loopback from 'turnstate/loopback';
import type { AnthropicModelOptions, ModelRetryPolicy } from 'turnstate/anthropic';
import type { MessageBuilder, MessageBuilderOptions, PartClass, ProjectorOptions } from 'turnstate/aap';
import type { FrameResult, parseClientFrame } from 'turnstate/streams';
import type {
  // The ContentBlock members, the queue and the store's error codes.
  ContentBlock,
  TextBlock,
  ToolUseBlock,
  ToolResultBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  QueuedEntry,
  StoreErrorCode,
  SessionStore,
  StepCommit,
  MaybePromise,
  // Types named by public signatures.
  TurnTools,
  SessionHandle,
  SyncSessionStore,
  ScriptedModelOptions,
  ToolRegistryApi,
  PartTypeRegistryApi,
  TurnStateRegistryApi,
  ActorRegistryApi,
  Registries,
  GeneralistToolDefinition,
  RoutedSpecialistToolDefinition,
  BypassSpecialistToolDefinition,
  ToolDefinition,
  CompiledApprovalPolicy,
  RegisteredTool,
  PartCheckContext,
  PartCheck,
  RespondParserOptions,
  RespondStreamParser,
  RespondStreamParserOptions,
  RespondPromptOptions,
  EventRouterOptions,
  RouteOptions,
  FilterAndDistributeOptions,
  LlmContextInput,
  LlmContextResult,
  AssembleInput,
  UnmatchedCall,
  ReplayResult,
  DivergenceField,
  Divergence,
  Json,
  ToolCallStatus,
  // Approvals.
  ApprovalHandler,
  ApprovalPolicy,
  ApprovalVerdict,
  PolicyResult,
  PolicySource,
  RetryPolicy,
  Runtime,
} from 'turnstate';
import type {
  assembleEnvelope,
  createMemoryStore,
  createRespondParser,
  createRespondStreamParser,
  createScriptedModel,
  EventRouter,
  FilterAndDistribute,
  produceLlmContext,
  respondPromptSnippet,
} from 'turnstate';

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
/** true when module namespace `M` exports none of `K`. */
type Absent<M, K extends string> = [Extract<K, keyof M>] extends [never] ? true : false;

export type Checks = [
  // ContentBlock is exactly its five exported members.
  Expect<Equal<ContentBlock, TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock>>,
  // The store port's queue types.
  Expect<Equal<ReturnType<SessionStore['readQueue']>, MaybePromise<QueuedEntry[]>>>,
  Expect<Equal<StepCommit['enqueue'], QueuedEntry[] | undefined>>,
  Expect<Equal<Extract<StoreErrorCode, 'store.session_not_found'>, 'store.session_not_found'>>,
  // The types a public function or member names are the exported ones.
  Expect<Equal<Parameters<SessionHandle['updateTurnTools']>[1], TurnTools>>,
  Expect<Equal<ReturnType<typeof createMemoryStore>, SyncSessionStore>>,
  Expect<Equal<Parameters<typeof createScriptedModel>[1], ScriptedModelOptions | undefined>>,
  Expect<Equal<Registries['tools'], ToolRegistryApi>>,
  Expect<Equal<Registries['partTypes'], PartTypeRegistryApi>>,
  Expect<Equal<Registries['turnStates'], TurnStateRegistryApi>>,
  Expect<Equal<Registries['actors'], ActorRegistryApi>>,
  Expect<Equal<ToolDefinition<{ a: 1 }, 2>, GeneralistToolDefinition<{ a: 1 }, 2> | RoutedSpecialistToolDefinition<{ a: 1 }, 2> | BypassSpecialistToolDefinition<{ a: 1 }, 2>>>,
  Expect<Equal<RegisteredTool['approval'], CompiledApprovalPolicy>>,
  Expect<Equal<Parameters<PartCheck['check']>[1], PartCheckContext>>,
  Expect<Equal<Parameters<typeof createRespondParser>[1], RespondParserOptions | undefined>>,
  Expect<Equal<ReturnType<typeof createRespondStreamParser>, RespondStreamParser>>,
  Expect<Equal<Parameters<typeof createRespondStreamParser>[1], RespondStreamParserOptions | undefined>>,
  Expect<Equal<Parameters<typeof respondPromptSnippet>[1], RespondPromptOptions | undefined>>,
  Expect<Equal<ConstructorParameters<typeof EventRouter>[0], EventRouterOptions | undefined>>,
  Expect<Equal<Parameters<EventRouter['routeEvent']>[3], RouteOptions>>,
  Expect<Equal<ConstructorParameters<typeof FilterAndDistribute>[0], FilterAndDistributeOptions | undefined>>,
  Expect<Equal<Parameters<typeof produceLlmContext>[1], LlmContextInput>>,
  Expect<Equal<Awaited<ReturnType<typeof produceLlmContext>>, LlmContextResult>>,
  Expect<Equal<Parameters<typeof assembleEnvelope>[0], AssembleInput>>,
  Expect<Equal<ReplayResult['unmatchedCalls'], UnmatchedCall[]>>,
  Expect<Equal<Divergence['field'], DivergenceField>>,
  Expect<Equal<Extract<Json, string>, string>>,
  Expect<Equal<Extract<ToolCallStatus, 'running'>, 'running'>>,
  // turnstate/aap.
  Expect<Equal<ReturnType<ProjectorOptions['classify']>, PartClass>>,
  Expect<Equal<ConstructorParameters<typeof MessageBuilder>[0], MessageBuilderOptions>>,
  // turnstate/streams.
  Expect<Equal<ReturnType<typeof parseClientFrame>, FrameResult>>,
  // The model retry policy has its own name, distinct from the tool RetryPolicy.
  Expect<Equal<AnthropicModelOptions['retry'], Partial<ModelRetryPolicy> | undefined>>,
  Expect<Equal<Equal<ModelRetryPolicy, RetryPolicy>, false>>,
  Expect<Absent<typeof anthropic, 'RetryPolicy'>>,
  // PolicyResult.source is the closed set the runtime emits.
  Expect<Equal<PolicyResult['source'], PolicySource>>,
  Expect<Equal<Extract<PolicySource, 'none' | 'policy-error' | 'standing'>, 'none' | 'policy-error' | 'standing'>>,
  Expect<Equal<string extends PolicyResult['source'] ? true : false, false>>,
  // The subpath entries export no internals.
  Expect<Absent<typeof anthropic, 'Attempt' | 'toModelError' | 'StreamAccumulator' | 'buildRequest' | 'buildTools' | 'normaliseHistory'>>,
  Expect<Absent<typeof loopback, 'buildFrames' | 'splitter'>>,
];

/* ------------------------------------------------------------------ approval handlers are typed by the tool */

interface Refund {
  orderId: string;
  amount: number;
}

export function registerRefund(runtime: Runtime): RegisteredTool {
  return runtime.registries.tools.register<Refund, { ok: boolean }>({
    name: 'refund',
    description: 'Refund an order',
    scope: 'generalist',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' }, amount: { type: 'number' } }, required: ['orderId', 'amount'] },
    handler: async (args) => ({ ok: args.amount > 0 }),
    // The runtime calls it with the validated input: the handler's argument type.
    requiresApproval: (args) => ({ decision: args.amount > 100 ? 'ask' : 'approve' }),
  });
}

export function registerOneTypeArgument(runtime: Runtime): RegisteredTool {
  return runtime.registries.tools.register<Refund>({
    name: 'refund3',
    description: 'Refund an order',
    scope: 'generalist',
    inputSchema: { type: 'object' },
    handler: (args) => args.orderId,
    requiresApproval: (args) => ({ decision: args.amount > 100 ? 'ask' : 'approve', reason: args.orderId }),
  });
}

export function wrongField(runtime: Runtime): RegisteredTool {
  return runtime.registries.tools.register<Refund, { ok: boolean }>({
    name: 'refund2',
    description: 'Refund an order',
    scope: 'generalist',
    inputSchema: { type: 'object' },
    handler: () => ({ ok: true }),
    // @ts-expect-error Refund has no `total`: the handler's args are not `any`.
    requiresApproval: (args) => ({ decision: args.total > 100 ? 'ask' : 'approve' }),
  });
}

export const typed: ApprovalHandler<Refund> = (args, ctx) => ({ decision: args.amount > 100 && ctx.user.tier !== 'trusted' ? 'ask' : 'approve' });
export const policy: ApprovalPolicy<Refund> = typed;
export const asDefinition: ToolDefinition<Refund>['requiresApproval'] = typed;
// Without a type argument a handler's args are unknown.
export const untyped: ApprovalHandler = (args): ApprovalVerdict => {
  // @ts-expect-error args is unknown
  const n: number = args.amount;
  return { decision: n > 1 ? 'ask' : 'approve' };
};
export const untypedIsDefault: Expect<Equal<ApprovalHandler, ApprovalHandler<unknown>>> = true;
export const retry: Partial<ModelRetryPolicy> = { retries: 5, baseDelayMs: 200 };
export const model = anthropic.createAnthropicModel({ retry, apiKey: 'sk-test' });
