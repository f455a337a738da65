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
import { timerMsProblem } from '../limits.js';
import { HttpError, clientErrorResponse, rejectUpgrade, requestUrl, sendError, sendJson } from './http.js';
import type { HttpTransport } from './types.js';

export interface StartServerOptions {
  runtime: SessionRuntime;
  transports: HttpTransport[];
  /** 0 picks a free port (default 8787). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /**
   * Host names (no port) requests may carry in `Host` besides the loopback ones; `'*'` for any.
   * Default: none more when bound to a loopback address, any otherwise.
   */
  allowedHosts?: readonly string[] | '*';
  /** Close the runtime after the transports on `close()` (default true). */
  closeRuntime?: boolean;
  /** Grace period for open connections on close before they are destroyed (default 5000 ms; an integer from 0 to MAX_TIMER_MS). */
  closeTimeoutMs?: number;
}

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  readonly host: string;
  /** `http://host:port` */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens. */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  // Checked before the server listens: NaN or a value past a timer's range would destroy open connections after 1 ms.
  const closeTimeout = timerMsProblem('closeTimeoutMs', opts.closeTimeoutMs, 0);
  if (closeTimeout !== undefined) throw new TypeError(`startServer: ${closeTimeout}`);
  const transports = opts.transports;
  const host = opts.host ?? '127.0.0.1';
  let closing: Promise<void> | undefined;

  const hostProblem = hostCheck(host, opts.allowedHosts);

  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
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

  const server = createServer((req, res) => {
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
      `this server does not answer to host "${header}": bound to ${bound}, it answers to localhost, 127.0.0.1 and [::1]` +
        `${extra.size > 1 ? ` and ${[...extra].filter((h) => h !== bound.toLowerCase()).join(', ')}` : ''}` +
        ' (a page reached through another name could be another site; add the name with allowedHosts / --allow-host)',
    );
  };
}
