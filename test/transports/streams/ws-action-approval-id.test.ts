/**
 * An approve/deny surface action without a usable approvalId (docs/concepts/surfaces.md,
 * surfaces:action:route; docs/transports/websocket.md "action"): refused with `frame.invalid`
 * naming /action/context/approvalId, and nothing is queued. Found by a review session: such a
 * click was answered `sent` and queued as the message "[surface action] approve on …", which
 * started a turn telling the model "approve" once the approval was answered.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Principal } from '../../../src/types.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';

const ann: Principal = { tenantId: 'acme', userId: 'ann' };
let srv: Served;
let c: WsClient;
beforeAll(async () => {
  srv = await serve(createTravelRuntime());
  c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
});
afterAll(async () => {
  c?.ws.terminate();
  await srv?.close();
});

it('ws:action:approval-id — "an action named approve or deny … MUST answer that approval": one whose context.approvalId is 42, null, {}, "" or missing is refused (frame.invalid, naming /action/context/approvalId), queues nothing, and starts no turn once the approval is answered', async () => {
  const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
  expect((await (await s.send('book the first one', { principal: ann })).settled).finalizedBy).toBe('suspended');
  const [pending] = await srv.runtime.store.listApprovals({ sessionId: s.id, status: 'pending' });
  const surfaceId = `approval:book_flight:${pending!.callId}`;
  const bad: Record<string, unknown>[] = [{ approvalId: 42 }, { approvalId: null }, { approvalId: { id: pending!.approvalId } }, { approvalId: '' }, {}];
  bad.forEach((context, i) => {
    const name = i % 2 === 0 ? 'approve' : 'deny';
    c.send({ type: 'action', sessionId: s.id, action: { name, surfaceId, sourceComponentId: name, context }, ref: `bad${i}` });
  });
  for (let i = 0; i < bad.length; i++) {
    expect(await c.next((f) => f.ref === `bad${i}`), JSON.stringify(bad[i])).toMatchObject({
      type: 'error',
      code: 'frame.invalid',
      message: expect.stringMatching(/^\/action\/context\/approvalId must be a non-empty string/),
    });
  }
  // Nothing waits behind the held turn, and the approval is untouched.
  expect((await s.snapshot()).queued).toBe(0);
  expect((await srv.runtime.approval(pending!.approvalId))?.status).toBe('pending');
  // Answered properly: the booking finishes, and no further turn starts.
  const answered = await s.answerApproval(pending!.approvalId, { approved: true }, { tenantId: 'acme', userId: 'amy' }, 'test');
  expect(answered.ok).toBe(true);
  await s.idle();
  const started = (await srv.runtime.store.readEvents(s.id, 0)).flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
  expect(started).toEqual(['book the first one']);
});
