/** The router: routed tool dispatch, observers, filter-and-distribute, annotated records, execution log. */
export { EventRouter } from './router.js';
export type { DispatchContext } from './dispatch-context.js';
export type { EventRouterOptions, ObserveFilter, RoutedCall, RoutedEvent, RoutedResult, RouteOptions, SessionStreams, ToolDispatch } from './router.js';
export { filterAndDistribute } from './distribute-operator.js';
export { deliverBounded, DEFAULT_BUFFER_SIZE } from './bounded-delivery.js';
export type { BoundedDeliveryOptions, DeliveryOutcome, OverflowPolicy } from './bounded-delivery.js';
export { annotate, isAnnotatedRecord, audienceIncludes, ANNOTATED_RECORD } from './annotated.js';
export type { AnnotatedRecord, AnnotationSpec, Audience, CanonicalDestination, DestinationId, JsonPointer } from './annotated.js';
export { FilterAndDistribute, filterView, BUILT_IN_DESTINATIONS } from './filter-distribute.js';
export type { Destination, DestinationStats, DistributedView, DistributionMeta, Distribution, FilterAndDistributeOptions } from './filter-distribute.js';
export {
  buildExecutionRecord,
  truncateResult,
  truncateJson,
  toJsonText,
  MemoryExecutionLog,
  DEFAULT_RESULT_MAX_CHARS,
} from './execution-log.js';
export type { ExecutionSink, ExecutionInput } from './execution-log.js';
