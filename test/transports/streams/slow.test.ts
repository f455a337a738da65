import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../../src/types.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { checkSubscriber, sseSubscriber, wsSubscriber, type ResumingSubscriber } from './subscribers.js';

const BOUND = 512 * 1024;
const ann: Principal = { tenantId: 'acme', userId: 'ann' };

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('streams: slow subscribers over 127.0.0.1 against the real runtime', () => {
  let srv: Served;
  beforeAll(async () => {
    srv = await serve(createTravelRuntime(), { transport: { maxBufferedBytes: BOUND, heartbeatMs: 60_000 } });
  });
  afterAll(async () => {
    console.log("streams stats", JSON.stringify({ ...srv.transport.stats(), heldBytes: undefined }));
    await srv?.close();
  });

  const newSession = async () => srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });

  /** Big turns until the transport disconnects a slow subscriber (at most `max` turns). */
  async function bigTurnsUntilSlowDisconnect(session: Awaited<ReturnType<typeof newSession>>, max: number): Promise<number> {
    const before = srv.transport.stats().slowDisconnects;
    for (let i = 0; i < max; i++) {
      await (await session.send('big fares please', { principal: ann })).settled;
      await new Promise((r) => setImmediate(r));
      expect(srv.transport.stats().peakHeldBytes).toBeLessThanOrEqual(BOUND);
      if (srv.transport.stats().slowDisconnects > before) return i + 1;
    }
    throw new Error(`no slow-consumer disconnect after ${max} big turns`);
  }

  for (const [name, make] of [
    ['WebSocket, close 4008', (sid: string) => wsSubscriber(srv.wsUrl, 'acme:ann', sid)],
    ['SSE, response ended', (sid: string) => sseSubscriber(srv.base, 'acme:ann', sid)],
  ] as const) {
    it(`streams:slow:disconnect-resume — a subscriber that stops reading is disconnected at the bound and resumes from its last seq (${name})`, async () => {
      const session = await newSession();
      const sub = make(session.id);
      await sub.connect();
      await (await session.send('find flights to Corfu', { principal: ann })).settled;
      await until(() => sub.lastSeq === 0 || sub.received.some((e) => e.type === 'turn.settled'), 5_000, 'first turn');
      sub.pause();
      await bigTurnsUntilSlowDisconnect(session, 40);
      sub.resume();
      await until(() => !sub.connected, 20_000, 'the disconnect to reach the client');
      if (sub.kind === 'ws') expect(sub.ends).toContain(4008);
      else expect(sub.ends).toContain('ended');
      const log = await srv.runtime.store.readEvents(session.id, 0);
      expect(sub.lastSeq).toBeLessThan(log.at(-1)!.seq);
      await sub.connect();
      await until(() => sub.lastSeq === log.at(-1)!.seq, 20_000, 'resume to catch up');
      checkSubscriber(sub.received, log);
      await sub.disconnect();
      expect(srv.transport.stats().peakHeldBytes).toBeLessThanOrEqual(BOUND);
    }, 120_000);
  }

  it('streams:slow:close-grace — "a client that has stopped reading altogether gets [the 4008 close] only if it reads again within 5 seconds, after which the server drops the connection and the client sees 1006": it resumes from its last seq all the same', async () => {
    const session = await newSession();
    const sub = wsSubscriber(srv.wsUrl, 'acme:ann', session.id);
    await sub.connect();
    await (await session.send('find flights to Corfu', { principal: ann })).settled;
    await until(() => sub.received.some((e) => e.type === 'turn.settled'), 5_000, 'first turn');
    sub.pause();
    await bigTurnsUntilSlowDisconnect(session, 40);
    // Past the close frame's grace (5 s) without reading: the server has dropped the connection.
    await new Promise((r) => setTimeout(r, 6_000));
    sub.resume();
    await until(() => !sub.connected, 20_000, 'the drop to reach the client');
    expect(sub.ends).toContain(1006);
    expect(sub.ends).not.toContain(4008);
    const log = await srv.runtime.store.readEvents(session.id, 0);
    await sub.connect();
    await until(() => sub.lastSeq === log.at(-1)!.seq, 20_000, 'resume to catch up');
    checkSubscriber(sub.received, log);
    await sub.disconnect();
  }, 120_000);

  it('streams:slow:property — random subscribe/pause/resume/disconnect/reconnect: nothing kept is missed, held bytes stay under the bound', async () => {
    type Action =
      | { k: 'turn'; big: boolean }
      | { k: 'pause' | 'resume' | 'disconnect' | 'reconnect'; who: number };
    const action = fc.oneof(
      { weight: 3, arbitrary: fc.record({ k: fc.constant('turn' as const), big: fc.boolean() }) },
      ...(['pause', 'resume', 'disconnect', 'reconnect'] as const).map((k) => ({
        weight: 1,
        arbitrary: fc.record({ k: fc.constant(k), who: fc.integer({ min: 0, max: 2 }) }),
      })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 3, maxLength: 12 }), async (actions: Action[]) => {
        const session = await newSession();
        const subs: ResumingSubscriber[] = [
          wsSubscriber(srv.wsUrl, 'acme:ann', session.id),
          sseSubscriber(srv.base, 'acme:ann', session.id),
          wsSubscriber(srv.wsUrl, 'acme:ann', session.id),
        ];
        for (const s of subs) await s.connect();
        for (const a of actions) {
          if (a.k === 'turn') {
            await (await session.send(a.big ? 'big fares please' : 'find flights to Corfu', { principal: ann })).settled;
          } else {
            const s = subs[a.who]!;
            if (a.k === 'pause') s.pause();
            else if (a.k === 'resume') s.resume();
            else if (a.k === 'disconnect') await s.disconnect();
            else await s.connect();
          }
          expect(srv.transport.stats().peakHeldBytes).toBeLessThanOrEqual(BOUND);
        }
        const log = await srv.runtime.store.readEvents(session.id, 0);
        const lastSeq = log.at(-1)?.seq ?? 0;
        for (const s of subs) s.resume();
        // Every subscriber catches up, reconnecting with its last seq whenever it finds itself disconnected.
        await until(
          () => {
            for (const s of subs) if (!s.connected && s.lastSeq < lastSeq) void s.connect().catch(() => undefined);
            return subs.every((s) => s.lastSeq === lastSeq);
          },
          60_000,
          'every subscriber to catch up',
        );
        for (const s of subs) {
          checkSubscriber(s.received, log);
          await s.disconnect();
        }
        expect(srv.transport.stats().peakHeldBytes).toBeLessThanOrEqual(BOUND);
      }),
      { numRuns: 12, endOnFailure: true },
    );
  }, 300_000);
});
