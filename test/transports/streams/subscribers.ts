/**
 * A resuming subscriber as a real client would write it: it keeps the last seq it received and,
 * after any disconnect, reconnects with `resumeFrom` (WebSocket) or `Last-Event-ID` (SSE).
 * Reading can be paused to play a slow consumer.
 */
import { createParser } from 'eventsource-parser';
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { SessionEvent } from '../../../src/types.js';
import { mustArrive } from './events.js';

export interface ResumingSubscriber {
  readonly kind: 'ws' | 'sse';
  readonly received: SessionEvent[];
  readonly lastSeq: number;
  readonly connected: boolean;
  /** Close codes (WS) or 'ended' markers (SSE) of every connection that ended. */
  readonly ends: (number | string)[];
  connect(): Promise<void>;
  pause(): void;
  resume(): void;
  disconnect(): Promise<void>;
}

export function wsSubscriber(wsUrl: string, token: string, sessionId: string): ResumingSubscriber {
  const received: SessionEvent[] = [];
  const ends: (number | string)[] = [];
  let ws: WebSocket | undefined;
  let lastSeq = 0;
  let paused = false;
  const sub: ResumingSubscriber = {
    kind: 'ws',
    received,
    ends,
    get lastSeq() {
      return lastSeq;
    },
    get connected() {
      return ws !== undefined;
    },
    async connect() {
      if (ws !== undefined) return;
      const sock = new WebSocket(wsUrl, ['turnstate.v1'], { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
      ws = sock;
      sock.on('message', (data) => {
        const f = JSON.parse((data as Buffer).toString('utf8')) as { type: string; sessionId?: string; seq?: number; event?: SessionEvent };
        if (f.type === 'event' && f.sessionId === sessionId) {
          received.push(f.event!);
          lastSeq = f.event!.seq;
        }
      });
      sock.on('close', (code) => {
        ends.push(code);
        if (ws === sock) ws = undefined;
      });
      sock.on('error', () => undefined);
      await new Promise<void>((resolve, reject) => {
        sock.once('open', () => {
          sock.send(JSON.stringify({ type: 'subscribe', sessionId, resumeFrom: lastSeq }));
          if (paused) sock.pause();
          resolve();
        });
        sock.once('error', reject);
      });
    },
    pause() {
      paused = true;
      ws?.pause();
    },
    resume() {
      paused = false;
      ws?.resume();
    },
    async disconnect() {
      const sock = ws;
      if (sock === undefined) return;
      ws = undefined;
      sock.resume();
      await new Promise<void>((r) => {
        sock.once('close', () => r());
        sock.terminate();
      });
    },
  };
  return sub;
}

export function sseSubscriber(base: string, token: string, sessionId: string): ResumingSubscriber {
  const received: SessionEvent[] = [];
  const ends: (number | string)[] = [];
  let lastSeq = 0;
  let paused = false;
  let wake: (() => void) | undefined;
  let current: { ac: AbortController; done: Promise<void> } | undefined;
  let connecting = false;
  const sub: ResumingSubscriber = {
    kind: 'sse',
    received,
    ends,
    get lastSeq() {
      return lastSeq;
    },
    get connected() {
      return current !== undefined || connecting;
    },
    async connect() {
      if (current !== undefined || connecting) return;
      connecting = true;
      const ac = new AbortController();
      let res: Response;
      try {
        res = await fetch(`${base}/sessions/${sessionId}/events`, {
          headers: { authorization: `Bearer ${token}`, 'last-event-id': String(lastSeq) },
          signal: ac.signal,
        });
      } finally {
        connecting = false;
      }
      expect(res.status).toBe(200);
      const parser = createParser({
        onEvent: (m) => {
          const e = JSON.parse(m.data) as SessionEvent;
          expect(m.id).toBe(String(e.seq));
          received.push(e);
          lastSeq = e.seq;
        },
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      const self: { ac: AbortController; done: Promise<void> } = { ac, done: Promise.resolve() };
      self.done = (async () => {
          try {
            for (;;) {
              while (paused) await new Promise<void>((r) => (wake = r));
              const { value, done } = await reader.read();
              if (done) break;
              parser.feed(decoder.decode(value, { stream: true }));
            }
            ends.push('ended');
          } catch {
            ends.push('aborted');
          } finally {
            if (current === self) current = undefined;
          }
        })();
      current = self;
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      wake?.();
    },
    async disconnect() {
      const c = current;
      if (c === undefined) return;
      current = undefined;
      c.ac.abort();
      const wasPaused = paused;
      sub.resume();
      await c.done;
      paused = wasPaused;
    },
  };
  return sub;
}

/**
 * What a resuming subscriber must have seen of `log` (the session's events): seqs strictly
 * increasing (nothing repeated or reordered); every envelope part, state change, approval event,
 * tool event and settlement up to its last seq; delta text that spells each part exactly.
 */
export function checkSubscriber(received: SessionEvent[], log: SessionEvent[]): void {
  for (let i = 1; i < received.length; i++) expect(received[i]!.seq).toBeGreaterThan(received[i - 1]!.seq);
  const last = received.at(-1)?.seq ?? 0;
  const bySeq = new Map(received.map((e) => [e.seq, e]));
  for (const e of log) {
    if (e.seq > last) break;
    if (mustArrive(e)) expect(bySeq.get(e.seq)).toEqual(e);
  }
  const key = (e: SessionEvent): string => (e.type === 'part.delta' ? `${e.callId}/${e.index}` : '');
  const upTo = new Map<string, number>();
  const text = new Map<string, string>();
  for (const e of received) {
    if (e.type !== 'part.delta') continue;
    upTo.set(key(e), e.seq);
    text.set(key(e), (text.get(key(e)) ?? '') + e.text);
  }
  for (const [k, seq] of upTo) {
    const original = log
      .filter((e) => e.type === 'part.delta' && key(e) === k && e.seq <= seq)
      .map((e) => (e.type === 'part.delta' ? e.text : ''))
      .join('');
    expect(text.get(k)).toBe(original);
  }
}
