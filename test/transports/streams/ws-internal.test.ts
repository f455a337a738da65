/**
 * The second line of defence behind parseClientFrame's "never throws": whatever a frame makes
 * throw while the connection handles it synchronously must not reach the `ws` 'message' emitter,
 * where it would be an uncaught exception and end the process. Here parseClientFrame is made to
 * throw (a stand-in for any bug on that path).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

const EXPLODE = '{"type":"ping","ref":"explode"}';

vi.mock('../../../src/transports/streams/frames.js', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../../src/transports/streams/frames.js')>();
  return {
    ...orig,
    parseClientFrame: (data: Buffer, isBinary: boolean, maxBytes: number) => {
      if (!isBinary && String(data) === EXPLODE) throw new TypeError('boom');
      return orig.parseClientFrame(data, isBinary, maxBytes);
    },
  };
});

describe('streams: a WebSocket frame whose handling throws', () => {
  let srv: Served;
  const clients: WsClient[] = [];

  beforeAll(async () => {
    srv = await serve(createTravelRuntime());
  });
  afterAll(async () => {
    for (const c of clients) c.ws.terminate();
    await srv?.close();
  });

  it('ws:close:1011 — "no frame can ever throw into the ws emitter": a frame whose parsing throws is answered internal, the connection closes with 1011, and the server keeps serving', async () => {
    const c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    clients.push(c);
    c.send({ type: 'ping', ref: 'before' });
    expect(await c.next((f) => f.ref === 'before')).toMatchObject({ type: 'pong' });
    c.send(EXPLODE);
    expect(await c.next((f) => f.type === 'error')).toMatchObject({ code: 'internal', message: 'internal error: boom' });
    expect(await c.closed()).toBe(1011);
    expect(srv.transport.stats().websocket).toBe(0);
    const fresh = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    clients.push(fresh);
    fresh.send({ type: 'ping', ref: 'after' });
    expect(await fresh.next((f) => f.ref === 'after')).toMatchObject({ type: 'pong' });
  });
});
