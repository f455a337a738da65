/**
 * What a click on a surface means to the session. An A2UI v0.9 action arrives from a client as
 * `{ name, surfaceId, sourceComponentId, context }`.
 *
 * Contract: an action named `approve` or `deny` whose context carries a string `approvalId` is
 * an approval answer (the same path as every other channel: the first answer wins). Any other
 * action is a follow-up message to the session: one line naming the action and its surface,
 * then the context as JSON, so the model sees exactly what was clicked.
 */
import { SURFACE_APPROVE_ACTION, SURFACE_DENY_ACTION } from './surface-templates.js';

export interface SurfaceAction {
  name: string;
  surfaceId: string;
  sourceComponentId: string;
  context: Record<string, unknown>;
  timestamp?: string;
}

export type SurfaceActionRoute =
  /** `reason` as the surface sent it (answerApproval refuses one that is not a string of the allowed length). */
  | { kind: 'approval'; approvalId: string; approved: boolean; reason?: unknown }
  | { kind: 'message'; text: string };

export function routeSurfaceAction(action: SurfaceAction): SurfaceActionRoute {
  const { name, context } = action;
  if ((name === SURFACE_APPROVE_ACTION || name === SURFACE_DENY_ACTION) && typeof context.approvalId === 'string' && context.approvalId !== '') {
    const route: SurfaceActionRoute = { kind: 'approval', approvalId: context.approvalId, approved: name === SURFACE_APPROVE_ACTION };
    if (context.reason !== undefined && context.reason !== '') route.reason = context.reason;
    return route;
  }
  return { kind: 'message', text: `[surface action] ${name} on ${action.surfaceId} (${action.sourceComponentId})\n${JSON.stringify(context)}` };
}
