/**
 * `GET /artifacts/{id}` (and HEAD): the bytes an `artifact` part refers to, while the session
 * that put them exists, for principals who may read that session.
 *
 * Contract: a request carries a credential (authentication is the server's hook: 401/403 as
 * everywhere) or a signed link (`?exp=…&sig=…`, made by the `artifactLinks` it is given; no credential
 * needed until it expires). Either way the artifact's session must still exist, and with a
 * credential the principal must be of its tenant: the rule of `GET /sessions/{id}`. An unknown
 * id, an id of the wrong form, an artifact of another tenant and one of a deleted session all
 * answer the same 404 `artifact.not_found`, so ids cannot be probed; a link that was changed or
 * has expired is a 403 (`artifact.link_invalid`, `artifact.link_expired`). The body is streamed
 * from the store (`open`; HEAD reads no bytes) with the recorded mime type, `nosniff` and a
 * sandboxing CSP; only passive types (images, PDF, plain text, CSV, JSON) are `inline`, anything
 * else (HTML, SVG, scripts) is an `attachment`, so an artifact never runs as the page's origin.
 * Responses are `private, no-cache` with the id as ETag (`If-None-Match` gets a 304 once the
 * request passed the same checks) and `Vary: Authorization`: deleting the session revokes them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { ArtifactRecord, ArtifactStore, SessionRuntime } from '../api.js';
import type { ArtifactLinks } from '../envelope/artifact-links.js';
import { TurnstateError } from '../errors.js';
import { formatValue } from '../limits.js';
import { unknownOptionProblem } from '../registries/registry.js';
import { HttpError, requestUrl, sendError } from './http.js';
import { sameTenant } from '../types.js';
import { authenticateRequest } from './access.js';
import type { Authenticate, HttpTransport } from './types.js';

const PREFIX = '/artifacts/';
const INLINE = /^(?:image\/(?:png|jpeg|gif|webp|avif)|application\/pdf|text\/plain|text\/csv|application\/json)(?:;|$)/i;

export interface ArtifactsTransportOptions {
  /** Whose sessions the artifacts belong to: an artifact is served only while its session exists. */
  runtime: SessionRuntime;
  artifacts: ArtifactStore;
  authenticate?: Authenticate | undefined;
  /** Verifies signed links (`createArtifactLinks`, the same object channels sign with); without it only credentials are accepted. */
  artifactLinks?: Pick<ArtifactLinks, 'verify'> | undefined;
}

/** RFC 6266 / 5987 filename parameter (ASCII fallback plus the UTF-8 form). */
function disposition(kind: 'inline' | 'attachment', name: string | undefined): string {
  if (name === undefined) return kind;
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  // RFC 5987 attr-char: encodeURIComponent leaves ' ( ) * unescaped, which it does not allow.
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** Whether an `If-None-Match` value names `etag` (weak comparison, RFC 9110 §13.1.2; `*` names any). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}

const notFound = (): HttpError => new HttpError(404, 'artifact.not_found', 'no such artifact', { headers: { vary: 'Authorization' } });

/** Every option of ArtifactsTransportOptions (the compiler keeps this list and the interface the same). */
const KNOWN: Readonly<Record<keyof ArtifactsTransportOptions, true>> = { runtime: true, artifacts: true, authenticate: true, artifactLinks: true };
const ARTIFACTS_OPTION_NAMES: readonly string[] = Object.freeze(Object.keys(KNOWN));

/** Throws TurnstateError('options.invalid') naming the first option the transport cannot use (a misspelt key included). */
function checkArtifactsOptions(opts: ArtifactsTransportOptions): void {
  const bad = (what: string) => new TurnstateError('options.invalid', `createArtifactsTransport: ${what}`);
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw bad(`options must be an object { runtime, artifacts, ... }, got ${formatValue(opts)}`);
  const unknown = unknownOptionProblem(opts, ARTIFACTS_OPTION_NAMES);
  if (unknown !== undefined) throw bad(unknown);
  const { runtime, artifacts } = opts as { runtime: unknown; artifacts: unknown };
  if (runtime === null || typeof runtime !== 'object' || typeof (runtime as { session?: unknown }).session !== 'function') {
    throw bad('needs a `runtime` (createRuntime()), since an artifact is served only while its session exists');
  }
  if (artifacts === null || typeof artifacts !== 'object' || typeof (artifacts as { head?: unknown }).head !== 'function') {
    throw bad(`\`artifacts\` must be an ArtifactStore (e.g. runtime.artifacts), got ${formatValue(artifacts)}`);
  }
  if (opts.authenticate !== undefined && typeof opts.authenticate !== 'function') throw bad(`\`authenticate\` must be a function, got ${formatValue(opts.authenticate)}`);
  const links = opts.artifactLinks as { verify?: unknown } | undefined;
  if (links !== undefined && (links === null || typeof links.verify !== 'function')) throw bad(`\`artifactLinks\` must be an ArtifactLinks (createArtifactLinks()), got ${formatValue(links)}`);
}

