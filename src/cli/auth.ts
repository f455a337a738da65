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
  // fail or run turns for nobody on every request that uses its key, and a misspelt field
  // ("tenant" for tenantId) would silently put the key's user in no tenant.
  for (const [token, p] of Object.entries(keys)) {
    // A key a client cannot send as it is written would answer 403 forever: HTTP headers carry
    // Latin-1 bytes and a Bearer token's edges are trimmed, so a key is printable ASCII without spaces.
    if (!KEY_CHARS.test(token)) {
      throw new Error(`TURNSTATE_API_KEYS: key ${JSON.stringify(token.slice(0, 4) + '…')} is ${token === '' ? 'empty' : 'not printable ASCII without spaces'}; a client could not send it in an Authorization header`);
    }
    const why = principalProblem(p);
    if (why !== undefined) throw new Error(`TURNSTATE_API_KEYS: the principal of key ${JSON.stringify(token.slice(0, 4) + '…')} ${why}; use {"userId": "ana", "tenantId": "acme"}`);
  }
  const table = new Map(Object.entries(keys));
  return (req) => {
    const header = req.headers.authorization;
    const fromQuery = new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
    // The scheme is case-insensitive (RFC 7235): `bearer k1` is the key k1.
    const bearer = header === undefined ? undefined : /^bearer +(.*)$/i.exec(header.trim());
    const token = bearer ? bearer[1]!.trim() : fromQuery ?? undefined;
    if (token === undefined || token === '') return { ok: false, status: 401, message: 'an API key is required: Authorization: Bearer <key>' };
    const principal = table.get(token);
    if (principal === undefined) return { ok: false, status: 403, message: 'this API key is not valid' };
    return { ok: true, principal };
  };
}

/** What an API key may be made of: printable ASCII, no space (what a Bearer header carries as written). */
const KEY_CHARS = /^[\x21-\x7e]+$/;

/** The fields a principal may have (Principal), in the order the error lists them. */
const PRINCIPAL_FIELDS = ['userId', 'tenantId', 'personId', 'attributes', 'roles'] as const;

/** What is wrong with one principal of TURNSTATE_API_KEYS ("has no userId string"), or undefined. */
function principalProblem(p: unknown): string | undefined {
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return 'is not an object';
  const principal = p as Record<string, unknown>;
  const unknown = Object.keys(principal).find((k) => !(PRINCIPAL_FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined) return `has an unknown field ${JSON.stringify(unknown)} (known: ${PRINCIPAL_FIELDS.join(', ')})`;
  if (typeof principal.userId !== 'string' || principal.userId === '') return 'has no userId string';
  for (const field of ['tenantId', 'personId'] as const) {
    if (principal[field] !== undefined && typeof principal[field] !== 'string') return `has a ${field} that is not a string`;
  }
  const { attributes, roles } = principal;
  if (attributes !== undefined && (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes))) {
    return 'has attributes that are not an object (of attribute names to values, e.g. {"tier": "trusted"})';
  }
  if (roles !== undefined && (!Array.isArray(roles) || !roles.every((r) => typeof r === 'string'))) return 'has roles that are not an array of strings';
  return undefined;
}
