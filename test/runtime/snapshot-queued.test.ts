/**
 * `SessionSnapshot.queuedMessages`: the messages waiting behind the running turn, in queue order,
 * each with its turnId and text. The log has no event for a waiting message until its turn
 * starts, so this is where a client that (re)connects finds it (the WebSocket `subscribed` reply
 * carries them). Read from the live host's queue, and from the store's queue records when the
 * session is woken (not in memory: a restart).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionStoreReader } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { SessionStore } from '../../src/machines/ports.js';
import { buildDesk } from '../durability/fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-snapshot-queued-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function pendingApproval(store: SessionStoreReader, sessionId: string): Promise<string> {
  const [a] = await store.listApprovals({ sessionId, status: 'pending' });
  if (!a) throw new Error('no pending approval');
  return a.approvalId;
}

/** The store kept open across a runtime's close (a memory store forgets everything when closed). */
function kept(store: SessionStore): SessionStore {
  return { ...store, close() {} };
}

describe.each([
  ['memory', () => createMemoryStore()],
  ['sqlite', (name: string) => createSqliteStore({ path: join(dir, `${name}.db`) })],
] as const)('snapshot().queuedMessages (%s store)', (kind, makeStore) => {
  it(`session-api:snapshot:queued-messages — "the messages waiting behind the running turn, in queue order: each one's turnId and text" (${kind}): live, after a restart (woken from the store), and empty once they ran`, async () => {
    const store = makeStore(`queued-${kind}`);
    const first = buildDesk({ store: kept(store), sideLog: join(dir, `${kind}.log`) });
    const s = await first.createSession({ id: 's-q', actor: 'desk' });
    expect((await (await s.send('book Corfu')).settled).finalizedBy).toBe('suspended');
    const empty = await s.snapshot();
    expect(empty.queued).toBe(0);
    expect(empty.queuedMessages).toEqual([]);

    const a = await s.send('hello later');
    const b = await s.send('and one more thing');
    expect([a.queued, b.queued]).toEqual([true, true]);
    const live = await s.snapshot();
    expect(live.queued).toBe(2);
    expect(live.queuedMessages).toEqual([
      { turnId: a.turnId, text: 'hello later' },
      { turnId: b.turnId, text: 'and one more thing' },
    ]);
    await first.close();

    // Not in memory any more: snapshot() wakes the session from the store, its queue records too.
    const second = buildDesk({ store: kept(store), sideLog: join(dir, `${kind}.log`) });
    const again = (await second.session('s-q'))!;
    const woken = await again.snapshot();
    expect(woken.queued).toBe(2);
    expect(woken.queuedMessages).toEqual(live.queuedMessages);

    await second.answerApproval(await pendingApproval(second.store, 's-q'), { approved: true }, { userId: 'ops' }, 'test');
    await again.idle();
    const done = await again.snapshot();
    expect(done.queued).toBe(0);
    expect(done.queuedMessages).toEqual([]);
    const started = (await second.store.readEvents('s-q', 0)).flatMap((e) => (e.type === 'turn.started' ? [`${e.turnId}:${e.input.text}`] : []));
    expect(started.slice(1)).toEqual([`${a.turnId}:hello later`, `${b.turnId}:and one more thing`]);
    await second.close();
    store.close();
  });
});
