/**
 * Static files of the demo page from one root directory.
 *
 * Contract: only GET and HEAD of regular files inside the root are served (`/` is `index.html`);
 * a path that decodes to anything outside the root, or holds a NUL or a backslash, is refused
 * with 404 whatever is on disk, and so is a file that a symbolic link places outside it: the
 * same 404 `route.not_found` ("no route for GET <path>") the server gives a path nothing serves,
 * so a refusal tells a client nothing a missing file would not. Anything not found resolves false
 * so another transport may answer.
 */
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, resolve, sep } from 'node:path';
import { HttpError, sendError } from '../http.js';

/** Keyed by the requested file's extension: a Map, so no name finds an Object.prototype member. */
const TYPES: ReadonlyMap<string, string> = new Map([
  ['.html', 'text/html; charset=utf-8'],
  ['.js', 'text/javascript; charset=utf-8'],
  ['.mjs', 'text/javascript; charset=utf-8'],
  ['.css', 'text/css; charset=utf-8'],
  ['.json', 'application/json; charset=utf-8'],
  ['.svg', 'image/svg+xml'],
  ['.png', 'image/png'],
  ['.ico', 'image/x-icon'],
  ['.txt', 'text/plain; charset=utf-8'],
  ['.webmanifest', 'application/manifest+json'],
]);

/**
 * The page may talk to its own origin only (WebSocket included). Style attributes are allowed
 * (A2UI components lay out with them: a Row child's `weight`, an Image's fit); style sheets and
 * scripts come from the origin only.
 */
const HTML_HEADERS = {
  'content-security-policy':
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; style-src-attr 'unsafe-inline'; script-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'referrer-policy': 'no-referrer',
};

/** The server's answer for a path nothing serves (transports/server.ts), for a path refused here. */
function notFound(res: ServerResponse, method: string | undefined, pathname: string): true {
  sendError(res, new HttpError(404, 'route.not_found', `no route for ${method ?? 'GET'} ${pathname}`));
  return true;
}

export function createStaticFiles(webRoot: string): (req: IncomingMessage, res: ServerResponse, pathname: string) => Promise<boolean> {
  const root = resolve(webRoot);
  /** The root with its own links resolved (once it exists). */
  let realRoot: string | undefined;
  return async (req, res, pathname) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      return false;
    }
    if (decoded.includes('\0') || decoded.includes('\\')) return notFound(res, req.method, pathname);
    if (decoded.endsWith('/')) decoded += 'index.html';
    const file = resolve(root, '.' + decoded);
    if (!file.startsWith(root + sep)) return notFound(res, req.method, pathname);
    let size: number;
    try {
      const st = await stat(file);
      if (!st.isFile()) return false;
      size = st.size;
      // A link inside the root may point anywhere: what is served is where it leads.
      realRoot ??= await realpath(root);
      if (!(await realpath(file)).startsWith(realRoot + sep)) return notFound(res, req.method, pathname);
    } catch {
      return false;
    }
    const ext = extname(file).toLowerCase();
    const headers: Record<string, string> = {
      'content-type': TYPES.get(ext) ?? 'application/octet-stream',
      'content-length': String(size),
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      ...(ext === '.html' ? HTML_HEADERS : {}),
    };
    res.writeHead(200, headers);
    if (req.method === 'HEAD') {
      res.end();
      return true;
    }
    await new Promise<void>((done) => {
      const stream = createReadStream(file);
      stream.once('error', () => {
        res.destroy();
        done();
      });
      stream.once('end', done);
      res.once('close', () => {
        stream.destroy();
        done();
      });
      stream.pipe(res);
    });
    return true;
  };
}
