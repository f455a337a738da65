/**
 * The bounded, journaled message queue (issue 12, "Hardening": storage) and the mailbox views a
 * session keeps between turns. A message waiting behind a running turn is stored once, as its
 * own record; beyond `RuntimeLimits.maxQueuedMessages` one more is refused by name; storage
 * grows with the text queued, not with its square.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TurnstateError } from '../../src/errors.js';
import type { SessionStoreReader } from '../../src/api.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { buildDesk } from '../durability/fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-queue-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Bytes of every file in a directory (the SQLite file, its WAL and shared memory). */
function dirBytes(path: string): number {
  let n = 0;
  for (const f of readdirSync(path)) n += statSync(join(path, f)).size;
  return n;
}

async function pendingApproval(store: SessionStoreReader, sessionId: string): Promise<string> {
  const [a] = await store.listApprovals({ sessionId, status: 'pending' });
  if (!a) throw new Error('no pending approval');
  return a.approvalId;
}

describe('the message queue', () => {
  it('double-texting:queue:bound — the message past RuntimeLimits.maxQueuedMessages is refused with session.queue_full naming the limit; every accepted one still runs, in order', async () => {
    const rt = buildDesk({ store: createMemoryStore(), sideLog: join(dir, 'bound.log'), limits: { maxQueuedMessages: 3 } });
    const s = await rt.createSession({ id: 's-bound', actor: 'desk' });
    expect((await (await s.send('book Corfu')).settled).finalizedBy).toBe('suspended');
    const refs = [];
    for (let i = 0; i < 3; i++) refs.push(await s.send(`hello ${i}`));
    expect(refs.every((r) => r.queued)).toBe(true);
    const err = await s.send('one too many').then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(TurnstateError);
    expect((err as TurnstateError).code).toBe('session.queue_full');
    expect((err as TurnstateError).message).toMatch(/maxQueuedMessages = 3/);
    expect((err as TurnstateError).details).toMatchObject({ sessionId: 's-bound', limit: 3, waiting: 3 });
    expect((await s.snapshot()).queued).toBe(3);

    await rt.answerApproval(await pendingApproval(rt.store, 's-bound'), { approved: true }, { userId: 'ops' }, 'test');
    for (const r of refs) expect((await r.settled).finalizedBy).toBe('complete');
    const inputs = (await rt.store.readEvents('s-bound', 0)).flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
    expect(inputs).toEqual(['book Corfu', 'hello 0', 'hello 1', 'hello 2']);
    // Room again once the queue drained.
    expect((await s.send('after')).queued).toBe(false);
    await s.idle();
    expect(await rt.store.readQueue('s-bound')).toEqual([]);
    await rt.close();
  });

  it('double-texting:interrupt:bound — messages joined to a running turn count toward the limit', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rt = createRuntime({
      model: {
        name: 'slow',
        async *stream(req, signal) {
          const last = req.messages.at(-1);
          const text = last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? '';
          if (text.includes('first') && !text.includes('second')) await Promise.race([gate, new Promise((r) => signal.addEventListener('abort', r))]);
          const block = { type: 'tool_use' as const, id: `r${Math.random()}`, name: 'respond', input: { parts: [{ text: 'ok', metadata: { partType: 'response' } }], turnState: 'complete' } };
          yield { type: 'message.stop', stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1 }, content: [block] };
        },
      },
      limits: { maxQueuedMessages: 1 },
    });
    rt.registries.actors.register({ name: 'a', tools: [] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const first = await s.send('first');
    await new Promise((r) => setTimeout(r, 20));
    await s.send('second');
    const err = await s.send('third').then(() => undefined, (e: unknown) => e);
    // 'second' joined the turn (or waits as its own turn): either way the third is over the limit.
    expect((err as TurnstateError | undefined)?.code).toBe('session.queue_full');
    release();
    await first.settled;
    await s.idle();
    const users = (await s.mailbox()).flatMap((m) => (m.kind === 'user' ? [m.text] : []));
    expect(users).toEqual(['first', 'second']);
    await rt.close();
  });

  it('durability:queue:legacy-snapshot — a session whose snapshot still carries its queue (written before queued messages were records) resumes it after a restart, and journals it', async () => {
    const db = join(dir, 'legacy.db');
    const first = buildDesk({ db, sideLog: join(dir, 'legacy.log') });
    const s = await first.createSession({ id: 's-legacy', actor: 'desk' });
    expect((await (await s.send('book Corfu')).settled).finalizedBy).toBe('suspended');
    await s.send('hello later');
    await first.close();
    // Rewrite the file as an older turnstate left it: the queue inside the snapshot, no queue records.
    const raw = createSqliteStore({ path: db });
    const queued = raw.readQueue('s-legacy');
    expect(queued.map((q) => q.message.text)).toEqual(['hello later']);
    const snap = raw.loadSnapshot('s-legacy')!;
    raw.commit('s-legacy', { dequeue: queued.map((q) => q.turnId), snapshot: { ...snap, host: { ...snap.host, queue: queued.map(({ turnId, message, opts }) => ({ turnId, message, opts })) } } });
    expect(raw.readQueue('s-legacy')).toEqual([]);
    raw.close();

    const second = buildDesk({ db, sideLog: join(dir, 'legacy.log') });
    expect((await second.recover()).resumed).toEqual(['s-legacy']);
    // Journaled with the next step (whose snapshot no longer carries it, in the same commit).
    await second.answerApproval(await pendingApproval(second.store, 's-legacy'), { approved: true }, { userId: 'ops' }, 'test');
    const again = (await second.session('s-legacy'))!;
    await again.idle();
    const inputs = (await second.store.readEvents('s-legacy', 0)).flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
    expect(inputs).toEqual(['book Corfu', 'hello later']);
    expect(await second.store.readQueue('s-legacy')).toEqual([]);
    await second.close();
  });

  it('runtime:limits:invalid — a maxQueuedMessages or historyCacheEntries that is not a count is refused by name', () => {
    const model = { name: 'm', stream: async function* () {} };
    for (const [limits, name] of [[{ maxQueuedMessages: 0 }, 'maxQueuedMessages'], [{ maxQueuedMessages: 1.5 }, 'maxQueuedMessages'], [{ historyCacheEntries: -1 }, 'historyCacheEntries']] as const) {
      expect(() => createRuntime({ model, limits })).toThrow(new RegExp(`limits\\.${name} must be an integer`));
    }
  });

  it('storage:queue:linear — 200 queued messages of 10 KB behind a turn waiting for approval grow the data directory by less than 3x their text (was 110x), and all 200 run after the answer', async () => {
    const data = join(dir, 'growth');
    rmSync(data, { recursive: true, force: true });
    mkdirSync(data);
    const store = createSqliteStore({ path: join(data, 'turnstate.db') });
    const rt = buildDesk({ store, sideLog: join(dir, 'growth.log'), limits: { maxQueuedMessages: 200 } });
    const s = await rt.createSession({ id: 's-growth', actor: 'desk' });
    expect((await (await s.send('book Corfu')).settled).finalizedBy).toBe('suspended');
    const before = dirBytes(data);
    const TEXT = 10_000;
    const refs = [];
    for (let i = 0; i < 200; i++) refs.push(await s.send(`${String(i).padStart(3, '0')} ${'x'.repeat(TEXT - 4)}`));
    const grown = dirBytes(data) - before;
    const text = 200 * TEXT;
    console.log(`storage:queue:linear — 200 x 10 KB queued: data directory +${(grown / 2 ** 20).toFixed(2)} MiB for ${(text / 2 ** 20).toFixed(2)} MiB of text (${(grown / text).toFixed(2)}x)`);
    expect(grown).toBeLessThan(3 * text);
    expect(store.readQueue('s-growth')).toHaveLength(200);

    await rt.answerApproval(await pendingApproval(store, 's-growth'), { approved: true }, { userId: 'ops' }, 'test');
    for (const r of refs) await r.settled;
    const started = store.readEvents('s-growth', 0).filter((e) => e.type === 'turn.started');
    expect(started.map((e) => (e.type === 'turn.started' ? e.input.text.slice(0, 3) : ''))).toEqual(['boo', ...Array.from({ length: 200 }, (_, i) => String(i).padStart(3, '0'))]);
    expect(store.readQueue('s-growth')).toEqual([]);
    await rt.close();
    // After all 200 turns ran (each message now in the mailbox and its turn's events once), still linear.
    const total = dirBytes(data) - before;
    console.log(`storage:queue:linear — after the 200 turns ran: +${(total / 2 ** 20).toFixed(2)} MiB (${(total / text).toFixed(2)}x the text)`);
    expect(total).toBeLessThan(6 * text);
  }, 60_000);
});
