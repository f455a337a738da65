/**
 * Random interleavings of sends, approvals, denials, duplicate answers, answers for unknown
 * ids, restarts (close the runtime, open a new one on the same SQLite file, recover()) and
 * subscriber reconnects (events(lastSeenSeq)). After every step:
 * - the log is 1..n, and what the reconnecting subscriber saw is exactly the log, once each;
 * - no denied tool ever ran; an approved one ran exactly once;
 * - exactly one decision per approval: later answers get approval.already_resolved with the first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Subscription } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import type { TurnstateRuntime } from '../../src/runtime.js';
import type { SessionHandle } from '../../src/api.js';
import type { AnswerResult, ApprovalDecision, SessionEvent } from '../../src/types.js';
import { buildDesk } from './fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-approvals-prop-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Cmd =
  | { c: 'send'; text: 'book' | 'pair' | 'chat' | 'charge' }
  | { c: 'answer'; pick: number; approved: boolean; through: 'runtime' | 'session' }
  | { c: 'unknown' }
  | { c: 'restart' }
  /** Close the runtime right after starting work, without waiting for the session to come to rest. */
  | { c: 'crash'; after: 'send' | 'answer'; ticks: number; approved: boolean }
  | { c: 'reconnect' };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ c: fc.constant('send' as const), text: fc.constantFrom('book' as const, 'pair' as const, 'book' as const, 'pair' as const, 'chat' as const, 'charge' as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      c: fc.constant('answer' as const),
      pick: fc.nat({ max: 20 }),
      approved: fc.boolean(),
      through: fc.constantFrom('runtime' as const, 'session' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ c: fc.constant('unknown' as const) }) },
  { weight: 3, arbitrary: fc.record({ c: fc.constant('restart' as const) }) },
  { weight: 2, arbitrary: fc.record({ c: fc.constant('crash' as const), after: fc.constantFrom('send' as const, 'answer' as const), ticks: fc.nat({ max: 40 }), approved: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ c: fc.constant('reconnect' as const) }) },
);

let run = 0;

