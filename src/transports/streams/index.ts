/**
 * The streams transport: live session events over SSE (`GET /sessions/{id}/events`) and
 * WebSocket (`/ws`, subprotocol `turnstate.v1`), plus the demo page's static files.
 *
 * Contract: both are projections of `SessionHandle.events(afterSeq)` under the part type
 * registry's `streaming` delivery rules; both authenticate with the same hook, show a principal
 * only sessions of its own tenant, bound every subscriber's buffered bytes, and resume exactly
 * after a seq. `close()` ends SSE responses and closes WebSockets with 1001.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { SessionRuntime } from '../../api.js';
import { TurnstateError } from '../../errors.js';
import { HttpError, Router, parseOrigin, requestUrl, sendError } from '../http.js';
import type { Authenticate, HttpTransport } from '../types.js';
import { createDelivery } from '../../envelope/delivery.js';
import { MIN_HEARTBEAT_MS, formatValue, integerProblem, timerMsProblem } from '../../limits.js';
import { unknownOptionProblem } from '../../registries/registry.js';
import { createEventCodec } from './codec.js';
import type { StreamConnection, StreamsContext } from './context.js';
import { serveSse, serverClosing } from './sse.js';
import { createStaticFiles } from './static.js';
import { createWebSocketEndpoint } from './websocket.js';
import { SUBPROTOCOL } from './frames.js';

export { SUBPROTOCOL, CloseCode, SLOW_CONSUMER_REASON, parseClientFrame } from './frames.js';
export type { ClientFrame, FrameResult, ServerFrame } from './frames.js';

export interface StreamsTransportOptions {
  runtime: SessionRuntime;
  /** Decides who is calling; EventSource cannot send headers, so it may read a cookie or `?token=`. */
  authenticate?: Authenticate | undefined;
  /** Directory served at `/` (the demo page). Omit to serve no files. */
  webRoot?: string | undefined;
  /** Per subscriber: bytes queued plus buffered in the socket (default 1 MiB; an integer of at least 1). */
  maxBufferedBytes?: number | undefined;
  /** SSE comment / WebSocket heartbeat interval (default 15 000 ms; an integer from 100 to MAX_TIMER_MS). */
  heartbeatMs?: number | undefined;
  /** SSE `retry:` (default 2 000 ms; an integer from 1 to MAX_TIMER_MS). */
  retryMs?: number | undefined;
  /** Largest WebSocket client frame (default 64 KiB; an integer of at least 1); 16 times this closes the connection with 1009. */
  maxFrameBytes?: number | undefined;
  /**
   * Open event streams (SSE streams and WebSocket connections together) one authenticated
   * principal (tenant and user) may hold at once (default 256; an integer of at least 1); one more
   * is refused with 429 `streams.too_many`. Without an `authenticate` hook every client is the same
   * anonymous principal, so no such limit applies (bound connections at a proxy instead).
   */
  maxStreamsPerPrincipal?: number | undefined;
  /**
   * Browser origins (`https://app.example.com`) whose pages may open `/ws`, besides the server's
   * own origin; `'*'` allows any. A WebSocket is not covered by CORS: without this check a page
   * on any site could open one with the user's cookies. An upgrade whose `Origin` is neither the
   * server's own (its `Host`) nor listed is refused with 403. Clients that send no `Origin`
   * (servers, CLIs) are not browsers and are let through to the authentication hook.
   */
  allowedOrigins?: readonly string[] | '*' | undefined;
}

export interface StreamsStats {
  sse: number;
  websocket: number;
  /** Bytes held right now, per connection. */
  heldBytes: number[];
  /** The highest held byte count any connection, open or closed, has reached. */
  peakHeldBytes: number;
  slowDisconnects: number;
}

export interface StreamsTransport extends HttpTransport {
  stats(): StreamsStats;
}

/** Every option of StreamsTransportOptions (the compiler keeps this list and the interface the same). */
const KNOWN: Readonly<Record<keyof StreamsTransportOptions, true>> = {
  runtime: true,
  authenticate: true,
  webRoot: true,
  maxBufferedBytes: true,
  heartbeatMs: true,
  retryMs: true,
  maxFrameBytes: true,
  maxStreamsPerPrincipal: true,
  allowedOrigins: true,
};
const STREAMS_OPTION_NAMES: readonly string[] = Object.freeze(Object.keys(KNOWN));

/** The refusal of an option createStreamsTransport cannot use (`what` names it). */
const invalidOption = (what: string): TurnstateError => new TurnstateError('options.invalid', `createStreamsTransport: ${what}`);