export function createArtifactsTransport(opts: ArtifactsTransportOptions): HttpTransport {
  checkArtifactsOptions(opts);
  const { runtime, artifacts, artifactLinks: links } = opts;

  /** The record when the request may read it; else the refusal it gets. */
  const admit = async (req: IncomingMessage, res: ServerResponse, id: string, url: URL): Promise<ArtifactRecord | HttpError | undefined> => {
    const exp = url.searchParams.get('exp');
    const sig = url.searchParams.get('sig');
    const signed = links !== undefined && (exp !== null || sig !== null);
    let tenantOk: (tenantId: string | undefined) => boolean = () => true;
    if (signed) {
      const check = links.verify(id, exp, sig);
      if (!check.ok && check.reason === 'expired') return new HttpError(403, 'artifact.link_expired', `this artifact link expired at ${check.expiredAt}: ask for a new one`);
      if (!check.ok) return new HttpError(403, 'artifact.link_invalid', 'this artifact link is not valid: it was changed, or this server did not make it');
    } else {
      const principal = await authenticateRequest(req, res, opts.authenticate);
      if (principal === undefined) return undefined; // answered (401/403)
      tenantOk = (tenantId) => sameTenant(principal, tenantId);
    }
    // Closed: nothing is missing, it is refused as every call of a closed runtime is (503, retry elsewhere).
    if (runtime.closed) return new HttpError(503, 'runtime.closed', 'the runtime is closed');
    const record = artifacts.head(id);
    if (record === undefined || !tenantOk(record.tenantId)) return notFound();
    // The session that put it, not another of the same id and another tenant (an id reused after a delete).
    const session = await runtime.session(record.sessionId);
    if (session === undefined || !tenantOk(session.record.tenantId) || session.record.tenantId !== record.tenantId) return notFound();
    return record;
  };

  return {
    name: 'artifacts',
    async handle(req: IncomingMessage, res: ServerResponse) {
      const url = requestUrl(req);
      const path = url.pathname;
      if (!path.startsWith(PREFIX)) return false;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, new HttpError(405, 'method.not_allowed', `${req.method ?? ''} is not allowed on ${PREFIX}{id}: use GET or HEAD`, { headers: { allow: 'GET, HEAD' } }));
        return true;
      }
      const id = path.slice(PREFIX.length);
      const admitted = await admit(req, res, id, url);
      if (admitted === undefined) return true;
      if (admitted instanceof HttpError) {
        sendError(res, admitted);
        return true;
      }
      const etag = `"${admitted.artifactId}"`;
      const cache = { 'cache-control': 'private, no-cache', etag, vary: 'Authorization' };
      if (matches(req.headers['if-none-match'], etag)) {
        res.writeHead(304, cache);
        res.end();
        return true;
      }
      // GET opens the bytes before answering, so a store that lost them answers 404, not a cut body.
      const body = req.method === 'HEAD' ? undefined : artifacts.open ? await artifacts.open(id) : await readWhole(artifacts, id, admitted);
      if (req.method === 'GET' && body === undefined) {
        sendError(res, notFound());
        return true;
      }
      const record = body?.record ?? admitted;
      res.writeHead(200, {
        'content-type': record.mimeType,
        'content-length': String(record.sizeBytes),
        'content-disposition': disposition(INLINE.test(record.mimeType) ? 'inline' : 'attachment', record.name),
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
        ...cache,
      });
      if (body === undefined || body.data instanceof Uint8Array) {
        res.end(body?.data);
        return true;
      }
      // Streamed with backpressure; a client that goes away ends the read (and closes the file).
      await pipeline(body.data, res).catch(() => res.destroy());
      return true;
    },
    async close() {},
  };
}

/** A store without `open`: its `read` (the whole artifact in memory, as such a store keeps it). */
async function readWhole(artifacts: ArtifactStore, id: string, record: ArtifactRecord): Promise<{ record: ArtifactRecord; data: Uint8Array } | undefined> {
  const data = await artifacts.read(id);
  return data === undefined ? undefined : { record, data };
}
