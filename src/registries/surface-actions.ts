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
 * context as JSON, so the model sees exactly what was clicked. Its name, surface and component
 * are one line each: one holding a control character or a line break (which would start a second
 * line, a forged "[surface action]" among them) is `invalid` (surfaces:action:one-line). A
 * follow-up names a surface the session has live (`liveSurfaceProblem`, surfaces:action:live).
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
  /** Refused: `path` is a JSON Pointer into the action frame (`/action/context/approvalId`); `code` when not `frame.invalid`. */
  | { kind: 'invalid'; path: string; message: string; code?: string };

/** C0 and C1 control characters (line feed and carriage return among them), and U+2028 / U+2029. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

export function routeSurfaceAction(action: SurfaceAction): SurfaceActionRoute {
  const { name, context } = action;
  for (const key of ['name', 'surfaceId', 'sourceComponentId'] as const) {
    const at = typeof action[key] === 'string' ? action[key].search(CONTROL) : -1;
    if (at >= 0) {
      const code = action[key].charCodeAt(at).toString(16).toUpperCase().padStart(4, '0');
      return { kind: 'invalid', path: `/action/${key}`, message: `/action/${key} holds a control character or line break (U+${code} at ${at}): an action's name, surface and component are one line each; nothing was sent` };
    }
  }
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

/**
 * A follow-up action (not an approval answer) whose surface is not one of the session's live
 * surfaces (`SessionHandle.surfaces()`: none of its parts created it, or a later part deleted it):
 * refused with `surface.not_live`, and nothing reaches the session (surfaces:action:live).
 */
export function liveSurfaceProblem(action: SurfaceAction, sessionId: string, live: readonly string[]): Extract<SurfaceActionRoute, { kind: 'invalid' }> | undefined {
  if (live.includes(action.surfaceId)) return undefined;
  return {
    kind: 'invalid',
    code: 'surface.not_live',
    path: '/action/surfaceId',
    message: `surface ${JSON.stringify(action.surfaceId)} is not a live surface of session "${sessionId}" (none of its parts created it, or a later part deleted it): the action was not sent`,
  };
}
