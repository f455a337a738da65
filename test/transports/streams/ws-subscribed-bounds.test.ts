/** The WebSocket `subscribed` reply's `queued` field (docs/transports/websocket.md), at its bounds. */
import { afterAll, describe, expect, it } from 'vitest';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

async function suspendedWithQueue(srv: Served, n: number, size: number) {
  const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
  const c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
  c.send({ type: 'subscribe', sessionId: s.id, ref: 's' });
  await c.next((f) => f.ref === 's');
  c.send({ type: 'send', sessionId: s.id, text: 'book TS101', ref: 'book' });
  await c.next((f) => f.type === 'event' && f.event.to === 'suspended');
  for (let i = 0; i < n; i++) await s.send(`${i} ` + 'x'.repeat(size));
  c.ws.terminate();
  return s;
}

describe('subscribed: the queued messages, bounded', () => {
  const servers: Served[] = [];
  afterAll(async () => { for (const s of servers) await s.close(); });

  it('ws:subscribed:queued-bounded — "bounded so a full queue of long messages cannot make the reply megabytes": 100 queued messages of 60 KB; a reading client that subscribes with replay gets the first 20, each cut at 2,000 units, and is not cut as a slow consumer', async () => {
    const srv = await serve(createTravelRuntime());
    servers.push(srv);
    const s = await suspendedWithQueue(srv, 100, 60_000);
    const c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann', maxPayload: 100 * 1024 * 1024 });
    c.send({ type: 'subscribe', sessionId: s.id, resumeFrom: 0, ref: 'sub' });
    const sub = await c.next((f) => f.ref === 'sub', 5000).catch((e) => e);
    await new Promise((r) => setTimeout(r, 1000));
    expect(c.closeCode).toBeUndefined();
    expect(sub.type).toBe('subscribed');
    expect(sub.queued).toHaveLength(20);
    expect(sub.queued[0].text).toBe(`0 ${'x'.repeat(1998)}…`);
    expect(JSON.stringify(sub).length).toBeLessThan(50_000);
  }, 30000);

  it('ws:subscribed:embedder-snapshot — an embedder\'s SessionRuntime whose snapshot has no queuedMessages (the shape before it): subscribe still works, with no queued field', async () => {
    const rt = createTravelRuntime();
    const wrapped = new Proxy(rt, {
      get(t, k) {
        const v = Reflect.get(t, k);
        if (k === 'session') return async (id: string, o?: unknown) => {
          const h = await (t.session as any)(id, o);
          if (!h) return h;
          return new Proxy(h, { get(ht, hk) {
            const hv = Reflect.get(ht, hk);
            if (hk === 'snapshot') return async () => { const snap = await (hv as any).call(ht); const { queuedMessages, ...old } = snap; return old; };
            return typeof hv === 'function' ? hv.bind(ht) : hv;
          } });
        };
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
    const srv = await serve(wrapped as any);
    servers.push(srv);
    const s = await rt.createSession({ actor: 'desk', tenantId: 'acme' });
    const c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    c.send({ type: 'subscribe', sessionId: s.id, ref: 'sub' });
    const f = await c.next((fr) => fr.ref === 'sub');
    expect(f.type).toBe('subscribed');
    expect(f.queued).toBeUndefined();
  });
});
