/**
 * Shared HTTP helpers for every transport served on node:http: bounded JSON bodies, JSON
 * responses and error bodies `{ error: { code, message, path? } }`, a small path router,
 * the authentication step and SSE framing.
 *
 * Contract: every helper here that writes a response writes it completely (headers + body)
 * or not at all; none throws after headers are sent.
 */
import { isUtf8 } from 'node:buffer';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { TurnstateError } from '../errors.js';
import { wellFormed } from '../text.js';

/** Default request-body limit (1 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** The JSON error body every transport answers with. */
export interface JsonErrorBody {
  error: { code: string; message: string; path?: string; details?: Record<string, unknown> };
}

/** An error that maps directly to an HTTP status and a JSON error body. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly path: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    opts: { path?: string; details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.path = opts.path;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  toBody(): JsonErrorBody {
    const error: JsonErrorBody['error'] = { code: this.code, message: this.message };
    if (this.path !== undefined) error.path = this.path;
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

/** Builds an error body without throwing. */
export function errorBody(code: string, message: string, path?: string): JsonErrorBody {
  return path === undefined ? { error: { code, message } } : { error: { code, message, path } };
}

/**
 * TurnstateError codes with a natural HTTP status; anything else is a 500. Every refusal of what
 * the caller sent is a 4xx here (docs/concepts/errors.md lists each code with its status).
 */
const STATUS_BY_CODE: Record<string, number> = {
  'session.not_found': 404,
  'session.busy': 409,
  'session.queue_full': 429,
  'session.exists': 409,
  'session.invalid': 400,
  'session.invalid_policy': 400,
  'session.invalid_filter': 400,
  'approval.not_found': 404,
  'approval.already_resolved': 409,
  'approval.forbidden': 403,
  'approval.invalid': 400,
  'tool.unknown': 400,
  'tool.not_pending': 400,
  'part_type.unknown': 400,
  'part_type.unknown_target': 400,
  'registration.invalid': 400,
  'actor.unknown': 400,
  'message.invalid': 400,
  'message.invalid_consumes': 400,
  'message.invalid_client_tool': 400,
  'message.invalid_caller_card': 400,
  'cursor.invalid': 400,
  'cursor.ahead': 400,
  'injection.unknown_call': 400,
  'injection.invalid': 400,
  'injection.not_waiting': 409,
  'runtime.closed': 503,
};

