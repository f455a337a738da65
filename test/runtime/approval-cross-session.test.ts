/**
 * approval-answers.ts contract: "an approval of another session is `approval.not_found` (never
 * confirmed to exist)". A session handle must not resolve (or run) another session's approval.
 */
import { describe, expect, it } from 'vitest';
import { addTool, answer, harness, part, respond, toolUse } from '../runtime/helpers.js';

describe('answering an approval through another session', () => {
  it('approvals:answer:other-session — "an approval of another session is approval.not_found (never confirmed to exist)": answered through another session\'s handle, it stays pending and its call does not run', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(respond([part('ack', 'needs a yes')], 'awaiting'), toolUse('book', { q: 'x' })) },
        { respond: answer(respond([part('response', 'done')], 'complete')) },
      ],
    });
    let ran = 0;
    addTool(rt.registries, 'book', () => (ran++, { booked: true }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'desk', tools: ['book'] });
    const a = await rt.createSession({ actor: 'desk' });
    const b = await rt.createSession({ actor: 'desk' });
    expect((await (await a.send('book it')).settled).held).toMatchObject({ resumeOn: 'approval-response' });
    const [pending] = await rt.approvals({ sessionId: a.id, status: 'pending' });
    const res = await b.answerApproval(pending!.approvalId, { approved: true }, { userId: 'u' }, 'api');
    expect(res).toMatchObject({ ok: false, code: 'approval.not_found' });
    expect((await rt.approval(pending!.approvalId))?.status).toBe('pending');
    expect(ran).toBe(0);
    await rt.close();
  });
});
