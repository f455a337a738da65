/**
 * Signed, expiring links to `GET /artifacts/{id}`: the URL reference an SMS carries (spec 001:
 * "artifact becomes an attachment (email) or URL reference (SMS)"), and what an email attachment
 * may add. One object signs (channel rendering) and verifies (the artifacts route), so both use
 * the same secret.
 *
 * Contract: a link is `<baseUrl>/artifacts/<id>?exp=<unix seconds>&sig=<HMAC-SHA-256 of
 * "<id>.<exp>" under the secret, base64url>`. The artifacts route accepts it without an
 * Authorization header until `exp`, and only while the artifact's session exists; a link whose
 * id, exp or sig was changed is refused (compared in constant time). A link is a bearer
 * credential: whoever holds it reads the artifact until it expires or its session is deleted.
 * Keep the secret stable across restarts (a new one breaks every link issued) and out of logs.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { TurnstateError } from '../errors.js';
import { formatValue } from '../limits.js';

export interface ArtifactLinksOptions {
  /**
   * Where clients reach the server (scheme, host, and any path prefix), e.g.
   * `https://desk.example.com`; or a function giving it, for a server whose address is known
   * only once it listens.
   */
  baseUrl: string | (() => string);
  /** The HMAC key, at least 32 bytes (a string counts as UTF-8). */
  secret: string | Uint8Array;
  /** How long a link stays valid, in seconds (default 7 days). */
  ttlSeconds?: number | undefined;
  /** The clock, in ms (tests). */
  now?: (() => number) | undefined;
}

/** What verifying a link's `exp` and `sig` found. */
export type ArtifactLinkCheck = { ok: true } | { ok: false; reason: 'invalid' } | { ok: false; reason: 'expired'; expiredAt: string };

export interface ArtifactLinks {
  /** A signed link to the artifact, valid for `ttlSeconds` from now. */
  url(artifactId: string): string;
  /** Whether `exp` and `sig` (the link's query parameters) are this server's unexpired signature of the id. */
  verify(artifactId: string, exp: string | null, sig: string | null): ArtifactLinkCheck;
}

/** Default lifetime of a link: 7 days (deleting the session revokes it sooner). */
const DEFAULT_ARTIFACT_LINK_TTL_SECONDS = 7 * 24 * 3600;

const MIN_SECRET_BYTES = 32;

/** The longest lifetime a link may have: 10 years (its `exp` stays a number verify() reads). */
const MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;

function invalidOption(message: string): never {
  throw new TurnstateError('artifact.links_invalid', `createArtifactLinks(): ${message}`);
}

/** The base URL without a trailing slash; refused unless http(s) without credentials, query or fragment (not even an empty `?` or `#`). */
function checkBase(value: unknown): string {
  let u: URL | undefined;
  try {
    u = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    u = undefined;
  }
  // An empty `?` or `#` leaves search and hash '' yet still ends the path: the raw text must have neither.
  const marks = typeof value === 'string' && /[?#]/.test(value);
  if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || marks || u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') {
    invalidOption(`baseUrl must be an http(s) URL without credentials, query or fragment, like "https://desk.example.com", got ${JSON.stringify(value)}`);
  }
  return u.href.replace(/\/+$/, '');
}

export function createArtifactLinks(opts: ArtifactLinksOptions): ArtifactLinks {
  if (opts === null || typeof opts !== 'object') invalidOption('takes { baseUrl, secret, ttlSeconds? }');
  const secret = typeof opts.secret === 'string' ? Buffer.from(opts.secret, 'utf8') : opts.secret instanceof Uint8Array ? Buffer.from(opts.secret) : undefined;
  if (secret === undefined || secret.byteLength < MIN_SECRET_BYTES) {
    invalidOption(`secret must be a string or bytes of at least ${MIN_SECRET_BYTES} bytes (e.g. randomBytes(32)), got ${secret === undefined ? typeof opts.secret : `${secret.byteLength} bytes`}`);
  }
  const ttl = opts.ttlSeconds ?? DEFAULT_ARTIFACT_LINK_TTL_SECONDS;
  if (!Number.isSafeInteger(ttl) || ttl <= 0 || ttl > MAX_TTL_SECONDS) invalidOption(`ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS} (10 years), got ${formatValue(ttl)}`);
  const given = opts.baseUrl;
  const fixed = typeof given === 'function' ? undefined : checkBase(given);
  const base = (): string => fixed ?? checkBase((given as () => string)());
  const now = opts.now ?? Date.now;
  const sign = (id: string, exp: string): string => createHmac('sha256', secret).update(`${id}.${exp}`).digest('base64url');
  return {
    url(artifactId) {
      const exp = String(Math.floor(now() / 1000) + ttl);
      return `${base()}/artifacts/${encodeURIComponent(artifactId)}?exp=${exp}&sig=${sign(artifactId, exp)}`;
    },
    verify(artifactId, exp, sig) {
      if (typeof exp !== 'string' || !/^[0-9]{1,12}$/.test(exp) || typeof sig !== 'string') return { ok: false, reason: 'invalid' };
      const want = Buffer.from(sign(artifactId, exp));
      const got = Buffer.from(sig);
      if (got.byteLength !== want.byteLength || !timingSafeEqual(got, want)) return { ok: false, reason: 'invalid' };
      const expires = Number(exp);
      if (Math.floor(now() / 1000) > expires) return { ok: false, reason: 'expired', expiredAt: new Date(expires * 1000).toISOString() };
      return { ok: true };
    },
  };
}
