/**
 * A frame whose `type` names an Object.prototype member (`constructor`, `__proto__`, `toString`,
 * ...) once found that member in the frame table, threw from parseClientFrame inside the `ws`
 * 'message' listener, and ended the whole server process (found by a review of the streams
 * transport). It is an unknown type like any other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseClientFrame } from '../../../src/transports/streams/frames.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

const ACME = 'acme:ann';
/** Every member a plain object inherits: constructor, __proto__, toString, hasOwnProperty, valueOf, ... */
const PROTO_NAMES = Object.getOwnPropertyNames(Object.prototype);

describe('streams: a WebSocket frame type named like an Object.prototype member', () => {
  let srv: Served;
  const clients: WsClient[] = [];
  const connect = async (): Promise<WsClient> => {
    const c = await WsClient.connect(srv.wsUrl, { token: ACME });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    srv = await serve(createTravelRuntime());
  });
  afterAll(async () => {
    for (const c of clients) c.ws.terminate();
    await srv?.close();
  });

  it('ws:frames:prototype-type — "parseClientFrame never throws": a type named like an Object.prototype member is frame.unknown_type', () => {
    expect(PROTO_NAMES).toEqual(expect.arrayContaining(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']));
    for (const type of PROTO_NAMES) {
      const r = parseClientFrame(Buffer.from(JSON.stringify({ type, ref: 7 })), false, 4096);
      expect(r, type).toEqual({ ok: false, code: 'frame.unknown_type', ref: 7, message: expect.stringContaining(`unknown frame type '${type}'`) });
    }
  });

  it('ws:frames:prototype-type — "The connection stays up": each such frame is answered frame.unknown_type, a later ping on the same connection gets its pong, and a new connection works', async () => {
    const c = await connect();
    for (const type of PROTO_NAMES) {
      c.send({ type, ref: `t:${type}` });
      expect(await c.next((f) => f.ref === `t:${type}`)).toMatchObject({ type: 'error', code: 'frame.unknown_type', message: expect.stringContaining(`'${type}'`) });
      c.send({ type: 'ping', ref: `p:${type}` });
      expect(await c.next((f) => f.ref === `p:${type}`)).toEqual({ type: 'pong', ref: `p:${type}`, __binary: false });
    }
    expect(c.closeCode).toBeUndefined();
    // The server still serves: a new connection subscribes to a session.
    const session = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    const fresh = await connect();
    fresh.send({ type: 'subscribe', sessionId: session.id, ref: 'sub' });
    expect(await fresh.next((f) => f.ref === 'sub')).toMatchObject({ type: 'subscribed', sessionId: session.id, lastSeq: 0 });
  });
});
