// One session whose stored state cannot be restored must not keep the others from resuming.
// docs/concepts/approvals.md: "After a crash, `runtime.recover()` (or the first use of the
// session) resumes each unfinished turn"; the guide's `turnstate serve` runs recover() before
// it listens, so a throw there kept the whole server down.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOG_SPAN } from '../../src/stores/sqlite-schema.js';
import { buildDesk } from './fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-recover-damaged-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Rewrites the stored snapshot of session `id` with `damage`. */
function damageSnapshot(db: string, id: string, damage: (snapshot: string) => string): void {
  const d = new Database(db);
  try {
    const row = d
      .prepare(`SELECT l.k, l.snapshot FROM log l JOIN sessions s ON l.k > s.sk * ${LOG_SPAN} AND l.k < (s.sk + 1) * ${LOG_SPAN} WHERE s.id = ? AND l.snapshot IS NOT NULL`)
      .get(id) as { k: number; snapshot: string };
    d.prepare('UPDATE log SET snapshot = ? WHERE k = ?').run(damage(row.snapshot), row.k);
  } finally {
    d.close();
  }
}

describe('recover() and sessions it cannot restore', () => {
  it.each([
    ['truncated JSON', (s: string) => s.slice(0, -5)],
    ['a turn state no longer registered', (s: string) => s.replaceAll('"suspended"', '"awaiting_docs"')],
  ])('recover:damaged-isolated — a session with %s is reported in failed (session.unrestorable, naming it) and left as stored; the other unfinished turn resumes and completes', async (_what, damage) => {
    const db = join(dir, `${Math.random().toString(36).slice(2)}.db`);
    const sideLog = join(dir, 'side.log');
    const rt1 = buildDesk({ db, sideLog });
    const a = await rt1.createSession({ id: 'sess_damaged', actor: 'desk' });
    const b = await rt1.createSession({ id: 'sess_fine', actor: 'desk' });
    expect((await (await a.send('book Corfu')).settled).finalizedBy).toBe('suspended');
    expect((await (await b.send('book Rhodes')).settled).finalizedBy).toBe('suspended');
    await rt1.close();
    damageSnapshot(db, 'sess_damaged', damage);

    const rt2 = buildDesk({ db, sideLog });
    const { resumed, failed } = await rt2.recover();
    expect(resumed).toEqual(['sess_fine']);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ sessionId: 'sess_damaged', code: 'session.unrestorable' });
    expect(failed[0]!.message).toContain('session sess_damaged cannot be restored');
    expect(rt2.liveSessions).toBe(1);
    // Its first use says the same, and leaves nothing half-live.
    await expect(rt2.session('sess_damaged')).rejects.toMatchObject({ code: 'session.unrestorable', details: { sessionId: 'sess_damaged' } });
    expect(rt2.liveSessions).toBe(1);
    // The other session is answered and completes; the damaged one's records are all still there.
    const [appr] = await rt2.approvals({ sessionId: 'sess_fine', status: 'pending' });
    expect((await rt2.answerApproval(appr!.approvalId, { approved: true }, { userId: 'u' }, 'api')).ok).toBe(true);
    await (await rt2.session('sess_fine'))!.idle();
    expect((await rt2.history('sess_fine')).at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
    expect(await rt2.approvals({ sessionId: 'sess_damaged', status: 'pending' })).toHaveLength(1);
    expect((await rt2.history('sess_damaged')).length).toBeGreaterThan(0);
    await rt2.close();
  });
});

describe('deleteSession while the session is being activated', () => {
  it('session:delete:during-activation — deleting a passivated session while its first use wakes it leaves no live session and no handle: later uses get session.not_found', async () => {
    const db = join(dir, `${Math.random().toString(36).slice(2)}.db`);
    const rt = buildDesk({ db, sideLog: join(dir, 'side2.log') });
    const s = await rt.createSession({ actor: 'desk' });
    expect((await (await s.send('charge 5')).settled).finalizedBy).toBe('complete');
    expect(rt.passivateIdle()).toBe(1);
    // The wake began first, but the delete began before it had read the session: it wakes nothing.
    const [woken, deleted] = await Promise.all([rt.session(s.id), rt.deleteSession(s.id)]);
    expect(deleted).toBe(true);
    expect(woken).toBeUndefined();
    expect(rt.liveSessions).toBe(0);
    expect(await rt.session(s.id)).toBeUndefined();
    await expect(s.send('again')).rejects.toMatchObject({ code: 'session.not_found' });
    expect(await rt.history(s.id)).toEqual([]);
    await rt.close();
  });
});
