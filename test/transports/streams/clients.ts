/** Real clients for the stream tests: a fetch-based SSE reader and a `ws` client. */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import WebSocket from 'ws';
import type { SessionEvent } from '../../../src/types.js';

export interface SseRead {
  status: number;
  headers: Headers;
  messages: EventSourceMessage[];
  comments: string[];
  retry: number | undefined;
  /** Raw body text when the response was not a stream. */
  body?: string;
  /** True when the server ended the stream (as opposed to the reader stopping). */
  ended: boolean;
}

/**
 * Reads an SSE response with fetch until `until` says stop (or the server ends it, or `timeoutMs`).
 * The messages are kept in arrival order.
 */
export async function readSse(
  url: string,
  opts: { headers?: Record<string, string>; until?: (m: EventSourceMessage[], comments: string[]) => boolean; timeoutMs?: number } = {},
): Promise<SseRead> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs ?? 5_000);
  const out: SseRead = { status: 0, headers: new Headers(), messages: [], comments: [], retry: undefined, ended: false };
  try {
    const res = await fetch(url, { headers: opts.headers ?? {}, signal: ac.signal });
    out.status = res.status;
    out.headers = res.headers;
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      out.body = await res.text();
      return out;
    }
    const parser = createParser({
      onEvent: (m) => out.messages.push(m),
      onComment: (c) => out.comments.push(c),
      onRetry: (r) => {
        out.retry = r;
      },
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      if (opts.until?.(out.messages, out.comments)) break;
      const { value, done } = await reader.read();
      if (done) {
        out.ended = true;
        break;
      }
      parser.feed(decoder.decode(value, { stream: true }));
    }
    ac.abort();
    return out;
  } catch (e) {
    if ((e as Error).name === 'AbortError') return out;
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

export const eventsOf = (messages: EventSourceMessage[]): SessionEvent[] => messages.map((m) => JSON.parse(m.data) as SessionEvent);

export type Frame = Record<string, any>;

/** A `ws` client on the turnstate.v1 subprotocol that records every frame it receives. */
export class WsClient {
  readonly frames: Frame[] = [];
  closeCode: number | undefined;
  closeReason = '';
  private waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }[] = [];
  private closeWaiters: ((code: number) => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const f = JSON.parse((data as Buffer).toString('utf8')) as Frame;
      f.__binary = isBinary;
      this.frames.push(f);
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(f)) return true;
        clearTimeout(w.timer);
        w.resolve(f);
        return false;
      });
    });
    ws.on('close', (code, reason) => {
      this.closeCode = code;
      this.closeReason = reason.toString();
      for (const w of this.closeWaiters) w(code);
      for (const w of this.waiters) {
        clearTimeout(w.timer);
        w.reject(new Error(`connection closed (${code} ${this.closeReason}) while waiting`));
      }
      this.waiters = [];
    });
  }

  static connect(url: string, opts: { token?: string; protocols?: string[]; maxPayload?: number; origin?: string } = {}): Promise<WsClient> {
    const headers: Record<string, string> = {};
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    const ws = new WebSocket(url, opts.protocols ?? ['turnstate.v1'], {
      headers,
      perMessageDeflate: false,
      ...(opts.maxPayload ? { maxPayload: opts.maxPayload } : {}),
      // What a browser sends: the page's origin.
      ...(opts.origin !== undefined ? { origin: opts.origin } : {}),
    });
    const client = new WsClient(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body })));
      });
      ws.once('error', reject);
    });
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first frame (already received or future) matching `pred`, after index `from`. */
  next(pred: (f: Frame) => boolean, timeoutMs = 5_000, from = 0): Promise<Frame> {
    const have = this.frames.slice(from).find(pred);
    if (have) return Promise.resolve(have);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out waiting for a frame; got: ' + JSON.stringify(this.frames.slice(-5)))), timeoutMs);
      this.waiters.push({ pred, resolve, reject, timer });
    });
  }

  closed(): Promise<number> {
    if (this.closeCode !== undefined) return Promise.resolve(this.closeCode);
    return new Promise((r) => this.closeWaiters.push(r));
  }

  events(sessionId?: string): SessionEvent[] {
    return this.frames.filter((f) => f.type === 'event' && (sessionId === undefined || f.sessionId === sessionId)).map((f) => f.event as SessionEvent);
  }

  close(): void {
    this.ws.close(1000);
  }
}
