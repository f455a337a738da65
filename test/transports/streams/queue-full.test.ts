/**
 * The queue bound over the WebSocket transport: `send` frames queued behind a turn waiting for
 * approval are accepted up to RuntimeLimits.maxQueuedMessages; the next one is answered with an
 * error frame naming the limit, and the connection stays open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

describe('streams: the queue bound over WebSocket', () => {
  let srv: Served;
  let client: WsClient | undefined;
  beforeAll(async () => {
    srv = await serve(createTravelRuntime({ limits: { maxQueuedMessages: 5 } }));
  });
  afterAll(async () => {
    client?.ws.terminate();
    await srv?.close();
  });

  it('ws:send:queue-full — the send past maxQueuedMessages gets an error frame session.queue_full naming the limit; the queued messages all run after the answer', async () => {
    const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    expect((await (await s.send('book the first one')).settled).finalizedBy).toBe('suspended');
    client = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    const text = (i: number) => `message ${i} ${'x'.repeat(10_000)}`;
    for (let i = 0; i < 5; i++) {
      client.send({ type: 'send', sessionId: s.id, text: text(i), ref: `q${i}` });
      expect(await client.next((f) => f.ref === `q${i}`)).toMatchObject({ type: 'sent', queued: true });
    }
    client.send({ type: 'send', sessionId: s.id, text: text(5), ref: 'over' });
    const err = await client.next((f) => f.ref === 'over');
    expect(err).toMatchObject({ type: 'error', code: 'session.queue_full' });
    expect(err.message).toMatch(/maxQueuedMessages = 5/);
    // The connection stays usable.
    client.send({ type: 'subscribe', sessionId: s.id, ref: 'sub' });
    expect(await client.next((f) => f.ref === 'sub')).toMatchObject({ type: 'subscribed' });

    const [pending] = await srv.runtime.store.listApprovals({ sessionId: s.id, status: 'pending' });
    await srv.runtime.answerApproval(pending!.approvalId, { approved: true }, { tenantId: 'acme', userId: 'ann' }, 'test');
    await s.idle();
    const users = (await s.mailbox()).flatMap((m) => (m.kind === 'user' ? [m.text.slice(0, 9)] : []));
    expect(users).toEqual(['book the ', ...Array.from({ length: 5 }, (_, i) => `message ${i}`)]);
  });
});
