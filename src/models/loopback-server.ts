/**
 * A loopback server that speaks the Anthropic Messages API (`POST /v1/messages`, JSON and SSE
 * streaming) from a script. Tests, demos and benchmarks point the real `@anthropic-ai/sdk` at it
 * (`baseURL: server.url`) to run offline. Every request received is recorded (secrets removed).
 *
 * A request that breaks one of the API's request rules (loopback-checks.ts) gets the API's 400
 * and consumes no turn. Each request consumes the next scripted turn; when the queue is empty the `fallback` answers,
 * and without one the request gets a 400 naming the exhausted script.
 *
 * This module is the HTTP side (routing, the queue, recording, writing the SSE frames with the
 * reply's faults); the script's types are loopback-script.ts's, a reply's frames loopback-frames.ts's.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requestProblem } from './loopback-checks.js';
import { PING_FRAME, buildFrames, errorFrame, messageBody } from './loopback-frames.js';
import type { LoopbackFailure, LoopbackReply, LoopbackResponder, LoopbackTurn, RecordedRequest } from './loopback-script.js';

export type {
  LoopbackBlock,
  LoopbackFailure,
  LoopbackReply,
  LoopbackResponder,
  LoopbackSplit,
  LoopbackTurn,
  LoopbackUsage,
  RecordedRequest,
} from './loopback-script.js';

export interface LoopbackServerOptions {
  script?: LoopbackTurn[] | undefined;
  fallback?: LoopbackTurn | LoopbackResponder | undefined;
  host?: string | undefined;
  port?: number | undefined;
  /** Keep at most this many recorded requests (oldest dropped first; default unbounded). */
  maxRecorded?: number | undefined;
  /** Record requests at all (default true; benchmarks turn it off). */
  record?: boolean | undefined;
}

export interface LoopbackMessagesServer {
  /** Base URL for the SDK's `baseURL` (no trailing slash, no `/v1`). */
  url: string;
  requests: RecordedRequest[];
  /** Replace the queue of scripted turns. */
  setScript(turns: LoopbackTurn[]): void;
  /** Append turns to the queue. */
  push(...turns: LoopbackTurn[]): void;
  /** Turns still queued. */
  readonly pending: number;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export async function startLoopbackMessagesServer(opts: LoopbackServerOptions = {}): Promise<LoopbackMessagesServer> {
  let queue: LoopbackTurn[] = [...(opts.script ?? [])];
  let served = 0;
  const record = opts.record !== false;
  const requests: RecordedRequest[] = [];
  let msgCounter = 0;

  const server: Server = createServer((req, res) => {
    readBody(req).then(
      (raw) => handle(req, res, raw),
      () => res.destroy(),
    );
  });

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    let body: any;
    try {
      body = raw.length > 0 ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const rec: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      headers: scrubHeaders(req),
      auth: req.headers['x-api-key'] !== undefined ? 'x-api-key' : req.headers.authorization !== undefined ? 'bearer' : 'none',
      body,
      rawBody: raw,
      turn: -1,
      receivedAt: Date.now(),
    };
    if (record) {
      requests.push(rec);
      if (opts.maxRecorded !== undefined && requests.length > opts.maxRecorded) requests.shift();
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      sendError(res, { status: 404, message: `loopback server: no route for ${req.method} ${path}` });
      return;
    }
    if (body === undefined || typeof body !== 'object') {
      sendError(res, { status: 400, message: 'loopback server: the request body is not a JSON object' });
      return;
    }
    const problem = requestProblem(body as Parameters<typeof requestProblem>[0]);
    if (problem !== undefined) {
      sendError(res, { status: 400, message: problem });
      return;
    }
    let turn: LoopbackTurn | undefined;
    const next = queue.shift();
    if (next !== undefined) {
      turn = next;
      rec.turn = served++;
    } else if (typeof opts.fallback === 'function') {
      try {
        turn = opts.fallback(rec);
      } catch (err) {
        sendError(res, { status: 500, message: `loopback server: the fallback threw: ${(err as Error)?.message ?? String(err)}` });
        return;
      }
    } else {
      turn = opts.fallback;
    }
    if (turn === undefined) {
      sendError(res, { status: 400, message: `loopback server: script exhausted after ${served} turn(s); queue more with push()` });
      return;
    }
    if ('fail' in turn) {
      const f = turn.fail;
      if (f.delayMs !== undefined && f.delayMs > 0) setTimeout(() => sendError(res, f), f.delayMs);
      else sendError(res, f);
      return;
    }
    const reply = turn;
    const go = () => (body.stream === true ? streamReply(res, reply, body) : jsonReply(res, reply, body));
    if (reply.delayMs !== undefined && reply.delayMs > 0) setTimeout(go, reply.delayMs);
    else go();
  }

