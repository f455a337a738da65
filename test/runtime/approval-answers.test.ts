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
