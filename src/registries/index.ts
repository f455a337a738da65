/**
 * The registries' classes and constants. `createRegistries()` (src/create-registries.ts) builds
 * the registries of one runtime, with approvals/ as the tool registry's policy compiler.
 */
export { ActorRegistry, ACTOR_NAME } from './actors.js';
export {
  PartTypeRegistry,
  CANONICAL_PART_TYPES,
  CHANNEL_KINDS,
  DELIVERY_CLASSES,
  DELIVERY_RULES,
  PART_TYPE_ID,
  validatePartTypeMeta,
} from './part-types.js';
export { SurfaceTemplateRegistry, A2UI_BASIC_CATALOG_ID, DATA_KIND, SURFACE_APPROVE_ACTION, SURFACE_DENY_ACTION, approvalKind } from './surface-templates.js';
export { ToolRegistry, MIN_EXPLANATION_LENGTH, RESERVED_TOOL_NAMES, TOOL_NAME, placeholderProblem } from './tools.js';
export {
  TurnStateRegistry,
  CANONICAL_TURN_STATES,
  RESERVED_TURN_STATE_NAMES,
  TURN_STATE_ID,
  validateTurnStateMeta,
} from './turn-states.js';
export type * from './types.js';
