/**
 * docs/stores.md "Write failures": a SQLite store whose writes fail (a full disk, a lock held by
 * another process) mid-session. The disk fills for real (fixtures/full-disk.ts: SQLITE_FULL from
 * the store's own connection, no mount, no root); a lock is another connection's
 * `BEGIN IMMEDIATE` held past the store's busyTimeoutMs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database as Db } from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { TurnstateError } from '../../src/errors.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { connectionOf, fill, free } from './fixtures/full-disk.js';

vi.mock('better-sqlite3', async (original) => (await import('./fixtures/full-disk.js')).recording(original));

const dir = mkdtempSync(join(tmpdir(), 'turnstate-store-failure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** More than the free bytes of any page and the file's free pages: a commit holding it needs new pages. */
const BIG = 'x'.repeat(64_000);

const R = (text: string, turnState: string, partType = 'response') => ({
  type: 'tool_use' as const,
  name: 'respond',
  input: { parts: [{ text, metadata: { partType } }], turnState },
});
const SCRIPT: ModelScript = {
  rules: [
    { when: { on: 'user', text: '^book' }, respond: { blocks: [R('Booking.', 'awaiting', 'ack'), { type: 'tool_use', name: 'book', input: { what: 'a room' } }] } },
    { when: { on: 'tool_result', tool: 'book' }, respond: { blocks: [R('Booked.', 'complete')] } },
    { when: { on: 'rejection' }, respond: { blocks: [R('Not booked.', 'complete')] } },
    { when: { on: 'user' }, respond: { blocks: [R('Hello.', 'complete')] } },
  ],
};

interface Setup {
  rt: TurnstateRuntime;
  /** The store's connection. */
  db: Db;
  path: string;
  /** `during`: inside the book handler, before it returns its (large) result; `resolved`: right after the store resolved an approval. */
  hook: { during?: () => void; resolved?: () => void };
  runs: () => number;
}

