/**
 * The SessionStore contract suite. Every store runs it unchanged:
 *
 *   runStoreSuite('memory', () => createMemoryStore());
 *   runStoreSuite('sqlite', () => createSqliteStore({ path }), (s) => { s.close(); return createSqliteStore({ path }); });
 *
 * `make` returns a fresh, empty store per test. `reopen`, for durable stores, closes the given
 * store and opens a new one over the same data; with it the suite also checks that everything
 * survives a restart.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import fc from 'fast-check';
import { TurnstateError } from '../../src/errors.js';
import type { PersistedSession, QueuedEntry, SessionStore, StepCommit } from '../../src/machines/ports.js';
import type { ApprovalRecord, ExecutionRecord, MailboxEntry, SessionEvent } from '../../src/types.js';
import { approval, event, events, execution, mail, resolution, session, snapshot } from './fixtures/records.js';

export { approval, event, events, execution, mail, resolution, session, snapshot };

type Make = () => SessionStore | Promise<SessionStore>;
type Reopen = (store: SessionStore) => SessionStore | Promise<SessionStore>;

async function expectCode(fn: () => unknown, code: string): Promise<TurnstateError> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected a TurnstateError ${code}`).toBeInstanceOf(TurnstateError);
  expect((caught as TurnstateError).code).toBe(code);
  return caught as TurnstateError;
}

/* ------------------------------------------------------------------ the suite */

