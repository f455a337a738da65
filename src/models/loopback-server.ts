/**
 * A loopback server that speaks the Anthropic Messages API (`POST /v1/messages`, JSON and SSE
 * streaming) from a script. Tests, demos and benchmarks point the real `@anthropic-ai/sdk` at it
 * (`baseURL: server.url`) to run offline. Every request received is recorded (secrets removed).
 *
 * Each request consumes the next scripted turn; when the queue is empty the `fallback` answers,
 * and without one the request gets a 400 naming the exhausted script.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One content block of a scripted reply. */
export type LoopbackBlock =
  | { type: 'text'; text: string }
  /** `rawInput` replaces `JSON.stringify(input)` as the streamed JSON (invalid or hand-escaped JSON). */
  | { type: 'tool_use'; name: string; input?: unknown; id?: string; rawInput?: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/**
 * How streamed text and tool input are cut into deltas: a fixed chunk size, explicit cut offsets
 * (UTF-16 indexes into the string), or a seeded random splitter.
 */
export type LoopbackSplit = number | number[] | { seed: number; maxChunk?: number };

export interface LoopbackUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** A successful reply, with optional stream faults. */
export interface LoopbackReply {
  content: LoopbackBlock[];
  /** Default `tool_use` when a tool_use block is present, else `end_turn`. */
  stopReason?: string;
  usage?: LoopbackUsage;
  split?: LoopbackSplit;
  /** Send a `ping` after every N events (default 10; 0 disables). One always follows message_start unless 0. */
  pingEvery?: number;
  /** Wait before sending the response headers. */
  delayMs?: number;
  /** Wait between SSE events. */
  eventDelayMs?: number;
  /** Send an in-stream `error` event after this many events and end the stream (at or beyond the last frame: after message_stop). */
  streamError?: { afterEvents: number; type?: string; message?: string };
  /** Destroy the connection after this many events (at or beyond the last frame: after message_stop, without a clean end). */
  dropAfterEvents?: number;
  /** Stop sending after this many events and keep the connection open (until the client goes). */
  stallAfterEvents?: number;
  model?: string;
  id?: string;
}

/** An HTTP error response. */
export interface LoopbackFailure {
  status: number;
  /** API error type (default derived from the status). */
  type?: string;
  message?: string;
  /** `retry-after` header, seconds. */
  retryAfter?: number;
  /** `retry-after-ms` header. */
  retryAfterMs?: number;
  delayMs?: number;
}

export type LoopbackTurn = LoopbackReply | { fail: LoopbackFailure };
export type LoopbackResponder = (request: RecordedRequest) => LoopbackTurn;

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names; `x-api-key` and `authorization` are removed (see `auth`). */
  headers: Record<string, string>;
  /** Which credential header the client sent, without its value. */
  auth: 'x-api-key' | 'bearer' | 'none';
  /** The parsed JSON body (undefined when it did not parse; see `rawBody`). */
  body: any;
  rawBody: string;
  /** Index of the scripted turn that answered (-1 for the fallback or an exhausted script). */
  turn: number;
  receivedAt: number;
}

