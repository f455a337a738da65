/**
 * Durability across real process deaths: a worker process runs the desk on a SQLite file and is
 * killed with SIGKILL at a chosen point; a new process opens the same file, calls
 * runtime.recover(), and the turn completes. After every restart the event log is 1..n with no
 * gap and no duplicate, a subscriber that resumes from its last seq gets every event exactly
 * once, and no side-effecting tool ran twice (counted in the side-effect log).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { SessionEvent } from '../../src/types.js';
import { Child } from './fixtures/child.js';
import { sideEffects } from './fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-kill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function files(name: string) {
  return { db: join(dir, `${name}.db`), sideLog: join(dir, `${name}.log`) };
}

function readLog(db: string, sessionId: string): SessionEvent[] {
  const store = createSqliteStore({ path: db });
  try {
    return store.readEvents(sessionId, 0);
  } finally {
    store.close();
  }
}

/** The invariants every restart must keep. */
function checkLog(events: SessionEvent[], subscribers: number[][]): void {
  const seqs = events.map((e) => e.seq);
  // durability:log:no-gap-no-duplicate
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  // durability:turn:completes — every started turn settled exactly once.
  const started = events.filter((e) => e.type === 'turn.started').map((e) => e.turnId);
  const settled = events.filter((e) => e.type === 'turn.settled').map((e) => e.turnId);
  expect(settled).toEqual(started);
  expect(events.at(-1)?.type).toBe('turn.settled');
  // durability:subscriber:exactly-once — the union of what resuming subscribers saw is the log.
  const seen = subscribers.flat();
  expect(new Set(seen).size).toBe(seen.length);
  expect([...seen].sort((a, b) => a - b)).toEqual(seqs);
}

const maxSeq = (c: Child) => Math.max(0, ...c.seqs());

/** A new process resumes the session `first` left when a tool's handler killed it, until idle: the tool ran once (durability:tool:at-most-once), and the log keeps its invariants. */
async function resumeAfterToolKill(db: string, sideLog: string, sessionId: string, first: Child): Promise<SessionEvent[]> {
  const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first) });
  expect(await second.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
  expect((await second.exited).code).toBe(0);
  expect(sideEffects(sideLog)).toHaveLength(1);
  const events = readLog(db, sessionId);
  checkLog(events, [first.seqs(), second.seqs()]);
  return events;
}

