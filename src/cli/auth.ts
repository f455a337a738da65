/**
 * The authentication `turnstate serve` uses: without TURNSTATE_API_KEYS every request is the
 * local user (tier `standard`); with it (JSON: token -> principal) a Bearer token is required
 * (401 without one, 403 for an unknown one), and sessions belong to the principal's tenant.
 */
import type { Principal } from '../types.js';
import type { Authenticate } from '../transports/types.js';

export const LOCAL_PRINCIPAL: Principal = Object.freeze({ userId: 'local', attributes: Object.freeze({ tier: 'standard' }) }) as Principal;

/** Builds the hook from the TURNSTATE_API_KEYS value (undefined: no authentication). */
export function authFromEnv(value: string | undefined): Authenticate {
  if (value === undefined || value.trim() === '') return () => ({ ok: true, principal: LOCAL_PRINCIPAL });
  let keys: Record<string, Principal>;
  try {
    keys = JSON.parse(value) as Record<string, Principal>;
  } catch (e) {
    throw new Error(`TURNSTATE_API_KEYS must be JSON like {"<token>": {"userId": "ana", "tenantId": "acme"}}: ${(e as Error).message}`);
  }
  if (keys === null || typeof keys !== 'object' || Array.isArray(keys)) {
    throw new Error('TURNSTATE_API_KEYS must be a JSON object mapping tokens to principals');
  }
  // Each entry is checked now: a principal without a userId (null, a string, {}) would otherwise
  // fail or run turns for nobody on every request that uses its key.
  for (const [token, p] of Object.entries(keys)) {
    const principal = p as unknown as Record<string, unknown> | null;
    const why =
      principal === null || typeof principal !== 'object' || Array.isArray(principal)
        ? 'is not an object'
        : typeof principal.userId !== 'string' || principal.userId === ''
          ? 'has no userId string'
          : principal.tenantId !== undefined && typeof principal.tenantId !== 'string'
            ? 'has a tenantId that is not a string'
            : undefined;
    if (why !== undefined) throw new Error(`TURNSTATE_API_KEYS: the principal of key ${JSON.stringify(token.slice(0, 4) + '…')} ${why}; use {"userId": "ana", "tenantId": "acme"}`);
  }
  const table = new Map(Object.entries(keys));
  return (req) => {
    const header = req.headers.authorization;
    const fromQuery = new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
    const token = header?.startsWith('Bearer ') ? header.slice(7).trim() : fromQuery ?? undefined;
    if (token === undefined || token === '') return { ok: false, status: 401, message: 'an API key is required: Authorization: Bearer <key>' };
    const principal = table.get(token);
    if (principal === undefined) return { ok: false, status: 403, message: 'this API key is not valid' };
    return { ok: true, principal };
  };
}
