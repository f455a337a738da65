/**
 * A session deleted while a subscriber still replays it: the replay's next page is empty, the
 * follower goes live, and the session's event stream, subscribed after the deletion, fails with
 * `session.not_found`. That is the session ending, not the stream failing (found by a review of
 * the streams transport: WebSocket subscribers got `error stream.failed`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnstateRuntime } from '../../../src/runtime.js';
import type { SessionEvent } from '../../../src/types.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient, eventsOf, readSse } from './clients.js';

const ACME = 'acme:ann';

interface Setup {
  srv: Served;
  runtime: TurnstateRuntime;
  sessionId: string;
  recorded: SessionEvent[];
  /** Holds the transport's next history page (read already) until released. */
  holdNextPage(): { reached: Promise<void>; release: () => void };
}

/** The real runtime, whose history reads (the transport's replay) can be held after they read. */
async function setup(): Promise<Setup> {
  const runtime = createTravelRuntime();
  const session = await runtime.createSession({ actor: 'desk', tenantId: 'acme' });
  await (await session.send('find flights to Corfu', { principal: { tenantId: 'acme', userId: 'ann' } })).settled;
  const recorded = await runtime.store.readEvents(session.id, 0);
  let hold: { reached: () => void; released: Promise<void> } | undefined;
  const held = new Proxy(runtime, {
    get(target, prop, receiver) {
      if (prop !== 'history') return Reflect.get(target, prop, receiver);
      return async (id: string, after?: number, limit?: number) => {
        const page = await target.history(id, after, limit);
        const h = hold;
        hold = undefined;
        if (h !== undefined) {
          h.reached();
          await h.released;
        }
        return page;
      };
    },
  });
  const srv = await serve(held);
  return {
    srv,
    runtime,
    sessionId: session.id,
    recorded,
    holdNextPage() {
      let reached!: () => void;
      let release!: () => void;
      const r = new Promise<void>((res) => (reached = res));
      hold = { reached, released: new Promise<void>((res) => (release = res)) };
      return { reached: r, release };
    },
  };
}

describe('streams: a session deleted while a subscriber replays it', () => {
  let srv: Served | undefined;
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
  });

  it('ws:session-ended:replay — "reason: session-ended when the session was deleted or stopped": deleted during the replay, the subscription ends with unsubscribed session-ended, not stream.failed', async () => {
    const s = await setup();
    srv = s.srv;
    const c = await WsClient.connect(s.srv.wsUrl, { token: ACME });
    const page = s.holdNextPage();
    c.send({ type: 'subscribe', sessionId: s.sessionId, ref: 'sub' });
    await page.reached;
    expect(await s.runtime.deleteSession(s.sessionId)).toBe(true);
    page.release();
    const end = await c.next((f) => f.type === 'unsubscribed' || f.type === 'error');
    expect(end).toEqual({ type: 'unsubscribed', sessionId: s.sessionId, reason: 'session-ended', __binary: false });
    // The page read before the deletion was replayed first; the connection stays up.
    expect(c.events(s.sessionId)).toEqual(s.recorded);
    c.send({ type: 'ping', ref: 'still-up' });
    expect(await c.next((f) => f.ref === 'still-up')).toMatchObject({ type: 'pong' });
    c.ws.terminate();
  });

  it('sse:session-ended:replay — "It ends when ... the session is deleted": deleted during the replay, the stream ends after the events replayed', async () => {
    const s = await setup();
    srv = s.srv;
    const page = s.holdNextPage();
    const reading = readSse(`${s.srv.base}/sessions/${s.sessionId}/events`, { headers: { authorization: `Bearer ${ACME}` } });
    await page.reached;
    expect(await s.runtime.deleteSession(s.sessionId)).toBe(true);
    page.release();
    const r = await reading;
    expect(r.status).toBe(200);
    expect(r.ended).toBe(true);
    expect(eventsOf(r.messages)).toEqual(s.recorded);
  });
});
