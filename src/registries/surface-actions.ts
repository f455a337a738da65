/**
 * What a click on a surface means to the session. An A2UI v0.9 action arrives from a client as
 * `{ name, surfaceId, sourceComponentId, context }`.
 *
 * Contract: an action named `approve` or `deny` is an approval answer (the same path as every
 * other channel: the first answer wins) and its context MUST carry the approval's id as a
 * non-empty string `approvalId`; without one (missing, a number, null, an object, "") it is
 * `invalid`, naming `/action/context/approvalId`, and means nothing to the session: never a
 * message (the words "approve"/"deny" would reach the model as a request). Any other action is a
 * follow-up message to the session: one line naming the action and its surface, then the
 * context as JSON, so the model sees exactly what was clicked.
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
  | { kind: 'message'; text: string }
  /** Refused: `path` is a JSON Pointer into the action frame (`/action/context/approvalId`). */
  | { kind: 'invalid'; path: string; message: string };

export function routeSurfaceAction(action: SurfaceAction): SurfaceActionRoute {
  const { name, context } = action;
  if (name === SURFACE_APPROVE_ACTION || name === SURFACE_DENY_ACTION) {
    const { approvalId } = context;
    if (typeof approvalId !== 'string' || approvalId === '') {
      const got = approvalId === undefined ? 'it is missing' : `got ${approvalId === '' ? 'an empty string' : approvalId === null ? 'null' : Array.isArray(approvalId) ? 'an array' : typeof approvalId}`;
      return {
        kind: 'invalid',
        path: '/action/context/approvalId',
        message: `/action/context/approvalId must be a non-empty string, the id of the approval this ${name} action answers (${got}): bind it from the data model, e.g. "context": { "approvalId": { "path": "/approvalId" } }`,
      };
    }
    const route: SurfaceActionRoute = { kind: 'approval', approvalId, approved: name === SURFACE_APPROVE_ACTION };
    if (context.reason !== undefined && context.reason !== '') route.reason = context.reason;
    return route;
  }
  return { kind: 'message', text: `[surface action] ${name} on ${action.surfaceId} (${action.sourceComponentId})\n${JSON.stringify(context)}` };
}
