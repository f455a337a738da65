/**
 * Composes HttpTransports on one node:http server: each request goes to the transports in
 * order until one handles it (else 404 JSON); WebSocket upgrades go to the first transport
 * whose `upgrade` accepts the path (else the socket is refused with 404).
 *
 * Contract: a request or upgrade whose `Host` names a host the server does not answer to is
 * refused with 403 `host.forbidden` before any transport sees it (DNS rebinding: a page of
 * another site reached through a name that resolves to this machine). Bound to a loopback
 * address, the server answers to `localhost`, `*.localhost`, `127.0.0.1`, `[::1]` and
 * `allowedHosts`; bound elsewhere, to any host unless `allowedHosts` is given.
 *
 * `close()` stops accepting connections, closes every transport (which flushes what
 * it accepted and ends its streams), then the runtime (`closeRuntime`, default true), and
 * resolves once the server is closed. It is idempotent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SessionRuntime } from '../api.js';
import { TurnstateError } from '../errors.js';
import { formatValue, timerMsProblem } from '../limits.js';
import { unknownOptionProblem } from '../registries/registry.js';
import { HttpError, clientErrorResponse, rejectUpgrade, requestUrl, sendError, sendJson } from './http.js';
import type { HttpTransport } from './types.js';

export interface StartServerOptions {
  runtime: SessionRuntime;
  transports: HttpTransport[];
  /** 0 picks a free port (default 8787). */
  port?: number | undefined;
  /** Default 127.0.0.1. */
  host?: string | undefined;
  /**
   * Host names (no port) requests may carry in `Host` besides the loopback ones; `'*'` for any.
   * Default: none more when bound to a loopback address, any otherwise.
   */
  allowedHosts?: readonly string[] | '*' | undefined;
  /** Close the runtime after the transports on `close()` (default true). */
  closeRuntime?: boolean | undefined;
  /** Grace period for open connections on close before they are destroyed (default 5000 ms; an integer from 0 to MAX_TIMER_MS). */
  closeTimeoutMs?: number | undefined;
  /**
   * Called once for every response the server answers with a 5xx status (a transport's or its
   * own), as it is sent: the method, the path without its query string (where `?token=` keys
   * ride), the status and the error body's code and message. For an operator's log (`turnstate
   * serve` writes one stderr line each); nothing is called for other responses. A hook that
   * throws is ignored.
   */
  onError?: ((event: ServerErrorEvent) => void) | undefined;
}

/** A 5xx response as `onError` sees it. */
export interface ServerErrorEvent {
  readonly method: string;
  /** The request path, without its query string. */
  readonly path: string;
  readonly status: number;
  /** The JSON error body's `error.code` (undefined when the body is not such an error). */
  readonly code: string | undefined;
  readonly message: string | undefined;
}

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  readonly host: string;
  /** `http://host:port` */
  readonly url: string;
  close(): Promise<void>;
}

/** Every option of StartServerOptions (the compiler keeps this list and the interface the same). */
const KNOWN: Readonly<Record<keyof StartServerOptions, true>> = {
  runtime: true,
  transports: true,
  port: true,
  host: true,
  allowedHosts: true,
  closeRuntime: true,
  closeTimeoutMs: true,
  onError: true,
};
const SERVER_OPTION_NAMES: readonly string[] = Object.freeze(Object.keys(KNOWN));

/** How long a client may take to send a request's headers, and the whole request (ms). */
export const HEADERS_TIMEOUT_MS = 20_000;
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Throws TurnstateError('options.invalid') naming the first option startServer cannot use, before
 * anything listens: a misspelt key (closeTimeoutMS) is refused naming the one it resembles, never
 * ignored; NaN or a value past a timer's range as closeTimeoutMs would destroy open connections
 * after 1 ms.
 */