/** Maps any thrown value to an HttpError (TurnstateError codes keep their code; others are 500 `internal`). */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof TurnstateError) {
    const status = STATUS_BY_CODE[err.code] ?? (err.code.endsWith('.not_found') ? 404 : 500);
    return new HttpError(status, err.code, err.message, err.details === undefined ? { cause: err } : { details: err.details, cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new HttpError(500, 'internal', `internal error: ${message}`, { cause: err });
}

/* ------------------------------------------------------------------ responses */

/** Writes a complete JSON response. A no-op when headers were already sent. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  if (res.headersSent || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    // JSON echoes what clients sent (paths, names): never sniffed as HTML.
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

/** Writes an error response from any thrown value (see toHttpError). */
export function sendError(res: ServerResponse, err: unknown): void {
  const httpError = toHttpError(err);
  sendJson(res, httpError.status, httpError.toBody(), httpError.headers);
}

/** 204 No Content. */
export function sendNoContent(res: ServerResponse): void {
  if (res.headersSent || res.writableEnded) return;
  res.writeHead(204);
  res.end();
}

/* ------------------------------------------------------------------ parser errors */

/** Node's parser errors with their own status; every other parser error is a 400. */
const CLIENT_ERROR_STATUS: Record<string, { status: number; reason: string; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    code: 'request.headers_too_large',
    message: 'request headers exceed the server limit (node:http maxHeaderSize)',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, reason: 'Payload Too Large', code: 'body.too_large', message: 'chunk extensions exceed the server limit' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', code: 'request.timeout', message: 'the request was not received in time' },
};

/**
 * The complete raw HTTP/1.1 response (status line, headers, JSON error body, connection close)
 * for a node:http `clientError`: a request its parser refused before any handler ran. Undefined
 * when nothing should be written (the peer already reset the connection).
 */
export function clientErrorResponse(err: Error & { code?: string; reason?: string }): string | undefined {
  if (err.code === 'ECONNRESET') return undefined;
  const known = err.code === undefined ? undefined : CLIENT_ERROR_STATUS[err.code];
  const status = known?.status ?? 400;
  const reason = known?.reason ?? 'Bad Request';
  const detail = typeof err.reason === 'string' && err.reason !== '' ? err.reason : err.message;
  const body = JSON.stringify(
    errorBody(known?.code ?? 'request.malformed', known?.message ?? `malformed HTTP request: ${detail}${err.code === undefined ? '' : ` (${err.code})`}`),
  );
  return (
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `cache-control: no-store\r\nconnection: close\r\n\r\n${body}`
  );
}

/** Refuses a WebSocket upgrade with `status` and a JSON error body, then closes the socket. */
export function rejectUpgrade(socket: Duplex, status: number, code: string, message: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(errorBody(code, message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n` +
      (status === 401 ? 'WWW-Authenticate: Bearer\r\n' : '') +
      `\r\n${body}`,
  );
}

/* ------------------------------------------------------------------ request bodies */

/**
 * How much of an oversized body is read and discarded before the 413 is sent (64 MiB). A server
 * that answers and closes while the client is still sending resets the connection, and the client
 * (seeing EPIPE / ECONNRESET) never reads the 413; past this cap the server answers and closes anyway.
 */
export const DEFAULT_MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * Reads the raw request body, refusing more than `maxBytes` with 413 `body.too_large`
 * (checked against content-length first, then while reading). The refusal settles only after the
 * rest of the body was read and discarded (up to `maxDrainBytes`), so the client reads the 413.
 */
export function readBody(req: IncomingMessage, maxBytes = DEFAULT_MAX_BODY_BYTES, maxDrainBytes = DEFAULT_MAX_DRAIN_BYTES): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return refuseOversized(req, maxBytes, maxDrainBytes, 0);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        chunks.length = 0;
        stop();
        refuseOversized(req, maxBytes, maxDrainBytes, size).catch(reject);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onError = (e: Error): void => {
      stop();
      reject(new HttpError(400, 'body.unreadable', `request body could not be read: ${e.message}`, { cause: e }));
    };
    const stop = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** Discards the rest of an oversized body, then rejects with the 413 (keeping the connection when all of it was read). */
function refuseOversized(req: IncomingMessage, maxBytes: number, maxDrainBytes: number, alreadyRead: number): Promise<never> {
  return new Promise<never>((_, reject) => {
    let drained = alreadyRead;
    const finish = (drainedAll: boolean): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      if (!drainedAll) req.pause();
      reject(tooLarge(maxBytes, !drainedAll));
    };
    const onData = (chunk: Buffer): void => {
      drained += chunk.length;
      if (drained > maxDrainBytes) finish(false);
    };
    const onEnd = (): void => finish(true);
    if (req.complete) {
      finish(true);
      return;
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onEnd);
    req.resume();
  });
}

function tooLarge(maxBytes: number, close: boolean): HttpError {
  return new HttpError(413, 'body.too_large', `request body exceeds the limit of ${maxBytes} bytes`, {
    details: { limit: maxBytes },
    ...(close ? { headers: { connection: 'close' } } : {}),
  });
}

/**
 * Reads and parses a JSON body. 413 `body.too_large` over the limit; 415 `body.unsupported_media_type`
 * when a content-type other than JSON is declared, or none for a non-empty body (a cross-site page
 * can send a body without one and no preflight); 400 `body.invalid_json` naming the parse error
 * (well-formed), or a body that is not UTF-8 (never decoded to U+FFFD; a leading BOM is kept, a
 * parse error); an empty body is `undefined` unless `required`, then 400 `body.missing`.
 */
export async function readJsonBody(
  req: IncomingMessage,
  opts: { maxBytes?: number; required?: boolean } = {},
): Promise<unknown> {
  const type = req.headers['content-type'];
  if (type !== undefined && type !== '' && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    req.resume();
    throw new HttpError(415, 'body.unsupported_media_type', `content-type must be application/json, got "${type}"`);
  }
  const raw = await readBody(req, opts.maxBytes ?? DEFAULT_MAX_BODY_BYTES);
  if (raw.length === 0 || raw.toString('utf8').trim() === '') {
    if (opts.required) throw new HttpError(400, 'body.missing', 'a JSON request body is required', { path: '' });
    return undefined;
  }
  if (type === undefined || type === '') {
    throw new HttpError(415, 'body.unsupported_media_type', 'a request body needs content-type: application/json');
  }
  // Checked, not decoded lossily: a body that is not UTF-8 would be applied with U+FFFD in it.
  if (!isUtf8(raw)) throw new HttpError(400, 'body.invalid_json', 'request body is not valid UTF-8: JSON must be UTF-8 (RFC 8259)', { path: '' });
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (e) {
    throw new HttpError(400, 'body.invalid_json', `request body is not valid JSON: ${wellFormed((e as Error).message)}`, { path: '' });
  }
}

/* ------------------------------------------------------------------ routing */

export type RouteParams = Record<string, string>;

export type RouteHandler<C> = (ctx: C, params: RouteParams) => Promise<void> | void;

interface CompiledRoute<C> {
  method: string;
  segments: string[];
  handler: RouteHandler<C>;
}

export type RouteMatch<C> =
  | { kind: 'found'; handler: RouteHandler<C>; params: RouteParams }
  /** The path exists, the method does not: answer 405 with `allow`. */
  | { kind: 'method-not-allowed'; allow: string[] }
  | { kind: 'none' };

/**
 * A minimal path router: patterns like `/sessions/:id/turns`, exact segment matches,
 * `:name` captures one non-empty segment (URI-decoded). No wildcards, no regexes.
 */
export class Router<C> {
  readonly #routes: CompiledRoute<C>[] = [];
  readonly #base: string[];

  constructor(basePath = '') {
    this.#base = splitPath(basePath);
  }

  add(method: string, pattern: string, handler: RouteHandler<C>): this {
    this.#routes.push({ method: method.toUpperCase(), segments: [...this.#base, ...splitPath(pattern)], handler });
    return this;
  }

  match(method: string, pathname: string): RouteMatch<C> {
    const segments = splitPath(pathname);
    const allow: string[] = [];
    for (const route of this.#routes) {
      const params = matchSegments(route.segments, segments);
      if (params === undefined) continue;
      if (route.method === method.toUpperCase() || (method.toUpperCase() === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', handler: route.handler, params };
      }
      allow.push(route.method);
    }
    return allow.length > 0 ? { kind: 'method-not-allowed', allow } : { kind: 'none' };
  }
}

function splitPath(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function matchSegments(pattern: string[], actual: string[]): RouteParams | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: RouteParams = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const a = actual[i]!;
    if (p.startsWith(':')) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(a);
      } catch {
        return undefined;
      }
      params[p.slice(1)] = decoded;
    } else if (p !== a) {
      return undefined;
    }
  }
  return params;
}

/** The request URL (path and query) parsed against a dummy origin. */
export function requestUrl(req: IncomingMessage): URL {
  // Parsed as a path under a fixed origin: a target such as `//` or `//host/x` is not read as an
  // authority (new URL('//', base) throws; that once ended the server from an upgrade request).
  const target = req.url ?? '/';
  try {
    // The absolute form (`http://host/path`, RFC 9112 §3.2.2: a server MUST accept it) is routed by its path.
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
      const u = new URL(target);
      return new URL(`http://localhost${u.pathname}${u.search}`);
    }
    return new URL(`http://localhost${target.startsWith('/') ? target : `/${target}`}`);
  } catch {
    throw new HttpError(400, 'request.invalid_target', 'the request target is not a valid path');
  }
}

/* ------------------------------------------------------------------ SSE */

/** Headers for an SSE response (no caching, no proxy buffering). */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream; charset=utf-8',
  // no-store too: a stream opened with ?token= has no Authorization header to keep shared caches off it.
  'cache-control': 'no-cache, no-store, no-transform',
  'x-content-type-options': 'nosniff',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
});

/** Starts an SSE response (status 200 and SSE_HEADERS) and flushes the headers. */
export function startSse(res: ServerResponse, headers?: Record<string, string>): void {
  res.writeHead(200, { ...SSE_HEADERS, ...headers });
  res.flushHeaders();
}

/**
 * Formats one SSE frame: `id:` (optional), `event:`, one `data:` line per line of `data`
 * (a string is sent as is; anything else as JSON), then a blank line.
 */
export function formatSse(event: string, data: unknown, id?: string | number): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  let frame = id === undefined ? '' : `id: ${id}\n`;
  frame += `event: ${event}\n`;
  if (text.indexOf('\n') === -1 && text.indexOf('\r') === -1) {
    frame += `data: ${text}\n\n`;
  } else {
    for (const line of text.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
    frame += '\n';
  }
  return frame;
}

/** An SSE comment (heartbeat); ignored by clients. */
export function formatSseComment(text = ''): string {
  return `: ${text.replace(/[\r\n]+/g, ' ')}\n\n`;
}

/**
 * `o` as a bare origin, normalised as browsers send it (`HTTPS://App.Example.com:443/` is
 * `https://app.example.com`), or undefined when it is not one: no scheme (`app.example.com`),
 * `null`, a path, a query, a fragment or credentials. Shared by `allowedOrigins` and
 * `turnstate serve --allow-origin`.
 */
export function parseOrigin(o: string): string | undefined {
  // scheme://host[:port] and at most a trailing slash: no path (not even `/.`), query, fragment or `user@`.
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#@]+\/?$/i.test(o)) return undefined;
  let url: URL;
  try {
    url = new URL(o);
  } catch {
    return undefined;
  }
  // A scheme without an origin (`chrome-extension:`, `file:`) has the origin "null".
  return url.origin !== 'null' && url.origin === `${url.protocol}//${url.host}` ? url.origin : undefined;
}