export function runStoreSuite(name: string, make: Make, reopen?: Reopen): void {
  describe(`SessionStore contract: ${name}`, () => {
    let store: SessionStore;

    beforeEach(async () => {
      store = await make();
    });
    afterEach(async () => {
      await store.close();
    });

    /** Everything recorded for a session, read through the port. */
    async function dump(id: string) {
      return {
        session: await store.getSession(id),
        events: await store.readEvents(id, 0),
        lastSeq: await store.lastSeq(id),
        mailbox: await store.readMailbox(id),
        executions: await store.readExecutions(id),
        snapshot: await store.loadSnapshot(id),
        approvals: await store.listApprovals({ sessionId: id }),
      };
    }

    describe('sessions', () => {
      it('store:session:create-get — a created session reads back; an unknown id is undefined', async () => {
        await store.createSession(session('s1', 'acme'));
        expect(await store.getSession('s1')).toEqual(session('s1', 'acme'));
        expect(await store.getSession('nope')).toBeUndefined();
        expect(await store.lastSeq('s1')).toBe(0);
        expect(await store.readEvents('s1', 0)).toEqual([]);
        expect(await store.loadSnapshot('s1')).toBeUndefined();
      });

      it('store:session:duplicate — creating an existing id throws store.session_exists and keeps the first', async () => {
        await store.createSession(session('s1', 'acme'));
        await expectCode(() => store.createSession(session('s1', 'other')), 'store.session_exists');
        expect((await store.getSession('s1'))?.tenantId).toBe('acme');
      });

      it('store:session:invalid — a record without an id is refused', async () => {
        await expectCode(() => store.createSession({ ...session('x'), id: '' }), 'store.invalid_argument');
      });

      it('store:session:list-tenant — listSessions returns all in creation order, or those of one tenant', async () => {
        await store.createSession(session('a', 't1'));
        await store.createSession(session('b', 't2'));
        await store.createSession(session('c', 't1'));
        await store.createSession(session('d'));
        expect((await store.listSessions()).map((s) => s.id)).toEqual(['a', 'b', 'c', 'd']);
        expect((await store.listSessions({})).map((s) => s.id)).toEqual(['a', 'b', 'c', 'd']);
        expect((await store.listSessions({ tenantId: 't1' })).map((s) => s.id)).toEqual(['a', 'c']);
        expect((await store.listSessions({ tenantId: 't2' })).map((s) => s.id)).toEqual(['b']);
        expect(await store.listSessions({ tenantId: 'none' })).toEqual([]);
      });

      it('store:session:delete — deleteSession removes everything of that session and nothing of another', async () => {
        for (const id of ['gone', 'kept']) {
          await store.createSession(session(id));
          await store.commit(id, {
            events: events(id, 1, 3),
            mailbox: [mail(`${id} 1`)],
            executions: [execution(id, `${id}-x`)],
            approvals: [approval(id, `${id}-ap`)],
            snapshot: snapshot(1),
          });
        }
        const keptBefore = await dump('kept');
        await store.deleteSession('gone');
        expect(await dump('gone')).toEqual({
          session: undefined,
          events: [],
          lastSeq: 0,
          mailbox: [],
          executions: [],
          snapshot: undefined,
          approvals: [],
        });
        expect(await store.getApproval('gone-ap')).toBeUndefined();
        expect(await store.resolveApproval('gone-ap', resolution('approved', 'u'))).toBeUndefined();
        expect(await dump('kept')).toEqual(keptBefore);
        expect((await store.listSessions()).map((s) => s.id)).toEqual(['kept']);
        await store.deleteSession('never-existed');
        // A deleted id can be created again and starts over at seq 1.
        await store.createSession(session('gone'));
        await store.commit('gone', { events: events('gone', 1, 1) });
        expect(await store.lastSeq('gone')).toBe(1);
      });
    });

    describe('commit', () => {
      beforeEach(async () => {
        await store.createSession(session('s1'));
      });

      it('store:commit:all-parts — one commit writes events, mailbox, executions, approvals and snapshot', async () => {
        const step: StepCommit = {
          events: events('s1', 1, 5),
          mailbox: [mail('a'), mail('b')],
          executions: [execution('s1', 'x1')],
          approvals: [approval('s1', 'ap1')],
          snapshot: snapshot(1),
        };
        await store.commit('s1', step);
        const d = await dump('s1');
        expect(d.events).toEqual(step.events);
        expect(d.lastSeq).toBe(5);
        expect(d.mailbox).toEqual(step.mailbox);
        expect(d.executions).toEqual(step.executions);
        expect(d.approvals).toEqual(step.approvals);
        expect(d.snapshot).toEqual(step.snapshot);
        // An empty step is valid and changes nothing.
        await store.commit('s1', {});
        expect(await dump('s1')).toEqual(d);
      });

      it('store:commit:unknown-session — committing to a session that was never created throws store.session_not_found', async () => {
        await expectCode(() => store.commit('ghost', { events: events('ghost', 1, 1) }), 'store.session_not_found');
        expect(await store.readEvents('ghost', 0)).toEqual([]);
        expect(await store.getSession('ghost')).toBeUndefined();
      });

      it('store:commit:creates-session — a commit that carries its session record creates the session with its first records, atomically', async () => {
        const rec = session('born', 'tenant-x');
        await store.commit('born', { session: rec, events: events('born', 1, 2), mailbox: [mail('hello')] });
        expect(await store.getSession('born')).toEqual(rec);
        expect((await store.listSessions({ tenantId: 'tenant-x' })).map((r) => r.id)).toEqual(['born']);
        expect((await store.readEvents('born', 0)).map((e) => e.seq)).toEqual([1, 2]);
        expect(await store.readMailbox('born')).toEqual([mail('hello')]);
        // A rejected first commit creates nothing.
        await expectCode(() => store.commit('stillborn', { session: session('stillborn'), events: events('stillborn', 2, 1) }), 'store.seq_conflict');
        expect(await store.getSession('stillborn')).toBeUndefined();
        // A record for another id does not create anything.
        await expectCode(() => store.commit('other', { session: session('not-other'), events: events('other', 1, 1) }), 'store.session_not_found');
        expect(await store.getSession('other')).toBeUndefined();
        // The record of a session that exists changes nothing of it: the commit continues its log.
        await store.commit('born', { session: session('born', 'tenant-y'), events: events('born', 3, 1) });
        expect(await store.getSession('born')).toEqual(rec);
        expect((await store.readEvents('born', 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
      });

      describe('atomicity: a rejected commit writes nothing', () => {
        beforeEach(async () => {
          await store.commit('s1', {
            events: events('s1', 1, 3),
            mailbox: [mail('m1')],
            executions: [execution('s1', 'x1')],
            approvals: [approval('s1', 'ap1')],
            snapshot: snapshot(1),
          });
        });

        /** A step whose every other part is valid, so only the seq rule can reject it. */
        const fullStep = (evs: SessionEvent[]): StepCommit => ({
          events: evs,
          mailbox: [mail('m2'), mail('m3')],
          executions: [execution('s1', 'x2')],
          approvals: [approval('s1', 'ap2'), { ...approval('s1', 'ap1'), args: { totalCost: 1 } }],
          snapshot: snapshot(2),
        });

        const cases: [string, () => SessionEvent[]][] = [
          ['store:seq:gap — first event skips a seq', () => events('s1', 5, 2)],
          ['store:seq:duplicate — first event repeats the last stored seq', () => events('s1', 3, 2)],
          ['store:seq:restart — first event restarts at 1', () => events('s1', 1, 1)],
          ['store:seq:gap-inside — a later event of the batch skips a seq', () => [event('s1', 4), event('s1', 5), event('s1', 7)]],
          ['store:seq:duplicate-inside — a later event of the batch repeats a seq', () => [event('s1', 4), event('s1', 5), event('s1', 5)]],
          ['store:seq:decreasing — a batch out of order', () => [event('s1', 5), event('s1', 4)]],
          ['store:seq:not-a-number — a seq that is not an integer', () => [{ ...event('s1', 4), seq: 4.5 }]],
        ];
        for (const [title, evs] of cases) {
          it(`${title}: throws store.seq_conflict, nothing written`, async () => {
            const before = await dump('s1');
            const err = await expectCode(() => store.commit('s1', fullStep(evs())), 'store.seq_conflict');
            expect(err.details?.['sessionId']).toBe('s1');
            expect(err.message).toMatch(/nothing of this commit was written/);
            expect(await dump('s1')).toEqual(before);
            expect(await store.getApproval('ap2')).toBeUndefined();
            // The log still accepts the right continuation.
            await store.commit('s1', fullStep(events('s1', 4, 2)));
            expect(await store.lastSeq('s1')).toBe(5);
            expect((await store.readMailbox('s1')).length).toBe(3);
            expect((await store.getApproval('ap1'))?.args).toEqual({ totalCost: 1 });
          });
        }

        it('store:commit:session-mismatch — an event, execution or approval naming another session is refused whole', async () => {
          const before = await dump('s1');
          await expectCode(
            () => store.commit('s1', { ...fullStep(events('s1', 4, 2)), events: [event('s1', 4), event('s2', 5)] }),
            'store.session_mismatch',
          );
          await expectCode(
            () => store.commit('s1', { ...fullStep(events('s1', 4, 2)), executions: [execution('s2', 'x9')] }),
            'store.session_mismatch',
          );
          await expectCode(
            () => store.commit('s1', { ...fullStep(events('s1', 4, 2)), approvals: [approval('s2', 'ap9')] }),
            'store.session_mismatch',
          );
          expect(await dump('s1')).toEqual(before);
        });

        it('hitl:approval:id-owned — an approval id that belongs to another session is refused, nothing written', async () => {
          await store.createSession(session('s2'));
          const before = await dump('s2');
          await expectCode(
            () => store.commit('s2', { events: events('s2', 1, 2), mailbox: [mail('x')], approvals: [approval('s2', 'ap1')] }),
            'store.approval_conflict',
          );
          expect(await dump('s2')).toEqual(before);
          expect((await store.getApproval('ap1'))?.sessionId).toBe('s1');
        });

        it('store:commit:creates-session:rejected — "a rejected commit creates nothing": a first commit carrying its session record is refused whole when an approval id belongs to another session (store.approval_conflict) or a queued message is invalid, and leaves no session', async () => {
          const sessionsBefore = (await store.listSessions()).map((r) => r.id);
          await expectCode(
            () => store.commit('born', { session: session('born'), events: events('born', 1, 2), mailbox: [mail('x')], approvals: [approval('born', 'ap1')] }),
            'store.approval_conflict',
          );
          const bad = { turnId: 'q1', pos: 1.5, message: { text: 'later' }, opts: {} } as unknown as QueuedEntry;
          await expectCode(() => store.commit('born', { session: session('born'), events: events('born', 1, 1), enqueue: [bad] }), 'store.invalid_argument');
          expect(await store.getSession('born')).toBeUndefined();
          expect((await store.listSessions()).map((r) => r.id)).toEqual(sessionsBefore);
          expect(await dump('born')).toEqual({ session: undefined, events: [], lastSeq: 0, mailbox: [], executions: [], snapshot: undefined, approvals: [] });
          expect((await store.getApproval('ap1'))?.sessionId).toBe('s1');
          // Without the conflict, the same first commit creates the session from seq 1.
          await store.commit('born', { session: session('born'), events: events('born', 1, 2), approvals: [approval('born', 'ap-born')] });
          expect(await store.getSession('born')).toEqual(session('born'));
          expect((await store.readEvents('born', 0)).map((e) => e.seq)).toEqual([1, 2]);
        });
      });

      it('store:commit:write-ahead — events committed are readable at once (a step is durable before it is published)', async () => {
        const evs = events('s1', 1, 2);
        await store.commit('s1', { events: evs });
        expect(await store.readEvents('s1', 0)).toEqual(evs);
      });
    });

    describe('event log', () => {
      beforeEach(async () => {
        await store.createSession(session('s1'));
      });

      it('store:events:read-after — for random batches, readEvents(afterSeq) is exactly the events after it, for every afterSeq', async () => {
        let run = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 0, maxLength: 12 }), async (batches) => {
            const id = `prop-${run++}`;
            await store.createSession(session(id));
            const all: SessionEvent[] = [];
            for (const size of batches) {
              const batch = events(id, all.length + 1, size, `turn-${all.length}`);
              await store.commit(id, { events: batch });
              all.push(...batch);
            }
            const n = all.length;
            expect(await store.lastSeq(id)).toBe(n);
            for (let after = 0; after <= n; after++) {
              const got = await store.readEvents(id, after);
              expect(got).toEqual(all.slice(after));
            }
            expect(await store.readEvents(id, n + 5)).toEqual([]);
            expect(await store.readEvents(id, -3)).toEqual(all);
          }),
          { numRuns: 40 },
        );
      });

      it('store:events:limit — readEvents(afterSeq, limit) returns at most limit events, starting after afterSeq', async () => {
        const all = events('s1', 1, 10);
        await store.commit('s1', { events: all.slice(0, 4) });
        await store.commit('s1', { events: all.slice(4) });
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), async (after, limit) => {
            expect(await store.readEvents('s1', after, limit)).toEqual(all.slice(after, after + limit));
          }),
          { numRuns: 60 },
        );
      });

      it('store:events:invalid — a NaN afterSeq or a negative limit is refused with store.invalid_argument', async () => {
        await expectCode(() => store.readEvents('s1', Number.NaN), 'store.invalid_argument');
        await expectCode(() => store.readEvents('s1', 0, -1), 'store.invalid_argument');
      });

      it('store:events:invalid-value — a refused read names the value it got (NaN, not null)', async () => {
        const afterSeq = await expectCode(() => store.readEvents('s1', Number.NaN), 'store.invalid_argument');
        expect(afterSeq.message).toMatch(/afterSeq must be a number, got NaN$/);
        const limit = await expectCode(() => store.readEvents('s1', 0, Number.NaN), 'store.invalid_argument');
        expect(limit.message).toMatch(/got NaN$/);
        const afterN = await expectCode(() => store.readMailbox('s1', Number.NaN), 'store.invalid_argument');
        expect(afterN.message).toMatch(/got NaN$/);
        const text = await expectCode(() => store.readEvents('s1', '3' as unknown as number), 'store.invalid_argument');
        expect(text.message).toMatch(/got "3"$/);
      });

      it('store:events:last-seq — lastSeq follows every commit; 0 for an unknown session', async () => {
        expect(await store.lastSeq('s1')).toBe(0);
        await store.commit('s1', { events: events('s1', 1, 2) });
        expect(await store.lastSeq('s1')).toBe(2);
        await store.commit('s1', { mailbox: [mail('only mailbox')] });
        expect(await store.lastSeq('s1')).toBe(2);
        await store.commit('s1', { events: events('s1', 3, 1) });
        expect(await store.lastSeq('s1')).toBe(3);
        expect(await store.lastSeq('unknown')).toBe(0);
      });

      it('store:events:model — random commits across two sessions, some with bad seqs, match a model after every step', async () => {
        await store.createSession(session('s2'));
        const op = fc.record({
          s: fc.constantFrom('s1', 's2'),
          events: fc.integer({ min: 0, max: 4 }),
          mailbox: fc.integer({ min: 0, max: 3 }),
          fault: fc.constantFrom('none', 'none', 'none', 'gap', 'dup'),
        });
        let round = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(op, { maxLength: 15 }), async (ops) => {
            round++;
            const ids = { s1: `m${round}-a`, s2: `m${round}-b` };
            const model: Record<string, { events: SessionEvent[]; mailbox: MailboxEntry[]; snap?: PersistedSession }> = {};
            for (const id of Object.values(ids)) {
              await store.createSession(session(id));
              model[id] = { events: [], mailbox: [] };
            }
            for (const [k, o] of ops.entries()) {
              const id = ids[o.s as 's1' | 's2'];
              const m = model[id]!;
              const last = m.events.length;
              const faulty = o.fault !== 'none';
              // gap: skips one seq; dup: repeats the last one (seq 0 on an empty log).
              const from = o.fault === 'gap' ? last + 2 : o.fault === 'dup' ? last : last + 1;
              const evs = events(id, from, faulty ? Math.max(1, o.events) : o.events, `turn-${k}`);
              const mb = Array.from({ length: o.mailbox }, (_, i) => mail(`${k}.${i}`));
              const step: StepCommit = { events: evs, mailbox: mb, snapshot: snapshot(k) };
              if (faulty) {
                await expectCode(() => store.commit(id, step), 'store.seq_conflict');
              } else {
                await store.commit(id, step);
                m.events.push(...evs);
                m.mailbox.push(...mb);
                m.snap = step.snapshot;
              }
              for (const mid of Object.values(ids)) {
                const mm = model[mid]!;
                expect(await store.lastSeq(mid)).toBe(mm.events.length);
                expect((await store.readMailbox(mid)).length).toBe(mm.mailbox.length);
              }
            }
            for (const id of Object.values(ids)) {
              expect(await store.readEvents(id, 0)).toEqual(model[id]!.events);
              expect(await store.readMailbox(id)).toEqual(model[id]!.mailbox);
              expect(await store.loadSnapshot(id)).toEqual(model[id]!.snap);
            }
          }),
          { numRuns: 25 },
        );
      });
    });

    describe('mailbox, execution log, snapshot', () => {
      beforeEach(async () => {
        await store.createSession(session('s1'));
      });

      it('store:mailbox:order — entries read back in commit order across commits, every kind intact', async () => {
        const entries: MailboxEntry[] = [
          mail('hi'),
          { kind: 'assistant', actor: 'concierge', turnId: 't1', at: 'x', content: [{ type: 'tool_use', id: 'c1', name: 'respond', input: { parts: [] } }] },
          { kind: 'tool_result', actor: 'concierge', turnId: 't1', at: 'x', callId: 'c1', tool: 'respond', content: 'ok', isError: false },
          { kind: 'handoff', from: 'concierge', to: 'booker', turnId: 't1', at: 'x', parts: [{ text: 'over to you', metadata: { partType: 'response' } }] },
          { kind: 'data', actor: 'booker', callId: 'c2', tool: 'flight_search', turnId: 't1', at: 'x', data: { flights: [1, 2] } },
          { kind: 'nudge', actor: 'booker', text: 'call respond()', turnId: 't1', at: 'x' },
        ];
        await store.commit('s1', { mailbox: entries.slice(0, 2) });
        await store.commit('s1', { mailbox: entries.slice(2, 3) });
        await store.commit('s1', { mailbox: entries.slice(3) });
        expect(await store.readMailbox('s1')).toEqual(entries);
        expect(await store.readMailbox('unknown')).toEqual([]);
      });

      it('exec-log:append — every execution (spec 002 specialist_execution: actor, tool, args, result, duration, scope, routing, bypass reason) reads back in order', async () => {
        const a = execution('s1', 'x1');
        const b: ExecutionRecord = { ...execution('s1', 'x2'), kind: 'generalist_execution', scope: 'generalist', routing: 'routed', isError: true, resultTruncated: true };
        delete b.bypassReason;
        await store.commit('s1', { executions: [a] });
        await store.commit('s1', { executions: [b] });
        expect(await store.readExecutions('s1')).toEqual([a, b]);
        expect(await store.readExecutions('unknown')).toEqual([]);
      });

      it('store:snapshot:replaced — each commit with a snapshot replaces the previous one; a commit without one keeps it', async () => {
        await store.commit('s1', { snapshot: snapshot(1) });
        expect(await store.loadSnapshot('s1')).toEqual(snapshot(1));
        await store.commit('s1', { snapshot: snapshot(2) });
        expect(await store.loadSnapshot('s1')).toEqual(snapshot(2));
        await store.commit('s1', { events: events('s1', 1, 1) });
        expect(await store.loadSnapshot('s1')).toEqual(snapshot(2));
        expect(await store.loadSnapshot('unknown')).toBeUndefined();
      });
    });

    describe('incremental mailbox, queued messages', () => {
      const queued = (turnId: string, pos: number, text = `m-${turnId}`): QueuedEntry => ({ turnId, pos, message: { text }, opts: { consumesLlmContext: pos % 2 === 0 } });

      beforeEach(async () => {
        await store.createSession(session('s1'));
      });

      it('store:mailbox:after — readMailbox(id, n) returns exactly the entries after the first n, whatever commits they came in', async () => {
        const all = Array.from({ length: 12 }, (_, i) => mail(`m${i}`));
        // Commits of 1, 3, 0 (events only), 5 and 3 entries.
        await store.commit('s1', { mailbox: all.slice(0, 1) });
        await store.commit('s1', { mailbox: all.slice(1, 4) });
        await store.commit('s1', { events: events('s1', 1, 1) });
        await store.commit('s1', { mailbox: all.slice(4, 9) });
        await store.commit('s1', { mailbox: all.slice(9) });
        for (let n = 0; n <= 13; n++) expect(await store.readMailbox('s1', n), `after ${n}`).toEqual(all.slice(n));
        expect(await store.readMailbox('unknown', 3)).toEqual([]);
        await expectCode(() => store.readMailbox('s1', -1), 'store.invalid_argument');
      });

      it('store:queue:records — enqueued messages read back in pos order until dequeued; a message and its dequeue in one commit net out', async () => {
        expect(await store.readQueue('s1')).toEqual([]);
        await store.commit('s1', { enqueue: [queued('t2', 1)] });
        await store.commit('s1', { enqueue: [queued('t3', 2)] });
        // Put back in front (a message that joined a turn too late).
        await store.commit('s1', { enqueue: [queued('t1', -1)], events: events('s1', 1, 1) });
        expect(await store.readQueue('s1')).toEqual([queued('t1', -1), queued('t2', 1), queued('t3', 2)]);
        await store.commit('s1', { dequeue: ['t1'], events: events('s1', 2, 1), snapshot: snapshot(1) });
        expect((await store.readQueue('s1')).map((q) => q.turnId)).toEqual(['t2', 't3']);
        await store.commit('s1', { enqueue: [queued('t4', 3)], dequeue: ['t4', 'unknown'] });
        expect((await store.readQueue('s1')).map((q) => q.turnId)).toEqual(['t2', 't3']);
        expect(await store.readQueue('unknown')).toEqual([]);
        await store.deleteSession('s1');
        expect(await store.readQueue('s1')).toEqual([]);
      });

      it('store:queue:invalid — a queued message without a turn id, an integer pos or text is refused by name, and nothing of its commit is written', async () => {
        const bad: unknown[] = [{ ...queued('t1', 1), turnId: '' }, { ...queued('t1', 1), pos: 1.5 }, { ...queued('t1', 1), message: {} }];
        for (const q of bad) {
          const err = await expectCode(() => store.commit('s1', { events: events('s1', 1, 1), enqueue: [q as QueuedEntry] }), 'store.invalid_argument');
          expect(err.message).toMatch(/queued message 0/);
        }
        expect(await store.lastSeq('s1')).toBe(0);
        expect(await store.readQueue('s1')).toEqual([]);
      });

      it('store:queue:isolation — each session reads only its own queue', async () => {
        await store.createSession(session('s2'));
        await store.commit('s1', { enqueue: [queued('a', 1)] });
        await store.commit('s2', { enqueue: [queued('b', 1)] });
        expect((await store.readQueue('s1')).map((q) => q.turnId)).toEqual(['a']);
        expect((await store.readQueue('s2')).map((q) => q.turnId)).toEqual(['b']);
      });

      if (reopen !== undefined) {
        it('store:queue:survives-restart — queued messages survive close + reopen', async () => {
          await store.commit('s1', { enqueue: [queued('t2', 1), queued('t3', 2)] });
          await store.commit('s1', { dequeue: ['t2'] });
          store = await reopen(store);
          expect(await store.readQueue('s1')).toEqual([queued('t3', 2)]);
          expect(await store.readMailbox('s1', 0)).toEqual([]);
        });
      }
    });

    describe('approvals', () => {
      beforeEach(async () => {
        await store.createSession(session('s1'));
        await store.createSession(session('s2'));
      });

      it('hitl:approval:put-get — an approval committed with a step reads back by id; an unknown id is undefined', async () => {
        const a = approval('s1', 'ap1');
        await store.commit('s1', { events: events('s1', 1, 1), approvals: [a] });
        expect(await store.getApproval('ap1')).toEqual(a);
        expect(await store.getApproval('nope')).toBeUndefined();
      });

      it('hitl:approval:list — listApprovals by session, by status, by both, and all', async () => {
        await store.commit('s1', { approvals: [approval('s1', 'a1'), approval('s1', 'a2', 'denied')] });
        await store.commit('s2', { approvals: [approval('s2', 'b1'), approval('s2', 'b2', 'approved')] });
        await store.commit('s1', { approvals: [approval('s1', 'a3')] });
        const ids = (rs: ApprovalRecord[]) => rs.map((r) => r.approvalId);
        expect(ids(await store.listApprovals({}))).toEqual(['a1', 'a2', 'b1', 'b2', 'a3']);
        expect(ids(await store.listApprovals({ sessionId: 's1' }))).toEqual(['a1', 'a2', 'a3']);
        expect(ids(await store.listApprovals({ sessionId: 's2' }))).toEqual(['b1', 'b2']);
        expect(ids(await store.listApprovals({ status: 'pending' }))).toEqual(['a1', 'b1', 'a3']);
        expect(ids(await store.listApprovals({ status: 'approved' }))).toEqual(['b2']);
        expect(ids(await store.listApprovals({ sessionId: 's1', status: 'pending' }))).toEqual(['a1', 'a3']);
        expect(ids(await store.listApprovals({ sessionId: 's1', status: 'denied' }))).toEqual(['a2']);
        expect(await store.listApprovals({ sessionId: 'unknown' })).toEqual([]);
      });

      it('hitl:approval:first-wins — the first answer resolves; a second answer changes nothing and reports the first decision', async () => {
        await store.commit('s1', { approvals: [approval('s1', 'ap1')] });
        const first = resolution('approved', 'alice', 'websocket');
        const r1 = await store.resolveApproval('ap1', first);
        expect(r1).toEqual({ changed: true, record: { ...approval('s1', 'ap1'), status: 'approved', resolution: first } });
        const r2 = await store.resolveApproval('ap1', resolution('denied', 'bob', 'aap'));
        expect(r2?.changed).toBe(false);
        expect(r2?.record.status).toBe('approved');
        expect(r2?.record.resolution).toEqual(first);
        expect(await store.getApproval('ap1')).toEqual(r1?.record);
        expect((await store.listApprovals({ status: 'pending' })).length).toBe(0);
        expect((await store.listApprovals({ status: 'approved' })).map((r) => r.approvalId)).toEqual(['ap1']);
      });

      it('hitl:approval:first-wins-race — of many concurrent answers exactly one changes the record', async () => {
        await store.commit('s1', { approvals: [approval('s1', 'ap1')] });
        const answers = Array.from({ length: 8 }, (_, i) => resolution(i % 2 === 0 ? 'denied' : 'approved', `u${i}`));
        const results = await Promise.all(answers.map((a) => store.resolveApproval('ap1', a)));
        expect(results.filter((r) => r?.changed).length).toBe(1);
        const winner = results.find((r) => r?.changed)!.record.resolution;
        for (const r of results) expect(r?.record.resolution).toEqual(winner);
      });

      it('hitl:approval:unknown — resolving an unknown id returns undefined and creates nothing', async () => {
        expect(await store.resolveApproval('nope', resolution('approved', 'u'))).toBeUndefined();
        expect(await store.getApproval('nope')).toBeUndefined();
      });

      it('hitl:approval:invalid-decision — a decision other than approved/denied is refused, the approval stays pending', async () => {
        await store.commit('s1', { approvals: [approval('s1', 'ap1')] });
        await expectCode(
          () => store.resolveApproval('ap1', { ...resolution('approved', 'u'), decision: 'maybe' as 'approved' }),
          'store.invalid_argument',
        );
        expect((await store.getApproval('ap1'))?.status).toBe('pending');
      });

      it('hitl:approval:final — a later commit carrying the record as pending again does not reopen a resolved approval', async () => {
        await store.commit('s1', { approvals: [approval('s1', 'ap1')] });
        const first = resolution('denied', 'alice');
        await store.resolveApproval('ap1', first);
        await store.commit('s1', { events: events('s1', 1, 1), approvals: [approval('s1', 'ap1')] });
        expect(await store.getApproval('ap1')).toMatchObject({ status: 'denied', resolution: first });
        expect(await store.lastSeq('s1')).toBe(1);
      });

      it('hitl:approval:commit-resolves — a commit may update a pending approval, including resolving it', async () => {
        await store.commit('s1', { approvals: [approval('s1', 'ap1')] });
        await store.commit('s1', { approvals: [approval('s1', 'ap1', 'approved')] });
        expect(await store.getApproval('ap1')).toEqual(approval('s1', 'ap1', 'approved'));
        const again = await store.resolveApproval('ap1', resolution('denied', 'late'));
        expect(again?.changed).toBe(false);
        expect(again?.record.status).toBe('approved');
      });
    });

    it('store:isolation — two sessions keep their own seq, mailbox, executions, snapshot and approvals', async () => {
      await store.createSession(session('s1', 'acme'));
      await store.createSession(session('s2', 'globex'));
      await store.commit('s1', { events: events('s1', 1, 3), mailbox: [mail('one')], executions: [execution('s1', 'x')], approvals: [approval('s1', 'p1')], snapshot: snapshot(1) });
      await store.commit('s2', { events: events('s2', 1, 2), mailbox: [mail('two')], snapshot: snapshot(2) });
      expect(await store.lastSeq('s1')).toBe(3);
      expect(await store.lastSeq('s2')).toBe(2);
      expect((await store.readEvents('s2', 0)).every((e) => e.sessionId === 's2')).toBe(true);
      expect(await store.readMailbox('s2')).toEqual([mail('two')]);
      expect(await store.readExecutions('s2')).toEqual([]);
      expect(await store.loadSnapshot('s2')).toEqual(snapshot(2));
      expect(await store.listApprovals({ sessionId: 's2' })).toEqual([]);
      await store.resolveApproval('p1', resolution('approved', 'u'));
      expect(await store.listApprovals({ sessionId: 's2' })).toEqual([]);
      // s2 cannot continue s1's numbering.
      await expectCode(() => store.commit('s2', { events: events('s2', 4, 1) }), 'store.seq_conflict');
    });

    it('store:closed — every method of a closed store throws store.closed; close is idempotent', async () => {
      await store.createSession(session('s1'));
      await store.close();
      await expectCode(() => store.getSession('s1'), 'store.closed');
      await expectCode(() => store.commit('s1', { events: events('s1', 1, 1) }), 'store.closed');
      await expectCode(() => store.readEvents('s1', 0), 'store.closed');
      await expectCode(() => store.resolveApproval('a', resolution('approved', 'u')), 'store.closed');
      await store.close();
    });

    if (reopen !== undefined) {
      it('hitl:approval:survives-restart — sessions, events, mailbox, executions, snapshots and approvals survive close + reopen', async () => {
        await store.createSession(session('s1', 'acme'));
        await store.createSession(session('s2'));
        await store.commit('s1', {
          events: events('s1', 1, 4),
          mailbox: [mail('a'), mail('b')],
          executions: [execution('s1', 'x1')],
          approvals: [approval('s1', 'pending-one'), approval('s1', 'resolved-one')],
          snapshot: snapshot(1),
        });
        await store.resolveApproval('resolved-one', resolution('approved', 'alice'));
        await store.commit('s2', { events: events('s2', 1, 1), snapshot: snapshot(9) });
        const before = { s1: await dump('s1'), s2: await dump('s2'), sessions: await store.listSessions() };

        store = await reopen(store);

        expect({ s1: await dump('s1'), s2: await dump('s2'), sessions: await store.listSessions() }).toEqual(before);
        expect((await store.listApprovals({ status: 'pending' })).map((a) => a.approvalId)).toEqual(['pending-one']);
        // The restored store keeps every rule: seq continues, first answer still wins.
        await expectCode(() => store.commit('s1', { events: events('s1', 4, 1) }), 'store.seq_conflict');
        await store.commit('s1', { events: events('s1', 5, 1) });
        expect(await store.lastSeq('s1')).toBe(5);
        const late = await store.resolveApproval('resolved-one', resolution('denied', 'bob'));
        expect(late?.changed).toBe(false);
        expect(late?.record.resolution?.by).toEqual({ userId: 'alice' });
        expect((await store.resolveApproval('pending-one', resolution('denied', 'carol')))?.changed).toBe(true);

        store = await reopen(store);
        expect((await store.getApproval('pending-one'))?.status).toBe('denied');
        expect(await store.lastSeq('s1')).toBe(5);
      });
    }
  });
}
