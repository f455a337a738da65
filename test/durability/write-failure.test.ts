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

/** `store` with every method asynchronous (a network database): each call resolves a few ms later. */
function asynchronous(store: SessionStore): SessionStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'groupCommit') return false;
      const v = (target as any)[key];
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        await new Promise((r) => setTimeout(r, 3));
        return v.apply(target, args);
      };
    },
  });
}

/** `store` whose next write matching `which` fails (once). */
function failingNext(store: SessionStore, which: (step: Parameters<SessionStore['commit']>[1]) => boolean): () => void {
  let armed = false;
  const commit = store.commit.bind(store);
  store.commit = (id, step) => {
    if (armed && which(step)) {
      armed = false;
      throw new Error('disk I/O error (injected)');
    }
    return commit(id, step);
  };
  return () => (armed = true);
}

describe('an asynchronous store', () => {
  it('durability:write-failed:not-accepted — "Methods may return promises; the runtime awaits them": send() resolves once its message is stored, rejects when that write fails, and the session takes the next message', async () => {
    const base = createMemoryStore();
    const arm = failingNext(base, (step) => step.events?.some((e) => e.type === 'turn.started') === true);
    const rt = buildDesk({ store: asynchronous(base), sideLog: join(dir, 'side-async.log') });
    const s = await rt.createSession({ actor: 'desk' });
    const first = await s.send('hello there');
    // Accepted means durable: the store holds the message when send() resolves.
    expect((await base.readEvents(s.id, 0)).filter((e) => e.type === 'turn.started').map((e) => e.type === 'turn.started' && e.input.text)).toEqual(['hello there']);
    expect((await first.settled).finalizedBy).toBe('complete');

    arm();
    await expect(s.send('charge 2')).rejects.toThrow('disk I/O error (injected)');
    const out = await (await s.send('charge 3')).settled;
    expect(out.finalizedBy).toBe('complete');
    const texts = (await rt.history(s.id)).flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
    expect(texts).toEqual(['hello there', 'charge 3']);
    await rt.close();
  });
});

describe.each([
  ['sqlite (group commit)', () => createSqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.db`) })],
  ['memory', () => createMemoryStore()],
  ['asynchronous memory', () => asynchronous(createMemoryStore())],
])('a queued message whose write fails, on the %s store', (_name, makeStore) => {
  it('durability:queue:no-loss — "a queued message is durable when send returns": one whose record could not be written is refused and never runs; the messages around it run in order', async () => {
    const store = makeStore();
    // The queue record rides its own commit (enqueue), written while a turn runs.
    const arm = failingNext(store, (step) => step.enqueue !== undefined && step.enqueue.length > 0);
    const rt = buildDesk({ store, sideLog: join(dir, 'side-queue.log') });
    const s = await rt.createSession({ actor: 'desk' });
    const running = await s.send('book a ferry');
    expect((await running.settled).finalizedBy).toBe('suspended');
    const queued = await s.send('hello one');
    expect(queued.queued).toBe(true);
    arm();
    await expect(s.send('hello two')).rejects.toThrow('disk I/O error (injected)');
    expect((await s.snapshot()).queued).toBe(1);
    const third = await s.send('hello three');
    const [pending] = (await s.snapshot()).pendingApprovals;
    await s.answerApproval(pending!.approvalId, { approved: true }, { userId: 'u1' }, 'test');
    await third.settled;
    await s.idle();
    const texts = (await rt.history(s.id)).flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
    expect(texts).toEqual(['book a ferry', 'hello one', 'hello three']);
    await rt.close();
  });
});

describe.each([
  ['sqlite (group commit)', () => createSqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.db`) })],
  ['memory', () => createMemoryStore()],
])('a write that fails mid-turn on the %s store', (_name, makeStore) => {
  it.each([['tool.result'], ['turn.settled']])(
    'durability:write-failed:settles — when the write holding %s fails, the sender\'s settled resolves with the error (it never hangs); the session, restored from the store, finishes the turn there and takes the next message; the log stays 1..n',
    async (failOn) => {
      const store = makeStore();
      const arm = failingNext(store, (step) => step.events?.some((e) => e.type === failOn) === true);
      const rt = buildDesk({ store, sideLog: join(dir, 'side-midturn.log') });
      const s = await rt.createSession({ actor: 'desk' });
      expect((await (await s.send('hello')).settled).finalizedBy).toBe('complete');
      arm();
      const r = await s.send('charge 5');
      const out = await Promise.race([r.settled, new Promise<'hung'>((res) => setTimeout(() => res('hung'), 5000))]);
      expect(out).toMatchObject({ finalizedBy: 'error', stop: 'error', error: { message: expect.stringContaining('disk I/O error (injected)') } });
      expect((await (await s.send('hello again')).settled).finalizedBy).toBe('complete');
      const log = await rt.history(s.id);
      log.forEach((e, i) => expect(e.seq).toBe(i + 1));
      expect(log.filter((e) => e.type === 'turn.started').map((e) => e.type === 'turn.started' && e.input.text)).toEqual(['hello', 'charge 5', 'hello again']);
      expect(log.filter((e) => e.type === 'turn.settled')).toHaveLength(3);
      await rt.close();
    },
  );
});
