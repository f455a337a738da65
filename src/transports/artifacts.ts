/**
 * `GET /artifacts/{id}` (and HEAD): the bytes an `artifact` part refers to, for principals of the
 * artifact's tenant only.
 *
 * Contract: authentication is the server's hook (401/403 as everywhere). An unknown id, an id of
 * the wrong form and an artifact of another tenant all answer the same 404 `artifact.not_found`,
 * so ids cannot be probed. The body is served with the recorded mime type, `nosniff` and a
 * sandboxing CSP; only passive types (images, PDF, plain text, CSV, JSON) are `inline`, anything
 * else (HTML, SVG, scripts) is an `attachment`, so an artifact never runs as the page's origin.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ArtifactStore } from '../api.js';
import { authenticateRequest, HttpError, requestUrl, sameTenant, sendError } from './http.js';
import type { Authenticate, HttpTransport } from './types.js';

const PREFIX = '/artifacts/';
const INLINE = /^(?:image\/(?:png|jpeg|gif|webp|avif)|application\/pdf|text\/plain|text\/csv|application\/json)(?:;|$)/i;

export interface ArtifactsTransportOptions {
  artifacts: ArtifactStore;
  authenticate?: Authenticate;
}

/** RFC 6266 / 5987 filename parameter (ASCII fallback plus the UTF-8 form). */
function disposition(kind: 'inline' | 'attachment', name: string | undefined): string {
  if (name === undefined) return kind;
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  // RFC 5987 attr-char: encodeURIComponent leaves ' ( ) * unescaped, which it does not allow.
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export function createArtifactsTransport(opts: ArtifactsTransportOptions): HttpTransport {
  const { artifacts } = opts;
  return {
    name: 'artifacts',
    async handle(req: IncomingMessage, res: ServerResponse) {
      const path = requestUrl(req).pathname;
      if (!path.startsWith(PREFIX)) return false;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, new HttpError(405, 'method.not_allowed', `${req.method ?? ''} is not allowed on ${PREFIX}{id}: use GET or HEAD`, { headers: { allow: 'GET, HEAD' } }));
        return true;
      }
      const principal = await authenticateRequest(req, res, opts.authenticate);
      if (principal === undefined) return true;
      const id = path.slice(PREFIX.length);
      const notFound = new HttpError(404, 'artifact.not_found', 'no such artifact');
      const record = artifacts.head(id);
      if (record === undefined || !sameTenant(principal, record.tenantId)) {
        sendError(res, notFound);
        return true;
      }
      const data = req.method === 'HEAD' ? undefined : await artifacts.read(id);
      if (req.method === 'GET' && data === undefined) {
        sendError(res, notFound);
        return true;
      }
      res.writeHead(200, {
        'content-type': record.mimeType,
        'content-length': String(record.sizeBytes),
        'content-disposition': disposition(INLINE.test(record.mimeType) ? 'inline' : 'attachment', record.name),
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
        'cache-control': 'private, max-age=31536000, immutable',
        etag: `"${record.artifactId}"`,
      });
      res.end(data);
      return true;
    },
    async close() {},
  };
}