export function createStreamsTransport(opts: StreamsTransportOptions): StreamsTransport {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw invalidOption(`options must be an object { runtime, ... }, got ${formatValue(opts)}`);
  // A misspelt option (heartbeatMS) is refused naming the one it resembles, never ignored.
  const unknown = unknownOptionProblem(opts, STREAMS_OPTION_NAMES);
  if (unknown !== undefined) throw invalidOption(unknown);
  const runtime = opts.runtime as unknown as { session?: unknown; registries?: { partTypes?: unknown } } | null | undefined;
  if (runtime === null || typeof runtime !== 'object' || typeof runtime.session !== 'function' || typeof runtime.registries?.partTypes !== 'object') {
    throw invalidOption('needs a `runtime` (createRuntime())');
  }
  const ctx: StreamsContext = {
    runtime: opts.runtime,
    authenticate: opts.authenticate,
    codec: createEventCodec(createDelivery(opts.runtime.registries.partTypes)),
    limits: {
      maxBufferedBytes: checked(opts.maxBufferedBytes, integerProblem('maxBufferedBytes', opts.maxBufferedBytes, 1)) ?? 1024 * 1024,
      heartbeatMs: checked(opts.heartbeatMs, timerMsProblem('heartbeatMs', opts.heartbeatMs, MIN_HEARTBEAT_MS)) ?? 15_000,
      // The SSE `retry:` field takes digits only; the browser waits that long before reconnecting.
      retryMs: checked(opts.retryMs, timerMsProblem('retryMs', opts.retryMs, 1)) ?? 2_000,
      maxFrameBytes: checked(opts.maxFrameBytes, integerProblem('maxFrameBytes', opts.maxFrameBytes, 1)) ?? 64 * 1024,
      maxStreamsPerPrincipal: checked(opts.maxStreamsPerPrincipal, integerProblem('maxStreamsPerPrincipal', opts.maxStreamsPerPrincipal, 1)) ?? 256,
    },
    streamsOf: new Map(),
    allowedOrigins: originPolicy(opts.allowedOrigins),
    connections: new Set<StreamConnection>(),
    hubs: new Map(),
    counters: { slowDisconnects: 0, closedPeakHeldBytes: 0 },
  };
  const ws = createWebSocketEndpoint(ctx);
  const files = opts.webRoot === undefined ? undefined : createStaticFiles(opts.webRoot);
  const router = new Router<{ req: IncomingMessage; res: ServerResponse }>()
    .add('GET', '/sessions/:id/events', ({ req, res }, params) => serveSse(ctx, req, res, params.id!, () => closed))
    .add('GET', '/ws', ({ res }) => {
      sendError(
        res,
        new HttpError(426, 'upgrade.required', `/ws is a WebSocket endpoint (subprotocol '${SUBPROTOCOL}')`, {
          headers: { upgrade: 'websocket' },
        }),
      );
    });

  let closed = false;
  const timer = setInterval(() => {
    const now = Date.now();
    for (const c of ctx.connections) c.heartbeat(now);
  }, ctx.limits.heartbeatMs);
  timer.unref();

  return {
    name: 'streams',

    async handle(req, res) {
      const pathname = requestUrl(req).pathname;
      const m = router.match(req.method ?? 'GET', pathname);
      if (m.kind === 'method-not-allowed') {
        sendError(res, new HttpError(405, 'method.not_allowed', `${req.method} is not allowed on ${pathname}`, { headers: { allow: m.allow.join(', ') } }));
        return true;
      }
      if (m.kind === 'found') {
        if (closed) {
          sendError(res, serverClosing());
          return true;
        }
        try {
          await m.handler({ req, res }, m.params);
        } catch (e) {
          sendError(res, e);
        }
        return true;
      }
      if (files !== undefined) return files(req, res, pathname);
      return false;
    },

    upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
      if (requestUrl(req).pathname !== '/ws') return false;
      ws.upgrade(req, socket, head);
      return true;
    },

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      ws.close();
      for (const c of [...ctx.connections]) c.shutdown();
    },

    stats() {
      let nSse = 0;
      let nWs = 0;
      let peak = ctx.counters.closedPeakHeldBytes;
      const held: number[] = [];
      for (const c of ctx.connections) {
        if (c.kind === 'sse') nSse++;
        else nWs++;
        held.push(c.heldBytes());
        peak = Math.max(peak, c.peakHeldBytes());
      }
      return { sse: nSse, websocket: nWs, heldBytes: held, peakHeldBytes: peak, slowDisconnects: ctx.counters.slowDisconnects };
    },
  };
}

/** `v`, or the refusal stating `problem` (the option's, from limits.ts). */
function checked(v: number | undefined, problem: string | undefined): number | undefined {
  if (problem !== undefined) throw invalidOption(problem);
  return v;
}

/** Validates `allowedOrigins` once: each entry must be a bare origin. */
function originPolicy(allowed: readonly string[] | '*' | undefined): ReadonlySet<string> | '*' {
  if (allowed === '*') return '*';
  if (allowed === undefined) return new Set();
  if (!Array.isArray(allowed)) throw invalidOption(`allowedOrigins must be an array of origins or '*', got ${formatValue(allowed)}`);
  const out = new Set<string>();
  for (const o of allowed) {
    const origin = parseOrigin(String(o));
    if (origin === undefined) {
      throw invalidOption(`allowedOrigins: ${formatValue(o)} is not an origin (scheme://host[:port], no path), e.g. "https://app.example.com"`);
    }
    out.add(origin);
  }
  return out;
}