function setup(opts: { busyTimeoutMs?: number } = {}): Setup {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.db`);
  const store = createSqliteStore({ path, ...opts });
  const db = connectionOf(path);
  const hook: Setup['hook'] = {};
  const resolve = store.resolveApproval.bind(store);
  (store as { resolveApproval: typeof resolve }).resolveApproval = (id, resolution) => {
    const r = resolve(id, resolution);
    hook.resolved?.();
    return r;
  };
  const rt = createRuntime({ model: createScriptedModel(SCRIPT), store });
  let runs = 0;
  rt.registries.tools.register({
    name: 'book',
    description: 'Book (needs approval).',
    inputSchema: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
    scope: 'generalist',
    requiresApproval: true,
    handler: () => {
      runs++;
      hook.during?.();
      return { ref: 'BK1', receipt: BIG };
    },
  });
  rt.registries.actors.register({ name: 'a', tools: ['book'] });
  return { rt, db, path, hook, runs: () => runs };
}

/** A session waiting for the approval of its book call. */
async function waiting(rt: TurnstateRuntime) {
  const s = await rt.createSession({ actor: 'a' });
  expect((await (await s.send('book it')).settled).held).toEqual({ resumeOn: 'approval-response' });
  const [pending] = (await s.snapshot()).pendingApprovals;
  return { s, approvalId: pending!.approvalId };
}

/** The answer of `approvalId` while the book handler fills the disk: the approval lands, the tool runs, its result cannot be stored. */
async function answerOnFullDisk(x: Setup, s: { answerApproval: TurnstateRuntime['answerApproval'] extends (...a: infer A) => infer R ? (...a: A) => R : never }, approvalId: string): Promise<unknown> {
  x.hook.during = () => fill(x.db);
  try {
    return await s.answerApproval(approvalId, { approved: true }, { userId: 'u1' }, 'test').then(
      (r) => ({ resolved: r }),
      (e: unknown) => e,
    );
  } finally {
    x.hook.during = undefined;
  }
}

describe('store failures: an approval answer whose later write fails', () => {
  it('store:failure:approval-answer-truthful — "the error says the answer is recorded (answering again gets approval.already_resolved) and that the call ran and its outcome is unknown", never "nothing was written"; the model is told the outcome is unknown and why', async () => {
    const x = setup();
    const { s, approvalId } = await waiting(x.rt);
    const err = await answerOnFullDisk(x, s, approvalId);
    expect(err).toBeInstanceOf(TurnstateError);
    expect(err).toMatchObject({
      code: 'store.write_failed',
      details: { approvalId, answerRecorded: true, callRan: true, outcomeRecorded: false, decision: 'approved' },
    });
    const message = (err as Error).message;
    expect(message).toContain(`approval ${approvalId} is answered (approved) and the answer is recorded`);
    expect(message).toContain('answering again gets approval.already_resolved');
    expect(message).toMatch(/book \(call \S+\) ran, but its outcome could not be recorded: it is unknown, and the call will not be run again/);
    expect(message).toContain('SQLITE_FULL');
    expect(message).not.toContain('nothing was written');
    expect(x.runs()).toBe(1);
    // What the error says is what the store holds.
    expect((await x.rt.approval(approvalId))?.status).toBe('approved');

    free(x.db);
    expect(await s.answerApproval(approvalId, { approved: true }, { userId: 'u1' }, 'test')).toMatchObject({ ok: false, code: 'approval.already_resolved' });
    await s.idle();
    const log = await x.rt.history(s.id);
    const result = log.find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ tool: 'book', isError: true, view: expect.stringMatching(/^The outcome of book is unknown: its result was not recorded \(the runtime restarted while it ran, or writing its result failed\), and it was not run again/) });
    expect(log.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
    expect(x.runs()).toBe(1);
    await x.rt.close();
  });

  it('store:failure:approval-answer-truthful — "an answer whose approval.resolved could not be written says the call has not run, and the session runs it when next used"', async () => {
    const x = setup();
    const { s, approvalId } = await waiting(x.rt);
    // Full once the store recorded the answer: the log row of its approval.resolved (which carries
    // the answering principal, a large one here) needs new pages and is not written.
    x.hook.resolved = () => fill(x.db);
    const by = { userId: 'u1', attributes: { note: 'y'.repeat(7000) } };
    const err = await s.answerApproval(approvalId, { approved: true }, by, 'test').catch((e: unknown) => e);
    x.hook.resolved = undefined;
    expect(err).toMatchObject({ code: 'store.write_failed', details: { answerRecorded: true, callRan: false, outcomeRecorded: false } });
    expect((err as Error).message).toMatch(/book \(call \S+\) has not run: the session runs it when it is next used/);
    expect(x.runs()).toBe(0);
    free(x.db);
    await s.idle();
    // The next use woke the session from the store, which applied the answer: the call ran once.
    expect((await (await s.send('hello')).settled).finalizedBy).toBe('complete');
    expect(x.runs()).toBe(1);
    await x.rt.close();
  });
});

describe('store failures: the session after a failed write', () => {
  it('store:failure:host-replaced — "after a failed write the live host gives way: the next call wakes a fresh one from the store" (an approval answer), so the first send() after space is freed is accepted', async () => {
    const x = setup();
    const { s, approvalId } = await waiting(x.rt);
    expect(await answerOnFullDisk(x, s, approvalId)).toMatchObject({ code: 'store.write_failed' });
    free(x.db);
    const out = await (await s.send('hello after free')).settled;
    expect(out.finalizedBy).toBe('complete');
    await s.idle();
    const log = await x.rt.history(s.id);
    log.forEach((e, i) => expect(e.seq).toBe(i + 1));
    expect(log.filter((e) => e.type === 'turn.settled')).toHaveLength(2);
    await x.rt.close();
  });

  it('store:failure:host-replaced — "after a failed write the live host gives way" (a turn\'s tool settings that could not be written), so the next call is not refused with the stale error', async () => {
    const x = setup();
    const { s } = await waiting(x.rt);
    const turnId = (await s.snapshot()).turnId!;
    fill(x.db);
    await expect(s.updateTurnTools(turnId, { enabledTools: ['book'] }, { note: BIG })).rejects.toMatchObject({ code: 'store.write_failed' });
    free(x.db);
    // The first call after: the session as stored (still waiting for its approval).
    const [pending] = (await s.snapshot()).pendingApprovals;
    expect(pending).toBeDefined();
    expect(await s.answerApproval(pending!.approvalId, { approved: true }, { userId: 'u1' }, 'test')).toMatchObject({ ok: true });
    await s.idle();
    expect((await x.rt.history(s.id)).at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
    await x.rt.close();
  });
});

describe('store failures: every write failure is store.write_failed', () => {
  it('store:failure:write-failed-named — "every store write failure surfaces as store.write_failed naming the store and its cause": an approval answer (and a delete) while another connection holds the write lock', async () => {
    const x = setup({ busyTimeoutMs: 0 });
    const { s, approvalId } = await waiting(x.rt);
    const other = new (await import('better-sqlite3')).default(x.path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const err = await x.rt.answerApproval(approvalId, { approved: true }, { userId: 'u1' }, 'test').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TurnstateError);
      expect(err).toMatchObject({ code: 'store.write_failed', details: { store: 'sqlite', cause: expect.stringContaining('SQLITE_BUSY') } });
      expect((err as Error).message).toMatch(/^the SQLite store could not record the answer to approval \S+: database is locked \(SQLITE_BUSY\); the approval is as it was$/);
      await expect(x.rt.deleteSession(s.id)).rejects.toMatchObject({ code: 'store.write_failed', message: expect.stringContaining('could not delete session') });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    // As it said: nothing changed, and the answer goes through now.
    expect((await x.rt.approval(approvalId))?.status).toBe('pending');
    expect(await x.rt.answerApproval(approvalId, { approved: true }, { userId: 'u1' }, 'test')).toMatchObject({ ok: true });
    await s.idle();
    expect(x.runs()).toBe(1);
    await x.rt.close();
  });
});

describe('store failures: session.events() across a failed write', () => {
  it('store:failure:events-follow — "a failed write never ends a session.events() subscription: it follows the session restored from the store, each event once and in order"', async () => {
    const x = setup();
    const s = await x.rt.createSession({ actor: 'a' });
    const seen: number[] = [];
    let ended: string | undefined;
    const sub = s.events().subscribe({ next: (e) => seen.push(e.seq), complete: () => (ended = 'complete'), error: (e) => (ended = `error ${String(e)}`) });
    expect((await (await s.send('hello')).settled).finalizedBy).toBe('complete');
    fill(x.db);
    await expect(s.send(`hello ${BIG}`)).rejects.toMatchObject({ code: 'store.write_failed' });
    free(x.db);
    expect((await (await s.send('hello again')).settled).finalizedBy).toBe('complete');
    expect(ended).toBeUndefined();
    expect(seen).toEqual((await x.rt.history(s.id)).map((e) => e.seq));
    // And across an approval answer whose write failed (the host gives way there too).
    const held = await (await s.send('book it')).settled;
    expect(held.held).toBeDefined();
    const [pending] = (await s.snapshot()).pendingApprovals;
    expect(await answerOnFullDisk(x, s, pending!.approvalId)).toMatchObject({ code: 'store.write_failed' });
    free(x.db);
    expect((await (await s.send('hello at last')).settled).finalizedBy).toBe('complete');
    await s.idle();
    const stored = (await x.rt.history(s.id)).map((e) => e.seq);
    expect(ended).toBeUndefined();
    expect(seen).toEqual(stored);
    sub.unsubscribe();
    await x.rt.close();
  });
});

describe('store failures: a damaged row', () => {
  it('store:sqlite:unreadable-row — "a stored row that is not valid JSON is session.unrestorable naming the session and what could not be read", from history() as from waking the session', async () => {
    const x = setup();
    const s = await x.rt.createSession({ actor: 'a', id: 'sess_damaged' });
    expect((await (await s.send('hello')).settled).finalizedBy).toBe('complete');
    await x.rt.close();
    const db = new (await import('better-sqlite3')).default(x.path);
    // The first commit's events, cut short as a damaged page would leave them.
    db.prepare("UPDATE log SET events = substr(events, 1, 40), snapshot = CASE WHEN snapshot IS NULL THEN NULL ELSE '{\"machine\":' END WHERE events IS NOT NULL").run();
    db.close();
    const y = createRuntime({ model: createScriptedModel(SCRIPT), store: createSqliteStore({ path: x.path }) });
    y.registries.actors.register({ name: 'a' });
    const err = await y.history('sess_damaged').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TurnstateError);
    expect(err).toMatchObject({ code: 'session.unrestorable', details: { sessionId: 'sess_damaged', record: 'event log' } });
    expect((err as Error).message).toMatch(/^session sess_damaged cannot be restored from the store: its stored event log cannot be read \(.+\); the store's file is damaged there$/);
    await expect(y.session('sess_damaged')).rejects.toMatchObject({ code: 'session.unrestorable', details: { sessionId: 'sess_damaged', record: 'snapshot' } });
    await y.close();
  });
});