  function messageId(reply: LoopbackReply): string {
    return reply.id ?? `msg_loopback_${++msgCounter}`;
  }

  function jsonReply(res: ServerResponse, reply: LoopbackReply, body: any): void {
    const text = JSON.stringify(messageBody(reply, body, messageId(reply)));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': `req_loopback_${msgCounter}` });
    res.end(text);
  }

  // A reply whose ids are all fixed streams the same frames every time: build them once.
  const frameCache = new WeakMap<LoopbackReply, { model: unknown; frames: string[] }>();
  function framesFor(reply: LoopbackReply, body: any): string[] {
    const fixed = reply.id !== undefined && reply.content.every((b) => b.type !== 'tool_use' || b.id !== undefined);
    if (!fixed) return buildFrames(reply, body, messageId(reply));
    const hit = frameCache.get(reply);
    if (hit !== undefined && hit.model === body.model) return hit.frames;
    const frames = buildFrames(reply, body, messageId(reply));
    frameCache.set(reply, { model: body.model, frames });
    return frames;
  }

  function streamReply(res: ServerResponse, reply: LoopbackReply, body: any): void {
    const frames = framesFor(reply, body);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'request-id': `req_loopback_${msgCounter}`,
    });
    const drop = reply.dropAfterEvents;
    const stall = reply.stallAfterEvents;
    const err = reply.streamError;
    const delay = reply.eventDelayMs ?? 0;
    let pause = reply.pause;
    let i = 0;
    let sent = 0;
    const step = (): void => {
      if (res.destroyed) return;
      let out = '';
      while (i < frames.length) {
        if (pause !== undefined && sent >= pause.afterEvents) {
          if (out.length > 0) res.write(out);
          const { ms, pingEveryMs } = pause;
          pause = undefined;
          const pinger = pingEveryMs === undefined ? undefined : setInterval(() => res.destroyed || res.write(PING_FRAME), pingEveryMs);
          setTimeout(() => {
            if (pinger !== undefined) clearInterval(pinger);
            step();
          }, ms);
          return;
        }
        if (drop !== undefined && sent >= drop) {
          if (out.length > 0) res.write(out);
          // Flush what was written, then cut the connection without a clean end.
          setImmediate(() => res.socket?.destroy());
          return;
        }
        if (stall !== undefined && sent >= stall) {
          if (out.length > 0) res.write(out);
          return;
        }
        if (err !== undefined && sent >= err.afterEvents) {
          out += errorFrame(err);
          res.end(out);
          return;
        }
        out += frames[i++];
        sent++;
        if (delay > 0) {
          res.write(out);
          out = '';
          setTimeout(step, delay);
          return;
        }
      }
      // Faults placed at or beyond the last frame happen after message_stop.
      if (err !== undefined) {
        out += errorFrame(err);
      }
      if (drop !== undefined) {
        if (out.length > 0) res.write(out);
        setImmediate(() => res.socket?.destroy());
        return;
      }
      res.end(out);
    };
    step();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;

  return {
    url: `http://${host}:${addr.port}`,
    requests,
    setScript(turns) {
      queue = [...turns];
    },
    push(...turns) {
      queue.push(...turns);
    },
    get pending() {
      return queue.length;
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/* ------------------------------------------------------------------ http helpers */

function sendError(res: ServerResponse, f: LoopbackFailure): void {
  const type = f.type ?? ERROR_TYPES[f.status] ?? (f.status >= 500 ? 'api_error' : 'invalid_request_error');
  const text = JSON.stringify({ type: 'error', error: { type, message: f.message ?? type }, request_id: 'req_loopback_error' });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': 'req_loopback_error',
  };
  if (f.retryAfter !== undefined) headers['retry-after'] = String(f.retryAfter);
  if (f.retryAfterMs !== undefined) headers['retry-after-ms'] = String(f.retryAfterMs);
  if (f.shouldRetry !== undefined) headers['x-should-retry'] = String(f.shouldRetry);
  res.writeHead(f.status, headers);
  res.end(text);
}

function scrubHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (k === 'x-api-key' || k === 'authorization' || k === 'cookie' || v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