describe('durability: SIGKILL and restart with real processes', () => {
  it('durability:kill:suspended — killed twice while waiting for approval, restarted, answered: the turn completes, the tool runs once', async () => {
    const { db, sideLog } = files('suspended');
    const sessionId = 's-susp';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'book Corfu' });
    const waiting = await first.until((l) => l.kind === 'waiting');
    expect((waiting.approvals as string[]).length).toBe(1);
    const approvalId = (waiting.approvals as string[])[0]!;
    expect((await first.kill()).signal).toBe('SIGKILL');
    expect(sideEffects(sideLog)).toEqual([]);

    // A restart that does not answer: recovered, still suspended, killed again.
    const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first) });
    const rec = await second.until((l) => l.kind === 'recovered');
    expect(rec.resumed).toEqual([sessionId]);
    await second.kill();
    checkPrefix(readLog(db, sessionId), [first.seqs(), second.seqs()]);

    const third = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: Math.max(maxSeq(first), maxSeq(second)), answer: { approved: true } });
    const answered = await third.until((l) => l.kind === 'answered');
    expect(answered).toMatchObject({ approvalId, ok: true });
    expect(await third.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
    expect((await third.exited).code).toBe(0);

    const events = readLog(db, sessionId);
    checkLog(events, [first.seqs(), second.seqs(), third.seqs()]);
    expect(events.filter((e) => e.type === 'turn.settled').map((e) => (e as { finalizedBy: string }).finalizedBy)).toEqual(['complete']);
    // durability:tool:at-most-once
    expect(sideEffects(sideLog).filter((l) => l.startsWith('book '))).toHaveLength(1);
    const store = createSqliteStore({ path: db });
    const appr = store.getApproval(approvalId)!;
    store.close();
    expect(appr.status).toBe('approved');
    expect(appr.resolution).toMatchObject({ decision: 'approved', by: { userId: 'ops' }, via: 'worker' });
  }, 90_000);

  it('durability:kill:model-stream — killed while a model call streams: after restart the model is called again and the turn completes', async () => {
    const { db, sideLog } = files('stream');
    const sessionId = 's-stream';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'stream please', chunkDelayMs: 40 });
    await first.until((l) => l.kind === 'event' && l.type === 'part.delta');
    await first.kill();
    const before = readLog(db, sessionId);
    expect(before.some((e) => e.type === 'part.delta')).toBe(true);
    expect(before.some((e) => e.type === 'part.received' || e.type === 'turn.settled')).toBe(false);
    checkPrefix(before, [first.seqs()]);

    const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first) });
    expect(await second.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
    expect((await second.exited).code).toBe(0);
    const events = readLog(db, sessionId);
    checkLog(events, [first.seqs(), second.seqs()]);
    const lastBefore = before.at(-1)!.seq;
    // The model was called again: the answer streamed anew after the restart, then arrived whole.
    expect(events.some((e) => e.seq > lastBefore && e.type === 'part.delta')).toBe(true);
    const received = events.filter((e) => e.type === 'part.received');
    expect(received).toHaveLength(1);
    expect((received[0] as { part: { text?: string } }).part.text).toMatch(/^Here is a long answer .* halfway through it\.$/);
    // events:delta:provisional — "a streamed call that publishes no parts after all is retracted":
    // the cut stream's deltas are void, retracted (interrupted) before the model streams anew.
    const cut = [...new Set(before.flatMap((e) => (e.type === 'part.delta' ? [e.callId] : [])))];
    const retracted = events.filter((e) => e.type === 'part.retracted');
    expect(retracted.map((e) => e.type === 'part.retracted' && [e.callId, e.reason])).toEqual(cut.map((c) => [c, 'interrupted']));
    const firstNewDelta = events.find((e) => e.seq > lastBefore && e.type === 'part.delta')!;
    for (const r of retracted) expect(r.seq).toBeLessThan(firstNewDelta.seq);
    expect(events.filter((e) => e.type === 'model.usage')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
  }, 90_000);

  it('durability:kill:tool-before-result — killed after a tool ran but before its result committed: the tool is not run again, its outcome is reported as unknown, the turn completes', async () => {
    const { db, sideLog } = files('tool');
    const sessionId = 's-tool';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'charge the card', killInCharge: true });
    const exit = await first.exited;
    expect(exit.signal).toBe('SIGKILL');
    expect(sideEffects(sideLog)).toHaveLength(1);
    const before = readLog(db, sessionId);
    expect(before.some((e) => e.type === 'tool.called')).toBe(true);
    expect(before.some((e) => e.type === 'tool.result')).toBe(false);
    checkPrefix(before, [first.seqs()]);

    const events = await resumeAfterToolKill(db, sideLog, sessionId, first);
    const called = events.find((e) => e.type === 'tool.called')!;
    const result = events.find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ callId: (called as { callId: string }).callId, isError: true });
    expect(String((result as { view: unknown }).view)).toMatch(/unknown/i);
    const final = events.filter((e) => e.type === 'part.received').at(-1) as { part: { text?: string } };
    expect(final.part.text).toBe('That did not go through.');
    expect(events.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
  }, 90_000);

  it('durability:kill:approved-tool-before-result — killed while an approved tool runs: after restart it is not run again, approval.resolved is not repeated, the turn completes', async () => {
    const { db, sideLog } = files('approved');
    const sessionId = 's-appr';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'book Rhodes' });
    await first.until((l) => l.kind === 'waiting');
    await first.kill();
    // The answer arrives in a new process; the approved handler writes its line, then the process dies.
    const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first), answer: { approved: true }, killInBook: true });
    expect((await second.exited).signal).toBe('SIGKILL');
    expect(sideEffects(sideLog)).toHaveLength(1);

    const third = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: Math.max(maxSeq(first), maxSeq(second)) });
    expect(await third.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
    expect((await third.exited).code).toBe(0);
    // durability:tool:at-most-once
    expect(sideEffects(sideLog)).toHaveLength(1);
    const events = readLog(db, sessionId);
    checkLog(events, [first.seqs(), second.seqs(), third.seqs()]);
    expect(events.filter((e) => e.type === 'approval.resolved')).toHaveLength(1);
    const result = events.find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ tool: 'book', isError: true });
    expect(String((result as { view: unknown }).view)).toMatch(/unknown/i);
    expect(events.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
  }, 90_000);

  it('durability:kill:standing-approved-before-result — "the tool is not run again" also for a call a standing approval ran: killed inside it, after restart it is not run again, the model gets the unknown outcome, the turn completes', async () => {
    const { db, sideLog } = files('standing');
    const sessionId = 's-standing';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'book Crete', standing: ['book'], killInBook: true });
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(sideEffects(sideLog)).toHaveLength(1);
    const before = readLog(db, sessionId);
    expect(before.some((e) => e.type === 'tool.called')).toBe(true);
    expect(before.some((e) => e.type === 'approval.requested')).toBe(false);

    const events = await resumeAfterToolKill(db, sideLog, sessionId, first);
    const result = events.find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ tool: 'book', isError: true });
    expect(String((result as { view: unknown }).view)).toMatch(/unknown/i);
    expect(events.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
  }, 90_000);

  it('durability:kill:queued — killed while a turn waits for approval with a message queued behind it: after restart and the answer, both turns complete in order', async () => {
    const { db, sideLog } = files('queued');
    const sessionId = 's-queue';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'book Paxos', queue: 'charge the card' });
    const queued = await first.until((l) => l.kind === 'queued');
    expect(queued.queued).toBe(true);
    await first.until((l) => l.kind === 'waiting');
    await first.kill();

    const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first), answer: { approved: true } });
    expect(await second.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
    expect((await second.exited).code).toBe(0);
    const events = readLog(db, sessionId);
    checkLog(events, [first.seqs(), second.seqs()]);
    const inputs = events.flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
    expect(inputs).toEqual(['book Paxos', 'charge the card']);
    expect(events.filter((e) => e.type === 'turn.settled').map((e) => (e as { finalizedBy: string }).finalizedBy)).toEqual(['complete', 'complete']);
    expect(sideEffects(sideLog).map((l) => l.split(' ')[0])).toEqual(['book', 'charge']);
  }, 90_000);

  it('durability:kill:accepted-message — killed the moment send() returned: the accepted message is not lost, its turn runs after restart', async () => {
    const { db, sideLog } = files('accepted');
    const sessionId = 's-accepted';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'charge the card', killAfterSend: true });
    const sent = await first.until((l) => l.kind === 'sent');
    expect((await first.exited).signal).toBe('SIGKILL');
    const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first) });
    expect(await second.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
    const events = readLog(db, sessionId);
    checkLog(events, [first.seqs(), second.seqs()]);
    expect(events.find((e) => e.type === 'turn.started')).toMatchObject({ turnId: sent.turnId, input: { text: 'charge the card' } });
    expect(sideEffects(sideLog).length).toBeLessThanOrEqual(1);
  }, 90_000);

  it('durability:kill:accepted-queued — killed the moment send() of a queued message returned: the queued message is not lost', async () => {
    const { db, sideLog } = files('accepted-queued');
    const sessionId = 's-accepted-q';
    const first = new Child({ db, sideLog, phase: 'start', sessionId, message: 'book Kos', queue: 'charge the card', killAfterQueue: true });
    const queued = await first.until((l) => l.kind === 'queued');
    expect((await first.exited).signal).toBe('SIGKILL');
    const second = new Child({ db, sideLog, phase: 'resume', sessionId, resumeFrom: maxSeq(first), answer: { approved: true } });
    expect(await second.until((l) => l.kind === 'idle')).toMatchObject({ state: 'idle' });
    const events = readLog(db, sessionId);
    checkLog(events, [first.seqs(), second.seqs()]);
    expect(events.filter((e) => e.type === 'turn.started').map((e) => e.turnId)).toContain(queued.turnId);
  }, 90_000);
});

/** Before a turn finishes: the log so far has no gap and no duplicate, and subscribers saw only committed events, once. */
function checkPrefix(events: SessionEvent[], subscribers: number[][]): void {
  const seqs = events.map((e) => e.seq);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  const seen = subscribers.flat();
  expect(new Set(seen).size).toBe(seen.length);
  for (const s of seen) expect(s).toBeLessThanOrEqual(seqs.length);
}