export interface LoopbackServerOptions {
  script?: LoopbackTurn[];
  fallback?: LoopbackTurn | LoopbackResponder;
  host?: string;
  port?: number;
  /** Keep at most this many recorded requests (oldest dropped first; default unbounded). */
  maxRecorded?: number;
  /** Record requests at all (default true; benchmarks turn it off). */
  record?: boolean;
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
    const content = reply.content.map((b, i) => finalBlock(b, i));
    const usage = usageOf(reply, content);
    const msg = {
      id: messageId(reply),
      type: 'message',
      role: 'assistant',
      model: reply.model ?? body.model ?? 'loopback',
      content,
      stop_reason: stopReasonOf(reply),
      stop_sequence: null,
      usage: {
        input_tokens: usage.inputTokens,
        output_tokens: usage.outputTokens,
        cache_creation_input_tokens: usage.cacheWriteTokens,
        cache_read_input_tokens: usage.cacheReadTokens,
      },
    };
    const text = JSON.stringify(msg);
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
    let i = 0;
    let sent = 0;
    const step = (): void => {
      if (res.destroyed) return;
      let out = '';
      while (i < frames.length) {
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
          out += frame('error', { type: 'error', error: { type: err.type ?? 'overloaded_error', message: err.message ?? 'Overloaded' } });
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
        out += frame('error', { type: 'error', error: { type: err.type ?? 'overloaded_error', message: err.message ?? 'Overloaded' } });
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

/* ------------------------------------------------------------------ frames */

let toolCounter = 0;

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The SSE frames of one reply, in Messages API order (pings interleaved). */
export function buildFrames(reply: LoopbackReply, body: { model?: unknown } | undefined, id: string): string[] {
  const out: string[] = [];
  const pingEvery = reply.pingEvery ?? 10;
  const content = reply.content.map((b, i) => finalBlock(b, i));
  const usage = usageOf(reply, content);
  const split = splitter(reply.split);
  const push = (event: string, data: unknown) => {
    out.push(frame(event, data));
    if (pingEvery > 0 && out.length % pingEvery === 0) out.push(frame('ping', { type: 'ping' }));
  };
  out.push(
    frame('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: reply.model ?? (typeof body?.model === 'string' ? body.model : 'loopback'),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.inputTokens,
          output_tokens: 1,
          cache_creation_input_tokens: usage.cacheWriteTokens,
          cache_read_input_tokens: usage.cacheReadTokens,
        },
      },
    }),
  );
  if (pingEvery > 0) out.push(frame('ping', { type: 'ping' }));
  reply.content.forEach((b, index) => {
    switch (b.type) {
      case 'text':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        for (const t of split(b.text)) push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
        break;
      case 'tool_use': {
        const block = content[index] as { id: string };
        push('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: block.id, name: b.name, input: {} },
        });
        const json = b.rawInput ?? JSON.stringify(b.input ?? {});
        for (const c of split(json)) {
          push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: c } });
        }
        break;
      }
      case 'thinking':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        for (const t of split(b.thinking)) push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: t } });
        push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } });
        break;
      case 'redacted_thinking':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: b.data } });
        break;
    }
    push('content_block_stop', { type: 'content_block_stop', index });
  });
  push('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReasonOf(reply), stop_sequence: null },
    usage: {
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      cache_creation_input_tokens: usage.cacheWriteTokens,
      cache_read_input_tokens: usage.cacheReadTokens,
    },
  });
  out.push(frame('message_stop', { type: 'message_stop' }));
  return out;
}

function finalBlock(b: LoopbackBlock, index: number): Record<string, unknown> {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text, citations: null };
    case 'tool_use': {
      let input: unknown = b.input ?? {};
      if (b.rawInput !== undefined) {
        try {
          input = JSON.parse(b.rawInput);
        } catch {
          input = {};
        }
      }
      return { type: 'tool_use', id: b.id ?? `toolu_loopback_${++toolCounter}_${index}`, name: b.name, input };
    }
    case 'thinking':
      return { type: 'thinking', thinking: b.thinking, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
  }
}

function stopReasonOf(reply: LoopbackReply): string {
  return reply.stopReason ?? (reply.content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
}

function usageOf(reply: LoopbackReply, content: Record<string, unknown>[]): Required<LoopbackUsage> {
  const u = reply.usage ?? {};
  return {
    inputTokens: u.inputTokens ?? 10,
    outputTokens: u.outputTokens ?? Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
    cacheReadTokens: u.cacheReadTokens ?? 0,
    cacheWriteTokens: u.cacheWriteTokens ?? 0,
  };
}

/** Cuts a string into chunks per the split spec; at least one chunk (possibly empty). */
export function splitter(spec: LoopbackSplit | undefined): (s: string) => string[] {
  if (spec === undefined) return (s) => chunkBySize(s, 16);
  if (typeof spec === 'number') return (s) => chunkBySize(s, Math.max(1, Math.floor(spec)));
  if (Array.isArray(spec)) {
    const cuts = [...spec].sort((a, b) => a - b);
    return (s) => {
      const out: string[] = [];
      let from = 0;
      for (const c of cuts) {
        if (c <= from || c >= s.length) continue;
        out.push(s.slice(from, c));
        from = c;
      }
      out.push(s.slice(from));
      return out;
    };
  }
  const maxChunk = Math.max(1, spec.maxChunk ?? 12);
  let state = spec.seed >>> 0;
  const rand = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (s) => {
    const out: string[] = [];
    let from = 0;
    while (from < s.length) {
      const n = 1 + Math.floor(rand() * maxChunk);
      out.push(s.slice(from, from + n));
      from += n;
    }
    if (out.length === 0) out.push('');
    return out;
  };
}

function chunkBySize(s: string, n: number): string[] {
  if (s.length <= n) return [s];
  const out: string[] = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out;
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