function checkServerOptions(opts: StartServerOptions): void {
  const bad = (what: string) => new TurnstateError('options.invalid', `startServer: ${what}`);
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw bad(`options must be an object { runtime, transports, ... }, got ${formatValue(opts)}`);
  const unknown = unknownOptionProblem(opts, SERVER_OPTION_NAMES);
  if (unknown !== undefined) throw bad(unknown);
  const runtime = opts.runtime as unknown as { close?: unknown } | null | undefined;
  if (runtime === null || typeof runtime !== 'object' || typeof runtime.close !== 'function') throw bad('needs a `runtime` (createRuntime())');
  const transports = opts.transports as unknown;
  if (!Array.isArray(transports) || transports.some((t) => typeof (t as HttpTransport | null)?.handle !== 'function')) {
    throw bad(`\`transports\` must be an array of HttpTransports (each with a handle() method), got ${formatValue(transports)}`);
  }
  const port = opts.port as unknown;
  if (port !== undefined && !(Number.isInteger(port) && (port as number) >= 0 && (port as number) <= 65535)) throw bad(`\`port\` must be an integer from 0 to 65535 (0: a free port), got ${formatValue(port)}`);
  if (opts.host !== undefined && (typeof opts.host !== 'string' || opts.host === '')) throw bad(`\`host\` must be a non-empty string, got ${formatValue(opts.host)}`);
  const hosts = opts.allowedHosts as unknown;
  if (hosts !== undefined && hosts !== '*' && !(Array.isArray(hosts) && hosts.every((h) => typeof h === 'string' && h !== ''))) {
    throw bad(`\`allowedHosts\` must be an array of host names or '*', got ${formatValue(hosts)}`);
  }
  if (opts.closeRuntime !== undefined && typeof opts.closeRuntime !== 'boolean') throw bad(`\`closeRuntime\` must be a boolean, got ${formatValue(opts.closeRuntime)}`);
  const closeTimeout = timerMsProblem('closeTimeoutMs', opts.closeTimeoutMs, 0);
  if (closeTimeout !== undefined) throw bad(closeTimeout);
  if (opts.onError !== undefined && typeof opts.onError !== 'function') throw bad(`\`onError\` must be a function, got ${formatValue(opts.onError)}`);
}

/** Calls `onError` once if `res` is ended with a 5xx status, with the code and message of its JSON error body. */
function reportServerErrors(req: IncomingMessage, res: ServerResponse, onError: (event: ServerErrorEvent) => void): void {
  const end = res.end;
  let reported = false;
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    if (!reported && res.statusCode >= 500) {
      reported = true;
      const chunk = args[0];
      let code: string | undefined;
      let message: string | undefined;
      if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) {
        try {
          const err = (JSON.parse(chunk.toString()) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
          if (typeof err?.code === 'string') code = err.code;
          if (typeof err?.message === 'string') message = err.message;
        } catch {
          // Not a JSON error body: the status alone.
        }
      }
      let path = (req.url ?? '/').split('?')[0]!;
      try {
        path = requestUrl(req).pathname;
      } catch {
        // A target that is not a path: as received, without its query.
      }
      try {
        onError({ method: req.method ?? 'GET', path, status: res.statusCode, code, message });
      } catch {
        // An operator's hook must not break the response.
      }
    }
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof res.end;
}

