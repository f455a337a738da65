// A store that refuses the write holding a new message. docs/architecture.md: "`send()` returns
// once its message is written"; approvals.md: "a message that starts a turn is durable when
// `send()` returns". A message whose write failed was never accepted: send() says so, and the
// session goes on from what the store holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { buildDesk } from './fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-write-failure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `store` whose next write holding a turn.started fails (once), as a full disk would. */
function failingOnce(store: SessionStore): { store: SessionStore; arm: () => void } {
  let armed = false;
  const commit = store.commit.bind(store);
  store.commit = (id, step) => {
    if (armed && step.events?.some((e) => e.type === 'turn.started')) {
      armed = false;
      throw new Error('disk I/O error (injected)');
    }
    return commit(id, step);
  };
  return { store, arm: () => (armed = true) };
}

describe.each([
  ['sqlite (group commit)', () => createSqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.db`) })],
  ['memory', () => createMemoryStore()],
])('a write that fails on the %s store', (_name, makeStore) => {
  it('durability:write-failed:not-accepted — send() rejects when the write holding its message fails; nothing of it is stored; the next message is accepted and its turn completes', async () => {
    const { store, arm } = failingOnce(makeStore());
    const rt = buildDesk({ store, sideLog: join(dir, 'side.log') });
    const s = await rt.createSession({ actor: 'desk' });
    expect((await (await s.send('charge 1')).settled).finalizedBy).toBe('complete');
    const before = await rt.history(s.id);

    arm();
    await expect(s.send('charge 2')).rejects.toThrow('disk I/O error (injected)');
    await s.idle();
    expect(await rt.history(s.id)).toEqual(before);

    const out = await (await s.send('charge 3')).settled;
    expect(out.finalizedBy).toBe('complete');
    const after = await rt.history(s.id);
    after.forEach((e, i) => expect(e.seq).toBe(i + 1));
    const texts = after.flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
    expect(texts).toEqual(['charge 1', 'charge 3']);
    expect(after.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
    // What the model read for the third message holds no trace of the refused one.
    expect(JSON.stringify(await s.mailbox())).not.toContain('charge 2');
    await rt.close();
  });
});
