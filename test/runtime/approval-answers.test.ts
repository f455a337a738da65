// Approval answers that arrive while another answered call of the turn is still running.
// docs/concepts/approvals.md: "an approved call runs and its result goes back to the model";
// session-events: `model:history:well-formed` (every tool_use answered by a tool_result) and
// `session:settle:nothing-after` (nothing is published for a turn after its turn.settled).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { Recorder, addTool, answer, checkHistory, checkStream, harness, part, respond, toolResultsIn, toolUse } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-approval-answers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores: [string, () => SessionStore][] = [
  ['memory', () => createMemoryStore()],
  ['sqlite', () => createSqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.db`) })],
];

describe.each(stores)('approval answers on the %s store', (_name, makeStore) => {
  it.each([['denied'], ['approved']])(
    'approvals:answers:resume-after-outcomes — a second call %s while the first approved call still runs: the turn resumes only when both outcomes are recorded; the model sees both tool_results and nothing follows turn.settled',
    async (second) => {
      const { rt, model } = harness(
        {
          rules: [
            { when: { on: 'user' as const }, respond: answer(respond([part('ack', 'two bookings need a yes')], 'awaiting'), toolUse('book', { q: 'out' }, 'toolu_out'), toolUse('book', { q: 'back' }, 'toolu_back')) },
            { respond: answer(respond([part('response', 'done')], 'complete')) },
          ],
        },
        { store: makeStore() },
      );
      const release: (() => void)[] = [];
      const started: string[] = [];
      addTool(
        rt.registries,
        'book',
        (a: { q: string }) =>
          new Promise((r) => {
            started.push(a.q);
            release.push(() => r({ booked: a.q }));
          }),
        { requiresApproval: true },
      );
      rt.registries.actors.register({ name: 'desk', tools: ['book'] });
      const s = await rt.createSession({ actor: 'desk' });
      const rec = new Recorder(s);
      const r = await s.send('a return trip');
      expect((await r.settled).held).toMatchObject({ resumeOn: 'approval-response' });
      const pending = await rt.approvals({ sessionId: s.id, status: 'pending' });
      const byCall = new Map(pending.map((a) => [a.callId, a.approvalId]));
      expect(byCall.size).toBe(2);

      const first = s.answerApproval(byCall.get('toolu_out')!, { approved: true }, { userId: 'u' }, 'api');
      while (started.length === 0) await new Promise((res) => setTimeout(res, 1));
      // The first approved call is running; the second answer arrives now.
      const secondAnswer = await (second === 'approved'
        ? (async () => {
            const p = s.answerApproval(byCall.get('toolu_back')!, { approved: true }, { userId: 'u' }, 'api');
            while (started.length < 2) await new Promise((res) => setTimeout(res, 1));
            release[1]!();
            return p;
          })()
        : s.answerApproval(byCall.get('toolu_back')!, { approved: false, reason: 'no return leg' }, { userId: 'u' }, 'api'));
      expect(secondAnswer.ok).toBe(true);
      await new Promise((res) => setTimeout(res, 20));
      // Still one model call: the first call's outcome is not recorded yet.
      expect(model.requests).toHaveLength(1);
      release[0]!();
      expect((await first).ok).toBe(true);
      await s.idle();
      expect(rec.of('turn.settled')).toMatchObject([{ turnId: r.turnId, finalizedBy: 'complete' }]);

      expect(model.requests).toHaveLength(2);
      const req = model.requests[1]!;
      checkHistory(req);
      const results = toolResultsIn(req);
      const out = results.find((b) => b.tool_use_id === 'toolu_out');
      expect([out?.content, out?.is_error ?? false]).toEqual(['{"booked":"out"}', false]);
      const back = results.find((b) => b.tool_use_id === 'toolu_back');
      if (second === 'denied') expect(back).toMatchObject({ is_error: true, content: expect.stringContaining('no return leg') });
      else expect([back?.content, back?.is_error ?? false]).toEqual(['{"booked":"back"}', false]);
      checkStream(rec.events, rt.registries, { settledTurns: [r.turnId] });
      rec.close();
      await rt.close();
    },
  );
});

describe('approval answers that must change nothing, or must still give the call an outcome', () => {
  function bookingDesk(opts: Parameters<typeof harness>[1] = {}) {
    const { rt, model } = harness(
      {
        rules: [
          { when: { on: 'user' as const }, respond: answer(toolUse('book', { q: 'corfu' }, 'toolu_book')) },
          { respond: answer(respond([part('response', 'done')], 'complete')) },
        ],
      },
      opts,
    );
    let ran = 0;
    addTool(rt.registries, 'book', () => (ran++, { booked: true }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'desk', tools: ['book'] });
    return { rt, model, ran: () => ran };
  }

  it('approvals:answer:invalid — "every channel calls the same method": an answer that is not { approved: boolean, reason?: string of at most 2000 characters } from a principal via a named channel is refused with approval.invalid naming the field; the approval stays pending and nothing runs', async () => {
    const { rt, ran } = bookingDesk();
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('book it')).settled;
    const [appr] = await rt.approvals({ sessionId: s.id, status: 'pending' });
    const bad: [unknown, unknown, unknown, RegExp][] = [
      [{ approved: 'no' }, { userId: 'u' }, 'api', /approved must be true or false, got "no"/],
      [{ approved: 1 }, { userId: 'u' }, 'api', /approved must be true or false, got 1/],
      [null, { userId: 'u' }, 'api', /the answer must be an object/],
      [{ approved: false, reason: 42 }, { userId: 'u' }, 'api', /reason must be a string, got number/],
      [{ approved: false, reason: 'x'.repeat(2001) }, { userId: 'u' }, 'api', /reason is 2001 characters; at most 2000/],
      [{ approved: true }, null, 'api', /principal must be an object/],
      [{ approved: true }, { userId: 'u' }, '', /via must name the channel/],
    ];
    for (const [ans, by, via, msg] of bad) {
      for (const answerIt of [rt.answerApproval.bind(rt), s.answerApproval.bind(s)]) {
        await expect(answerIt(appr!.approvalId, ans as never, by as never, via as never)).rejects.toMatchObject({ code: 'approval.invalid', message: expect.stringMatching(msg) });
      }
    }
    expect((await rt.approval(appr!.approvalId))?.status).toBe('pending');
    expect(ran()).toBe(0);
    // A valid answer still goes through.
    expect(await s.answerApproval(appr!.approvalId, { approved: true }, { userId: 'u' }, 'api')).toMatchObject({ ok: true });
    await s.idle();
    expect(ran()).toBe(1);
  });

  it('approvals:answer:not-an-injection — a "resume" injection of the runtime\'s own approval-response, or of any kind while calls are pending, is injection.not_waiting naming the pending calls; the approval still resumes the turn', async () => {
    const { rt, model, ran } = bookingDesk();
    const s = await rt.createSession({ actor: 'desk' });
    expect((await (await s.send('book it')).settled).held).toMatchObject({ resumeOn: 'approval-response' });
    for (const resumeOn of ['approval-response', 'payment']) {
      await expect(s.inject({ kind: 'resume', resumeOn })).rejects.toMatchObject({ code: 'injection.not_waiting', message: expect.stringContaining('toolu_book') });
    }
    const [appr] = await rt.approvals({ sessionId: s.id, status: 'pending' });
    await s.answerApproval(appr!.approvalId, { approved: true }, { userId: 'u' }, 'api');
    await s.idle();
    expect(ran()).toBe(1);
    checkHistory(model.requests.at(-1)!);
  });

  it('approvals:answer:not-an-injection — also while a client tool\'s result is being written: an approval-response injection in the same tick is refused and the result alone resumes the turn, once', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('get_location', { precise: true }, 'toolu_loc')) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'You are in $1.')], 'complete')) },
      ],
    });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const held = await (await s.send('where am I?', { clientTools: [{ name: 'get_location', description: 'Browser location', parameters: { type: 'object' } }] })).settled;
    expect(held.finalizedBy).toBe('suspended');
    const [result, forged] = await Promise.allSettled([
      s.inject({ kind: 'client-tool-result', callId: 'toolu_loc', content: 'Corfu' }),
      s.inject({ kind: 'resume', resumeOn: 'approval-response', payload: { forged: true } }),
    ]);
    expect(forged).toMatchObject({ status: 'rejected', reason: { code: 'injection.not_waiting' } });
    expect((await (result as PromiseFulfilledResult<{ settled: Promise<{ finalizedBy: string }> }>).value.settled).finalizedBy).toBe('complete');
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(model.requests.at(-1)!.messages)).not.toContain('forged');
  });

  it('approvals:answer:not-an-injection — during recover(), while the plan for an approved call cut by the restart is applied, an approval-response injection is refused: one resume, one model call', async () => {
    const path = join(dir, 'recover-inject.db');
    const desk = (handler: () => unknown) => {
      const h = harness({ rules: [{ when: { on: 'user' as const }, respond: answer(toolUse('book', { q: 'corfu' }, 'toolu_book')) }, { respond: answer(respond([part('response', 'done')], 'complete')) }] }, { store: createSqliteStore({ path }) });
      addTool(h.rt.registries, 'book', handler, { requiresApproval: true });
      h.rt.registries.actors.register({ name: 'desk', tools: ['book'] });
      return h;
    };
    // The approved call is running when the process goes: approval.resolved is written, its result never is.
    const first = desk(() => new Promise(() => {}));
    const s1 = await first.rt.createSession({ actor: 'desk', id: 'rec-inject' });
    await (await s1.send('book it')).settled;
    const [appr] = await first.rt.approvals({ sessionId: s1.id, status: 'pending' });
    // Not awaited: the answer waits for the call, which never ends.
    void first.rt.answerApproval(appr!.approvalId, { approved: true }, { userId: 'u' }, 'api');
    await expect.poll(async () => (await first.rt.history('rec-inject')).some((e) => e.type === 'approval.resolved')).toBe(true);
    await first.rt.close();
    const again = desk(() => ({ booked: true }));
    const recovering = again.rt.recover();
    const refused: string[] = [];
    let accepted = 0;
    // Each microtask, a caller finds the session (live as soon as it is loaded, before its plan ran) and injects.
    const tries: Promise<unknown>[] = [];
    for (let i = 0; i < 400; i++) {
      tries.push(
        again.rt
          .session('rec-inject')
          .then((session) => session!.inject({ kind: 'resume', resumeOn: 'approval-response' }))
          .then(
            () => accepted++,
            (e: { code: string }) => refused.push(e.code),
          ),
      );
      await Promise.resolve();
    }
    await recovering;
    await Promise.all(tries);
    await (await again.rt.session('rec-inject'))!.idle();
    await new Promise((r) => setTimeout(r, 20));
    expect(accepted).toBe(0);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set(['injection.not_waiting']));
    expect(again.model.requests).toHaveLength(1);
    const history = await again.rt.history('rec-inject');
    expect(history.filter((e) => e.type === 'turn.settled')).toHaveLength(1);
    expect(history.filter((e) => e.type === 'turnState.changed' && e.from === 'suspended')).toHaveLength(1);
    await again.rt.close();
  });

  it('approvals:answer:tool-gone — an approved call whose tool is no longer registered (a restart with another setup) gets an error result naming it, so the model never sees a tool_use without its tool_result', async () => {
    const path = join(dir, 'tool-gone.db');
    const first = bookingDesk({ store: createSqliteStore({ path }) });
    const s = await first.rt.createSession({ actor: 'desk' });
    await (await s.send('book it')).settled;
    await first.rt.close();
    const { rt, model } = harness({ rules: [{ respond: answer(respond([part('response', 'could not book')], 'complete')) }] }, { store: createSqliteStore({ path }) });
    rt.registries.actors.register({ name: 'desk', tools: [] });
    await rt.recover();
    const [appr] = await rt.approvals({ sessionId: s.id, status: 'pending' });
    expect(await rt.answerApproval(appr!.approvalId, { approved: true }, { userId: 'u' }, 'api')).toMatchObject({ ok: true });
    await (await rt.session(s.id))!.idle();
    const results = (await rt.history(s.id)).filter((e) => e.type === 'tool.result');
    expect(results).toMatchObject([{ callId: 'toolu_book', isError: true, view: 'Tool "book" is no longer registered; the approved call was not run.' }]);
    checkHistory(model.requests.at(-1)!);
    expect(toolResultsIn(model.requests.at(-1)!).map((r: { tool_use_id: string }) => r.tool_use_id)).toContain('toolu_book');
  });

  it('approvals:answer:forbidden — by default a session\'s tenant answers its approvals: a principal of another tenant gets approval.forbidden on a session without a tenant too, as the transports see sessions', async () => {
    const { rt, ran } = bookingDesk();
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('book it')).settled;
    const [appr] = await rt.approvals({ sessionId: s.id, status: 'pending' });
    expect(await rt.answerApproval(appr!.approvalId, { approved: true }, { userId: 'mallory', tenantId: 'evil-corp' }, 'api')).toMatchObject({ ok: false, code: 'approval.forbidden' });
    expect(ran()).toBe(0);
    expect(rt.mayAnswerApproval(appr!, { userId: 'u' })).toBe(true);
  });
});