/** Starts the server; resolves once it listens. Its options are checked first (checkServerOptions). */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  checkServerOptions(opts);
  const transports = opts.transports;
  const host = opts.host ?? '127.0.0.1';
  let closing: Promise<void> | undefined;

  const hostProblem = hostCheck(host, opts.allowedHosts);

  const onError = opts.onError;
  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (onError !== undefined) reportServerErrors(req, res, onError);
    if (closing !== undefined) res.shouldKeepAlive = false;
    try {
      const refused = hostProblem(req);
      if (refused !== undefined) {
        req.resume();
        throw refused;
      }
      for (const t of transports) {
        if (await t.handle(req, res)) return;
      }
      req.resume();
      sendError(res, new HttpError(404, 'route.not_found', `no route for ${req.method ?? 'GET'} ${requestUrl(req).pathname}`));
    } catch (err) {
      if (!res.headersSent) sendError(res, err);
      else if (!res.writableEnded) res.end();
    }
  };

  // A request is read within these (Node's defaults are 60 s for the headers and 300 s for the
  // whole request): a client that trickles its headers or body in cannot hold a socket for
  // minutes. The limits cover receiving the request only; a streamed response runs on.
  const server = createServer({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS }, (req, res) => {
    void onRequest(req, res);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node hands the socket over without an error listener: a client's reset during a refusal
    // would be an unhandled 'error' event, which ends the process. The WebSocket library adds its own.
    socket.on('error', () => socket.destroy());
    try {
      const refused = hostProblem(req);
      if (refused !== undefined) return rejectUpgrade(socket, refused.status, refused.code, refused.message);
      for (const t of transports) {
        if (t.upgrade !== undefined && t.upgrade(req, socket, head)) return;
      }
      rejectUpgrade(socket, 404, 'route.not_found', `no WebSocket endpoint at ${requestUrl(req).pathname}`);
    } catch (err) {
      // An upgrade no transport could handle is refused; the server carries on.
      const e = err instanceof HttpError ? err : new HttpError(400, 'request.invalid', 'the upgrade request could not be handled');
      rejectUpgrade(socket, e.status, e.code, e.message);
    }
  });
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    const response = socket.writable ? clientErrorResponse(err) : undefined;
    if (response === undefined) socket.destroy();
    else socket.end(response);
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error): void => reject(e);
    server.once('error', onError);
    server.listen(opts.port ?? 8787, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const close = (): Promise<void> => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await Promise.allSettled(transports.map((t) => t.close()));
      const timer = setTimeout(() => server.closeAllConnections(), opts.closeTimeoutMs ?? 5000);
      timer.unref();
      // Keep-alive connections turn idle as their last responses finish: close them as they do.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 25);
      sweep.unref();
      await closed;
      clearTimeout(timer);
      clearInterval(sweep);
      if (opts.closeRuntime !== false) await opts.runtime.close();
    })();
    return closing;
  };

  return { server, port: address.port, host: address.address, url: `http://${shownHost}:${address.port}`, close };
}

/** A transport answering `GET /healthz` with `{ ok: true }` (for process supervisors and tests). */
export function healthTransport(): HttpTransport {
  return {
    name: 'health',
    async handle(req, res) {
      if (req.method !== 'GET' || requestUrl(req).pathname !== '/healthz') return false;
      sendJson(res, 200, { ok: true });
      return true;
    },
    async close() {},
  };
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host.endsWith('.localhost');
}

/** The hostname of a `Host` header (lower case, IPv6 in brackets), without its port. */
function hostnameOf(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end === -1 ? h : h.slice(0, end + 1);
  }
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

/** What refuses a request whose `Host` the server does not answer to (see the contract above). */
function hostCheck(bound: string, allowed: readonly string[] | '*' | undefined): (req: IncomingMessage) => HttpError | undefined {
  if (allowed === '*' || (allowed === undefined && !isLoopback(bound))) return () => undefined;
  const extra = new Set((allowed ?? []).map((h) => h.toLowerCase()));
  extra.add(bound.toLowerCase());
  return (req) => {
    const header = req.headers.host;
    // No Host: not a browser (HTTP/1.0 tools); a browser always sends the name it resolved.
    if (header === undefined || header === '') return undefined;
    const name = hostnameOf(header);
    if (isLoopback(name) || extra.has(name)) return undefined;
    return new HttpError(
      403,
      'host.forbidden',
      `this server does not answer to host "${header}": bound to ${bound}, it answers to localhost, *.localhost, 127.0.0.1 and [::1]` +
        `${extra.size > 1 ? ` and ${[...extra].filter((h) => h !== bound.toLowerCase()).join(', ')}` : ''}` +
        ' (a page reached through another name could be another site; add the name with allowedHosts / --allow-host)',
    );
  };
}
