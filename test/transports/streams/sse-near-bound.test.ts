/**
 * SSE events a little smaller than `maxBufferedBytes` (sse.md "Slow clients": bytes Node keeps in
 * the response only until the end of the tick "do not count as held, so a reader that keeps up
 * gets large events live and on resume"), over 127.0.0.1 with real fetch readers.
 * A 64 KiB bound against turns whose domain-data part and envelope are each 0.3-2 KB under it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../../src/models/scripted.js';
import { createRuntime } from '../../../src/runtime.js';
import type { Principal, SessionEvent } from '../../../src/types.js';
import { serve, type Served } from './app.js';
import { eventsOf, readSse } from './clients.js';

const BOUND = 64 * 1024;
const ann: Principal = { tenantId: 'acme', userId: 'ann' };
const auth = { authorization: 'Bearer acme:ann' };

/** A turn streaming ~1 KB of text, then a domain-data part of ~62.4 KB and an envelope of ~63.6 KB. */
function createNearBoundRuntime() {
  const runtime = createRuntime({
    model: createScriptedModel({
      rules: [
        {
          when: { on: 'user' },
          respond: {
            chunkSize: 200,
            blocks: [
              {
                type: 'tool_use',
                name: 'respond',
                input: {
                  parts: [
                    { text: 'Here are the fares you asked for. '.repeat(30), metadata: { partType: 'response' } },
                    { data: { note: 'n'.repeat(BOUND - 1_940) }, metadata: { partType: 'domain-data' } },
                  ],
                  turnState: 'complete',
                },
              },
            ],
          },
        },
      ],
    }),
  });
  runtime.registries.actors.register({ name: 'desk', system: 'You are a travel desk.' });
  return runtime;
}

/** Smaller than the bound, but by less than the few events written just before it in one tick. */
const nearBound = (e: SessionEvent): boolean => {
  const n = Buffer.byteLength(JSON.stringify(e));
  return n > BOUND - 2_048 && n < BOUND - 256;
};

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('streams: SSE events slightly smaller than the bound', () => {
  let srv: Served;
  beforeAll(async () => {
    srv = await serve(createNearBoundRuntime(), { transport: { maxBufferedBytes: BOUND, heartbeatMs: 100 } });
  });
  afterAll(async () => srv?.close());

  const newSession = async () => srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
  const url = (id: string, q = ''): string => `${srv.base}/sessions/${id}/events${q}`;

  it('sse:near-bound:replay — "a reader that keeps up gets large events live and on resume": events just under the bound are replayed on one response, nobody counted slow', async () => {
    const s = await newSession();
    for (let i = 0; i < 3; i++) await (await s.send('fares please', { principal: ann })).settled;
    const log = await srv.runtime.store.readEvents(s.id, 0);
    const near = log.filter(nearBound);
    expect(near.length).toBeGreaterThanOrEqual(6);
    const cuts = srv.transport.stats().slowDisconnects;
    // From the start, and from right before each near-bound event (where a cut reader would resume).
    for (const after of [0, ...near.map((e) => e.seq - 1)]) {
      const expected = log.filter((e) => e.seq > after);
      const r = await readSse(url(s.id), {
        headers: { ...auth, 'last-event-id': String(after) },
        until: (m) => m.length >= expected.length,
        timeoutMs: 20_000,
      });
      expect(r.status).toBe(200);
      expect(r.ended).toBe(false);
      expect(eventsOf(r.messages)).toEqual(expected);
    }
    expect(srv.transport.stats().slowDisconnects).toBe(cuts);
  }, 120_000);

  it('sse:near-bound:live — "a reader that keeps up gets large events live and on resume": a following reader gets every event just under the bound on one response, nobody counted slow', async () => {
    const s = await newSession();
    let target = Number.POSITIVE_INFINITY;
    const cuts = srv.transport.stats().slowDisconnects;
    const reading = readSse(url(s.id), {
      headers: auth,
      until: (m) => Number(m.at(-1)?.id ?? 0) >= target,
      timeoutMs: 60_000,
    });
    await until(() => srv.transport.stats().sse >= 1, 10_000, 'the stream to open');
    for (let i = 0; i < 3; i++) {
      await (await s.send('fares please', { principal: ann })).settled;
      await new Promise((r) => setImmediate(r));
    }
    const log = await srv.runtime.store.readEvents(s.id, 0);
    expect(log.filter(nearBound).length).toBeGreaterThanOrEqual(6);
    target = log.at(-1)!.seq;
    const r = await reading;
    expect(r.status).toBe(200);
    expect(r.ended).toBe(false);
    expect(eventsOf(r.messages)).toEqual(log);
    expect(srv.transport.stats().slowDisconnects).toBe(cuts);
  }, 120_000);
});
