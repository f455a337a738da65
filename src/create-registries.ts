/**
 * The registries of one runtime. `createRegistries()` returns fresh instances on every call:
 * nothing registered in one runtime is visible to another. Tools' approval policies are compiled
 * at registration by approvals/ (registries/ keeps them as data and imports nothing of approvals/).
 */
import { compileApprovalPolicy } from './approvals/policy.js';
import { ActorRegistry } from './registries/actors.js';
import { PartTypeRegistry } from './registries/part-types.js';
import { SurfaceTemplateRegistry } from './registries/surface-templates.js';
import { ToolRegistry } from './registries/tools.js';
import { TurnStateRegistry } from './registries/turn-states.js';
import type { Registries } from './registries/types.js';

export function createRegistries(): Registries {
  const partTypes = new PartTypeRegistry();
  return {
    partTypes,
    turnStates: new TurnStateRegistry(partTypes),
    tools: new ToolRegistry(compileApprovalPolicy),
    actors: new ActorRegistry(),
    surfaceTemplates: new SurfaceTemplateRegistry(),
  };
}
