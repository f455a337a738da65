/**
 * The registries of one runtime. `createRegistries()` returns fresh instances on every call:
 * nothing registered in one runtime is visible to another.
 */
import { ActorRegistry } from './actors.js';
import { PartTypeRegistry } from './part-types.js';
import { SurfaceTemplateRegistry } from './surface-templates.js';
import { ToolRegistry } from './tools.js';
import { TurnStateRegistry } from './turn-states.js';
import type { Registries } from './types.js';

export function createRegistries(): Registries {
  const partTypes = new PartTypeRegistry();
  return {
    partTypes,
    turnStates: new TurnStateRegistry(partTypes),
    tools: new ToolRegistry(),
    actors: new ActorRegistry(),
    surfaceTemplates: new SurfaceTemplateRegistry(),
  };
}

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
export { SurfaceTemplateRegistry, A2UI_BASIC_CATALOG_ID, DATA_KIND, approvalKind } from './surface-templates.js';
export { ToolRegistry, MIN_EXPLANATION_LENGTH, RESERVED_TOOL_NAMES, TOOL_NAME, placeholderProblem } from './tools.js';
export {
  TurnStateRegistry,
  CANONICAL_TURN_STATES,
  RESERVED_TURN_STATE_NAMES,
  TURN_STATE_ID,
  validateTurnStateMeta,
} from './turn-states.js';
export type * from './types.js';
