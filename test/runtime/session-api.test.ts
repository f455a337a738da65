/**
 * The reads transports use instead of a store (docs/concepts/session-events.md, docs/architecture.md
 * "Layers"): `runtime.history`, `runtime.approvals`, `runtime.approval`. Transports take a
 * `SessionRuntime`, which names no store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionRuntime } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { buildDesk } from '../durability/fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-session-api-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const desk = (tag: string) => buildDesk({ store: createMemoryStore(), sideLog: join(dir, `${tag}.log`) });

describe('session API reads', () => {
  it('session-api:history — runtime.history(id, afterSeq, limit) returns the stored events after afterSeq, at most limit, in seq order', async () => {
    const rt = desk('history');
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('hi there')).settled;
    await (await s.send('and again')).settled;
    const stored = await rt.store.readEvents(s.id, 0);
    expect(stored.length).toBeGreaterThan(4);

    expect(await rt.history(s.id)).toEqual(stored);
    expect(await rt.history(s.id, 2)).toEqual(stored.slice(2));
    expect(await rt.history(s.id, 1, 2)).toEqual(stored.slice(1, 3));
    expect(await rt.history(s.id, stored.length)).toEqual([]);
    expect(await rt.history('no-such-session')).toEqual([]);
    await rt.close();
  });

  it('session-api:history:no-wake — reading a passivated session\'s history leaves it asleep', async () => {
    const rt = desk('sleep');
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('hi there')).settled;
    await s.idle();
    expect(rt.passivateIdle()).toBe(1);
    expect(rt.liveSessions).toBe(0);
    expect((await rt.history(s.id)).map((e) => e.seq)).toEqual((await rt.store.readEvents(s.id, 0)).map((e) => e.seq));
    expect(rt.liveSessions).toBe(0);
    await rt.close();
  });

  it('session-api:approvals — runtime.approvals({ sessionId, status }) and runtime.approval(id) read a session\'s approval records', async () => {
    const rt = desk('approvals');
    const s = await rt.createSession({ actor: 'desk' });
    const other = await rt.createSession({ actor: 'desk' });
    expect((await (await s.send('pair Corfu')).settled).finalizedBy).toBe('suspended');
    expect((await (await other.send('book Rome')).settled).finalizedBy).toBe('suspended');

    const pending = await rt.approvals({ sessionId: s.id, status: 'pending' });
    expect(pending.map((a) => a.tool)).toEqual(['book', 'book']);
    expect(pending.every((a) => a.sessionId === s.id)).toBe(true);

    const [first, second] = pending;
    expect(await rt.approval(first!.approvalId)).toEqual(first);
    expect(await rt.approval('no-such-approval')).toBeUndefined();

    const res = await s.answerApproval(first!.approvalId, { approved: false }, { userId: 'u1' }, 'test');
    expect(res.ok).toBe(true);
    expect((await rt.approvals({ sessionId: s.id, status: 'pending' })).map((a) => a.approvalId)).toEqual([second!.approvalId]);
    expect((await rt.approvals({ sessionId: s.id, status: 'denied' })).map((a) => a.approvalId)).toEqual([first!.approvalId]);
    expect((await rt.approvals({ sessionId: s.id })).map((a) => a.approvalId)).toEqual([first!.approvalId, second!.approvalId]);
    expect((await rt.approval(first!.approvalId))?.status).toBe('denied');
    await rt.close();
  });

  it('session-api:held — a turn that stops to wait says what resumes it (TurnOutcome.held, SessionSnapshot.held), across a restart; a turn that ended says nothing', async () => {
    const db = join(dir, 'held.db');
    const rt = buildDesk({ db, sideLog: join(dir, 'held.log') });
    const s = await rt.createSession({ actor: 'desk' });
    const held = await (await s.send('pair Corfu')).settled;
    expect(held.finalizedBy).toBe('suspended');
    expect(held.held).toEqual({ resumeOn: 'approval-response' });
    expect((await s.snapshot()).held).toEqual({ resumeOn: 'approval-response' });
    await rt.close();

    // The machine is restored from the file: the turn still waits, for the same thing.
    const again = buildDesk({ db, sideLog: join(dir, 'held.log') });
    const s2 = (await again.session(s.id))!;
    const snap = await s2.snapshot();
    expect(snap.state).toBe('suspended');
    expect(snap.held).toEqual({ resumeOn: 'approval-response' });
    for (const a of snap.pendingApprovals) expect((await s2.answerApproval(a.approvalId, { approved: true }, { userId: 'u1' }, 'test')).ok).toBe(true);
    await s2.idle();
    const after = await s2.snapshot();
    expect(after.state).toBe('idle');
    expect(after.held).toBeUndefined();

    const ended = await (await s2.send('hi there')).settled;
    expect(ended.finalizedBy).toBe('complete');
    expect(ended.held).toBeUndefined();
    await again.close();
  });

  it('session-api:no-store — a SessionRuntime (what transports take) names no store; Runtime.store only reads', () => {
    const rt = desk('types');
    const sessions: SessionRuntime = rt;
    // @ts-expect-error transports read through history/approvals/approval, never a store
    expect(sessions.store).toBe(rt.store);
    // @ts-expect-error Runtime.store is a SessionStoreReader: it cannot write
    expect(typeof rt.store.commit).toBe('function');
    return rt.close();
  });
});
