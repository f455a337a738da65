/**
 * SSE events larger than `maxBufferedBytes` (sse.md "Slow clients": "A single event larger than
 * the bound is still written when nothing else is held"), over 127.0.0.1 with real fetch readers.
 * A 64 KiB bound against the travel desk's big turn: a 300 KB domain-data part and its envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal, SessionEvent } from '../../../src/types.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { eventsOf, readSse } from './clients.js';
import { checkSubscriber, sseSubscriber } from './subscribers.js';

const BOUND = 64 * 1024;
const ann: Principal = { tenantId: 'acme', userId: 'ann' };
const auth = { authorization: 'Bearer acme:ann' };

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const oversized = (e: SessionEvent): boolean => Buffer.byteLength(JSON.stringify(e)) > BOUND;

describe('streams: SSE events larger than the bound', () => {
  let srv: Served;
  beforeAll(async () => {
    srv = await serve(createTravelRuntime(), { transport: { maxBufferedBytes: BOUND, heartbeatMs: 100 } });
  });
  afterAll(async () => srv?.close());

  const newSession = async () => srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
  const url = (id: string, q = ''): string => `${srv.base}/sessions/${id}/events${q}`;

  it('sse:oversized:replay — "a single event larger than the bound is still written when nothing else is held": a reader resuming before it gets it and the rest, on one response', async () => {
    const s = await newSession();
    await (await s.send('find flights to Corfu', { principal: ann })).settled;
    await (await s.send('big fares please', { principal: ann })).settled;
    const log = await srv.runtime.store.readEvents(s.id, 0);
    const big = log.filter(oversized);
    expect(big.length).toBeGreaterThanOrEqual(2);
    const cuts = srv.transport.stats().slowDisconnects;
    // From the start, and from right before each large event (the resume a cut reader would make).
    for (const after of [0, ...big.map((e) => e.seq - 1)]) {
      const expected = log.filter((e) => e.seq > after);
      const r = await readSse(url(s.id), {
        headers: { ...auth, 'last-event-id': String(after) },
        until: (m) => m.length >= expected.length,
        timeoutMs: 10_000,
      });
      expect(r.ended).toBe(false);
      expect(eventsOf(r.messages)).toEqual(expected);
    }
    expect(srv.transport.stats().slowDisconnects).toBe(cuts);
  }, 60_000);

  it('sse:oversized:live — "a single event larger than the bound is still written when nothing else is held": a following reader gets it live while a reader that stopped reading is still cut', async () => {
    const s = await newSession();
    await (await s.send('find flights to Corfu', { principal: ann })).settled;
    const base = (await srv.runtime.store.readEvents(s.id, 0)).at(-1)!.seq;
    let target = Number.POSITIVE_INFINITY;
    const fast = readSse(url(s.id, `?after=${base}`), {
      headers: auth,
      until: (m) => Number(m.at(-1)?.id ?? base) >= target,
      timeoutMs: 120_000,
    });
    const slow = sseSubscriber(srv.base, 'acme:ann', s.id);
    await slow.connect();
    await until(() => srv.transport.stats().sse === 2, 5_000, 'both streams');
    slow.pause();
    const cuts = srv.transport.stats().slowDisconnects;
    // Big turns until the reader that stopped reading is cut (the bound still holds for it).
    for (let i = 0; i < 40 && srv.transport.stats().slowDisconnects === cuts; i++) {
      await (await s.send('big fares please', { principal: ann })).settled;
      await new Promise((r) => setImmediate(r));
    }
    expect(srv.transport.stats().slowDisconnects).toBe(cuts + 1);
    const log = await srv.runtime.store.readEvents(s.id, 0);
    target = log.at(-1)!.seq;
    const r = await fast;
    expect(r.ended).toBe(false);
    const expected = log.filter((e) => e.seq > base);
    expect(expected.some(oversized)).toBe(true);
    expect(eventsOf(r.messages)).toEqual(expected);
    // The cut reader resumes with Last-Event-ID and catches up, large events included.
    slow.resume();
    await until(() => !slow.connected, 20_000, 'the cut to reach the slow reader');
    expect(slow.ends).toContain('ended');
    await slow.connect();
    await until(() => slow.lastSeq === target, 20_000, 'the slow reader to catch up');
    checkSubscriber(slow.received, log);
    await slow.disconnect();
  }, 120_000);
});
