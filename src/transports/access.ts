/**
 * Who asks, and what they may see: the authentication hook run for a request (401/403 answered
 * here), the anonymous principal without one, and the session a principal may see (the tenant
 * rule, `sameTenant` in types.ts: another tenant's session is indistinguishable from a missing one).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionHandle, SessionRuntime } from '../api.js';
import { TurnstateError } from '../errors.js';
import { sameTenant, type Principal } from '../types.js';
import { HttpError, errorBody, sendError, sendJson } from './http.js';
import type { Authenticate } from './types.js';

/** The principal when no authentication hook is configured (single-tenant, local use). */
export const ANONYMOUS_PRINCIPAL: Principal = Object.freeze({ userId: 'anonymous' }) as Principal;

/**
 * Runs the authentication hook. Resolves the principal, or writes 401/403 (JSON error body,
 * `www-authenticate: Bearer` on 401) and resolves undefined. A throwing hook is a 500.
 */
export async function authenticateRequest(
  req: IncomingMessage,
  res: ServerResponse,
  authenticate: Authenticate | undefined,
): Promise<Principal | undefined> {
  if (authenticate === undefined) return ANONYMOUS_PRINCIPAL;
  let result;
  try {
    result = await authenticate(req);
  } catch (e) {
    sendError(res, new HttpError(500, 'auth.failed', `authentication hook failed: ${(e as Error).message}`, { cause: e }));
    return undefined;
  }
  if (result.ok) return result.principal;
  // A refused request's body is not read: the connection closes after the answer, instead of
  // staying open while a client with no key trickles a body in (until Node's 300 s request limit).
  if (!req.complete) res.shouldKeepAlive = false;
  const code = result.status === 401 ? 'auth.unauthenticated' : 'auth.forbidden';
  sendJson(res, result.status, errorBody(code, result.message), result.status === 401 ? { 'www-authenticate': 'Bearer' } : undefined);
  return undefined;
}

/**
 * The session if it exists and belongs to the principal's tenant; undefined otherwise, so a
 * session of another tenant is indistinguishable from a missing one. Once the runtime is closed
 * nothing is missing: every session is refused with `runtime.closed` (503), as every other call
 * of a closed runtime is, so a client retries elsewhere instead of taking the session for gone.
 */
export async function visibleSession(runtime: SessionRuntime, principal: Principal, sessionId: string): Promise<SessionHandle | undefined> {
  const session = await runtime.session(sessionId, { visibleTo: principal });
  if (session === undefined) {
    if (runtime.closed) throw new TurnstateError('runtime.closed', 'the runtime is closed');
    return undefined;
  }
  // Checked again: a SessionRuntime of an embedder's own may not honour visibleTo.
  return sameTenant(principal, session.record.tenantId) ? session : undefined;
}
