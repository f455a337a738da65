/**
 * The reason of an approval answer is bounded the same way on every channel (docs/concepts/
 * approvals.md, `approvals:answer:invalid`: "a reason of at most 2,000 characters,
 * MAX_APPROVAL_REASON_CHARS, on every channel … refused with approval.invalid"). Characters are
 * UTF-16 code units everywhere. The AAP schema counted code points (ajv's maxLength), answerApproval
 * UTF-16 units: 1,500 emoji passed the schema, were refused behind it with approval.invalid, and
 * that code had no HTTP status: a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TurnstateError } from '../../../src/errors.js';
import { toHttpError } from '../../../src/transports/http.js';
import { createSession, startHarness, toolCalls, turn, user, type Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** A session stopped on the approval of book_flight (EUR 94). */
async function bookingStopped() {
  const sid = await createSession(h.url);
  await turn(h.url, sid, user('flights to Corfu'));
  const r = await turn(h.url, sid, user('book TS101'));
  const call = toolCalls(r).find((c) => c.name === 'book_flight')!;
  expect(call).toBeDefined();
  const [approval] = await h.runtime.approvals({ sessionId: sid, status: 'pending' });
  return { sid, call, approvalId: approval!.approvalId };
}

const permission = (toolCallId: string, reason: string) => ({ stream: 'none', messages: [{ role: 'tool_permission', toolCallId, granted: false, reason }] });

describe('approval reasons: one limit, one unit, every channel', () => {
  it('approvals:answer:reason-units — 1,500 emoji (3,000 UTF-16 code units) are refused by AAP with 400 request.invalid at the reason (it was a 500) and by answerApproval with approval.invalid; 1,000 emoji (2,000 units) are taken', async () => {
    const { sid, call, approvalId } = await bookingStopped();
    const tooLong = '😀'.repeat(1500);
    const r = await turn(h.url, sid, permission(call.toolCallId, tooLong));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'request.invalid', path: '/messages/0/reason' });
    expect(r.json.error.message).toMatch(/at most 2000|more than 2000/);
    // ASCII over the limit: the same refusal.
    const ascii = await turn(h.url, sid, permission(call.toolCallId, 'x'.repeat(2001)));
    expect(ascii.status).toBe(400);
    expect(ascii.json.error).toMatchObject({ code: 'request.invalid', path: '/messages/0/reason' });
    // Through the session API: the same count.
    const session = (await h.runtime.session(sid))!;
    await expect(session.answerApproval(approvalId, { approved: false, reason: tooLong }, { userId: 'u' }, 'api')).rejects.toMatchObject({ code: 'approval.invalid' });
    await expect(h.runtime.answerApproval(approvalId, { approved: false, reason: tooLong }, { userId: 'u' }, 'api')).rejects.toMatchObject({ code: 'approval.invalid' });
    expect((await h.runtime.approval(approvalId))?.status).toBe('pending');
    // 2,000 units: taken over AAP.
    const fits = '😀'.repeat(1000);
    const ok = await turn(h.url, sid, permission(call.toolCallId, fits));
    expect(ok.status, ok.raw).toBe(200);
    const record = await h.runtime.approval(approvalId);
    expect(record).toMatchObject({ status: 'denied', resolution: { reason: fits, via: 'aap' } });
  });

  it('approvals:answer:invalid — approval.invalid over HTTP is a 400 naming the field, never a 500', () => {
    const e = toHttpError(new TurnstateError('approval.invalid', 'answerApproval(): reason is 3000 characters; at most 2000; nothing was answered'));
    expect(e.status).toBe(400);
    expect(e.toBody()).toEqual({ error: { code: 'approval.invalid', message: 'answerApproval(): reason is 3000 characters; at most 2000; nothing was answered' } });
  });
});
