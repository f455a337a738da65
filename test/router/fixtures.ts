/**
 * Test fixtures: tools registered in a real ToolRegistry (one per fixture call), and dispatch contexts.
 */
import { compileApprovalPolicy } from '../../src/approvals/policy.js';
import { ToolRegistry } from '../../src/registries/tools.js';
import type { RegisteredTool, ToolHandler } from '../../src/registries/types.js';
import type { DispatchContext } from '../../src/router/dispatch-context.js';
import type { Routing, Scope } from '../../src/types.js';

export interface ToolSpec {
  name: string;
  scope: Scope;
  routing?: Routing;
  handler: ToolHandler;
  outputSchema?: Record<string, unknown>;
  bypassReason?: string;
  /** Further definition fields (`idempotent`, `timeoutMs`, `retry`, ...). */
  extra?: Record<string, unknown>;
}

const registry = new ToolRegistry(compileApprovalPolicy);

/** Registers the tool in a real ToolRegistry (names must be unique across the test file). */
export function makeTool(spec: ToolSpec): RegisteredTool {
  const common = {
    name: spec.name,
    description: `${spec.name} (test tool)`,
    inputSchema: { type: 'object' },
    handler: spec.handler,
    ...(spec.outputSchema === undefined ? {} : { outputSchema: spec.outputSchema }),
    ...spec.extra,
  };
  const justification = 'private to one actor: its own mailbox and extraction work';
  if (spec.scope === 'generalist') return registry.register({ ...common, scope: 'generalist' });
  if (spec.routing === 'bypass') {
    return registry.register({
      ...common,
      scope: 'specialist',
      routing: 'bypass',
      bypassRouting: { reason: spec.bypassReason ?? 'latency: an inline computation in the actor loop' },
      justification,
    });
  }
  return registry.register({ ...common, scope: 'specialist', justification });
}

let n = 0;
export function ctx(over: Partial<DispatchContext> = {}): DispatchContext {
  n += 1;
  return {
    actorName: 'triage',
    sessionId: 's1',
    turnId: 't1',
    callId: `call_${n}`,
    signal: new AbortController().signal,
    ...over,
  };
}
