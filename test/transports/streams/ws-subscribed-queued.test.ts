/**
 * The `subscribed` reply names the messages waiting behind the running turn (`queued`), as they
 * are when the subscription is made: the log has no event for them until their turns start, so a
 * client that reloads, or a second one, learns of them here. Absent when nothing waits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

describe('streams: the subscribed reply names the queued messages', () => {
  let srv: Served;
  const clients: WsClient[] = [];
  const connect = async (): Promise<WsClient> => {
    const c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
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

  it('ws:subscribed:queued — "`queued`: the messages waiting behind the running turn when the subscription was made, in queue order (absent when none)": a second connection subscribing while two messages wait behind a turn suspended for approval is told their turnIds and texts; once they ran, a new subscription names none', async () => {
    const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    const first = await connect();
    first.send({ type: 'subscribe', sessionId: s.id, ref: 'sub0' });
    const before = await first.next((f) => f.ref === 'sub0');
    expect(before).toMatchObject({ type: 'subscribed', sessionId: s.id });
    expect(before).not.toHaveProperty('queued');

    first.send({ type: 'send', sessionId: s.id, text: 'book TS101', ref: 'book' });
    expect(await first.next((f) => f.ref === 'book')).toMatchObject({ type: 'sent', queued: false });
    await first.next((f) => f.type === 'event' && (f.event as { type: string; to?: string }).to === 'suspended');
    const turnIds: string[] = [];
    for (const [i, text] of ['hello there', 'and Corfu too'].entries()) {
      first.send({ type: 'send', sessionId: s.id, text, ref: `q${i}` });
      const sent = await first.next((f) => f.ref === `q${i}`);
      expect(sent).toMatchObject({ type: 'sent', queued: true });
      turnIds.push(sent.turnId as string);
    }

    // Another tab (or this one reloaded): the log says nothing of them yet, the reply does.
    const second = await connect();
    second.send({ type: 'subscribe', sessionId: s.id, resumeFrom: 0, ref: 'sub1' });
    const subscribed = await second.next((f) => f.ref === 'sub1');
    const { __binary, ...frame } = subscribed;
    expect(__binary).toBe(false);
    expect(frame).toEqual({
      type: 'subscribed',
      sessionId: s.id,
      lastSeq: expect.any(Number),
      queued: [
        { turnId: turnIds[0], text: 'hello there' },
        { turnId: turnIds[1], text: 'and Corfu too' },
      ],
      ref: 'sub1',
    });
    const events = await srv.runtime.store.readEvents(s.id, 0);
    expect(events.filter((e) => e.type === 'turn.started').map((e) => e.turnId)).not.toContain(turnIds[0]);

    // Answered: both run, and a later subscription names nothing queued.
    const [pending] = await srv.runtime.store.listApprovals({ sessionId: s.id, status: 'pending' });
    await srv.runtime.answerApproval(pending!.approvalId, { approved: true }, { tenantId: 'acme', userId: 'ann' }, 'test');
    await s.idle();
    second.send({ type: 'subscribe', sessionId: s.id, resumeFrom: 0, ref: 'sub2' });
    const after = await second.next((f) => f.ref === 'sub2');
    expect(after).toMatchObject({ type: 'subscribed', sessionId: s.id });
    expect(after).not.toHaveProperty('queued');
  });
});
