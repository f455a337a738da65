/**
 * maxStreamsPerPrincipal (docs/transports/sse.md): "open event streams (SSE streams and WebSocket
 * connections together) one authenticated principal may hold at once; one more is refused with
 * 429 streams.too_many". Before it, one key could open connections until the process ran out of
 * file descriptors (a review held 500 SSE streams and 50,000 WebSocket subscriptions on one key).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('streams per principal', () => {
  let srv: Served;
  let sessionId: string;

  beforeAll(async () => {
    srv = await serve(createTravelRuntime(), { transport: { maxStreamsPerPrincipal: 3 } });
    sessionId = (await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' })).id;
  });
  afterAll(async () => srv?.close());

  /** An SSE stream of the session, left open (aborted by the returned function). */
  async function openSse(token: string): Promise<{ status: number; body: string; close: () => void }> {
    const ac = new AbortController();
    const res = await fetch(`${srv.base}/sessions/${sessionId}/events`, { headers: auth(token), signal: ac.signal });
    const body = res.status === 200 ? '' : await res.text();
    return { status: res.status, body, close: () => ac.abort() };
  }

  it('streams:per-principal — "one more is refused with 429 streams.too_many": SSE streams and WebSocket connections count together per principal; another principal, and a slot given back by a closed stream, are unaffected', async () => {
    const a = await openSse('acme:ann');
    const b = await openSse('acme:ann');
    const ws = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    expect([a.status, b.status]).toEqual([200, 200]);

    const fourth = await openSse('acme:ann');
    expect(fourth.status).toBe(429);
    expect(JSON.parse(fourth.body).error).toMatchObject({ code: 'streams.too_many', message: expect.stringContaining('maxStreamsPerPrincipal = 3') });
    const refused = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' }).catch((e: { status?: number; body?: string }) => e);
    expect(refused).toMatchObject({ status: 429 });
    expect(JSON.parse((refused as { body: string }).body).error.code).toBe('streams.too_many');

    // Another user of the same tenant has slots of their own.
    const other = await openSse('acme:bob');
    expect(other.status).toBe(200);

    // A closed stream gives its slot back.
    ws.ws.close();
    await ws.closed();
    let again = await openSse('acme:ann');
    for (let i = 0; again.status === 429 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20));
      again = await openSse('acme:ann');
    }
    expect(again.status).toBe(200);
    for (const s of [a, b, other, again]) s.close();
  });
});