async function execute(cmds: Cmd[]): Promise<void> {
  const n = ++run;
  const db = join(dir, `p${n}.db`);
  const sideLog = join(dir, `p${n}.log`);
  const ran = new Map<string, number>();
  const onHandler = (_tool: string, callId: string) => ran.set(callId, (ran.get(callId) ?? 0) + 1);
  const open = () => buildDesk({ db, sideLog, onHandler });
  let rt: TurnstateRuntime = open();
  const sessionId = 'prop';
  let s: SessionHandle = await rt.createSession({ id: sessionId, actor: 'desk' });
  const seen: number[] = [];
  let lastSeen = 0;
  let sub: Subscription | undefined;
  const subscribe = () => {
    sub = s.events(lastSeen).subscribe((e: SessionEvent) => {
      seen.push(e.seq);
      lastSeen = e.seq;
    });
  };
  subscribe();
  /** First decision per approval id, as the test saw it. */
  const decided = new Map<string, ApprovalDecision>();
  const approvalIds: string[] = [];

  const quiesce = async () => {
    for (let i = 0; i < 10_000; i++) {
      const snap = await s.snapshot();
      if ((snap.state === 'idle' && snap.queued === 0) || snap.state === 'suspended') {
        for (const a of await rt.store.listApprovals({ sessionId })) if (!approvalIds.includes(a.approvalId)) approvalIds.push(a.approvalId);
        return;
      }
      await new Promise((r) => setImmediate(r));
    }
    throw new Error('the session never came to rest');
  };

  const check = async () => {
    await quiesce();
    const log = await rt.store.readEvents(sessionId, 0);
    const seqs = log.map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    // approvals:subscriber:exactly-once
    expect(seen).toEqual(seqs);
    const records = await rt.store.listApprovals({ sessionId });
    for (const r of records) {
      const count = ran.get(r.callId) ?? 0;
      // approvals:denied:never-runs / approvals:approved:runs-once
      if (r.status === 'denied') expect(count).toBe(0);
      else if (r.status === 'approved') {
        // Exactly once, unless a crash cut it off: then at most once, and the model was told its outcome is unknown.
        const result = log.find((e) => e.type === 'tool.result' && e.callId === r.callId);
        const unknown = result?.type === 'tool.result' && /unknown/.test(String(result.view));
        if (unknown) expect(count).toBeLessThanOrEqual(1);
        else if (result) expect(count).toBe(1);
        else expect(count).toBe(0);
      } else expect(count).toBe(0);
      // approvals:decision:exactly-one
      const first = decided.get(r.approvalId);
      if (first) expect(r.status).toBe(first);
      const resolvedEvents = log.filter((e) => e.type === 'approval.resolved' && e.approvalId === r.approvalId);
      expect(resolvedEvents).toHaveLength(r.status === 'pending' ? 0 : 1);
    }
    for (const c of ran.values()) expect(c).toBe(1);
  };

  try {
    for (const k of [{ c: 'send', text: 'pair' } as const, ...cmds]) {
      switch (k.c) {
        case 'send':
          await s.send(k.text === 'chat' ? 'hi there' : k.text === 'charge' ? 'charge it' : `${k.text} Corfu`);
          break;
        case 'answer': {
          if (approvalIds.length === 0) break;
          // Even picks prefer a pending approval; odd ones any (often a duplicate answer).
          const pending = approvalIds.filter((a) => !decided.has(a));
          const from = k.pick % 2 === 0 && pending.length > 0 ? pending : approvalIds;
          const id = from[(k.pick >> 1) % from.length]!;
          const answer = { approved: k.approved, ...(k.approved ? {} : { reason: 'too expensive' }) };
          const by = { userId: `u${k.pick}` };
          const r: AnswerResult = k.through === 'runtime' ? await rt.answerApproval(id, answer, by, 'api') : await s.answerApproval(id, answer, by, 'chat');
          const first = decided.get(id);
          if (first === undefined) {
            expect(r.ok).toBe(true);
            decided.set(id, k.approved ? 'approved' : 'denied');
          } else {
            expect(r).toMatchObject({ ok: false, code: 'approval.already_resolved', record: { status: first, resolution: { decision: first } } });
          }
          break;
        }
        case 'unknown': {
          const r1 = await rt.answerApproval('appr_nope', { approved: true }, { userId: 'x' }, 'api');
          expect(r1).toMatchObject({ ok: false, code: 'approval.not_found' });
          const r2 = await s.answerApproval('appr_nope', { approved: false }, { userId: 'x' }, 'chat');
          expect(r2).toMatchObject({ ok: false, code: 'approval.not_found' });
          break;
        }
        case 'restart': {
          await quiesce();
          sub?.unsubscribe();
          await rt.close();
          rt = open();
          await rt.recover();
          s = (await rt.session(sessionId))!;
          expect(s).toBeDefined();
          subscribe();
          break;
        }
        case 'crash': {
          // Start work and close the runtime a few ticks later, wherever the work has got to.
          let inFlight: Promise<unknown> = Promise.resolve();
          let attempted: { id: string; decision: ApprovalDecision } | undefined;
          if (k.after === 'send') inFlight = s.send(k.approved ? 'charge it' : 'pair Corfu');
          else {
            const pending = approvalIds.filter((a) => !decided.has(a));
            if (pending[0]) {
              attempted = { id: pending[0], decision: k.approved ? 'approved' : 'denied' };
              inFlight = rt.answerApproval(pending[0], { approved: k.approved }, { userId: 'crasher' }, 'api');
            }
          }
          inFlight.catch(() => undefined);
          for (let i = 0; i < k.ticks; i++) await Promise.resolve();
          await rt.close();
          sub?.unsubscribe();
          rt = open();
          await rt.recover();
          s = (await rt.session(sessionId))!;
          if (attempted) {
            const rec = await rt.store.getApproval(attempted.id);
            // The interrupted answer either was stored (and is the one decision) or was not.
            if (rec?.status !== 'pending') {
              expect(rec?.status).toBe(attempted.decision);
              decided.set(attempted.id, attempted.decision);
            }
          }
          subscribe();
          break;
        }
        case 'reconnect':
          sub?.unsubscribe();
          subscribe();
          break;
      }
      await check();
    }
  } finally {
    sub?.unsubscribe();
    await rt.close();
  }
}

describe('approvals under random interleavings with restarts (SQLite)', () => {
  it('approvals:property — no event lost or duplicated, no denied tool ran, exactly one decision per approval', async () => {
    await fc.assert(fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 24 }), execute), { numRuns: 30 });
  }, 120_000);
});
