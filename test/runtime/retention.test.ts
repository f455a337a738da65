/**
 * What an idle session, a session whose write failed and a closed runtime keep in memory: each is
 * bounded by the limits the runtime was given, whatever options are set (an inspector) and
 * whatever subscribers did before they left.
 *
 * Nothing public reports what a host or the session directory holds, so these tests look at the
 * runtime's own structures (reached through the SessionDirectory and HistoryCache prototypes).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InspectionEvent } from 'xstate';
import type { SessionStore } from '../../src/machines/ports.js';
import { HistoryCache, MIN_KEPT_ENTRIES } from '../../src/host/history-cache.js';
import { SessionDirectory } from '../../src/host/session-directory.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';

const SCRIPT: ModelScript = {
  rules: [
    { when: { on: 'user', text: '^look' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } }, { type: 'tool_use', name: 'look', input: {} }] } },
    { when: { on: 'any' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'You said: $user', metadata: { partType: 'response' } }], turnState: 'complete' } }] } },
  ],
};

afterEach(() => vi.restoreAllMocks());

/** The session directory of the runtimes created from now on (the last one whose session was handed out). */
function directoryOf(): () => SessionDirectory {
  let dir: SessionDirectory | undefined;
  const orig = SessionDirectory.prototype.handleFor;
  vi.spyOn(SessionDirectory.prototype, 'handleFor').mockImplementation(function (this: SessionDirectory, ...a) {
    dir = this;
    return orig.apply(this, a);
  });
  return () => dir!;
}

/** The history cache of the runtimes created from now on (the last one a view was put in). */
function historyCacheOf(): () => HistoryCache | undefined {
  let cache: HistoryCache | undefined;
  const orig = HistoryCache.prototype.put;
  vi.spyOn(HistoryCache.prototype, 'put').mockImplementation(function (this: HistoryCache, ...a) {
    cache = this;
    return orig.apply(this, a);
  });
  return () => cache;
}

/** Mailbox entries a live host holds (its journal's cache of the mailbox). */
function heldByHost(dir: SessionDirectory, id: string): number {
  const host = dir.peek(id);
  expect(host).toBeDefined();
  return ((host!.journal as unknown as { mailboxCache: unknown[] | null }).mailboxCache ?? []).length;
}

function runtime(opts: { historyCacheEntries?: number; inspect?: (e: InspectionEvent) => void; store?: SessionStore; model?: ReturnType<typeof createScriptedModel> } = {}): TurnstateRuntime {
  const rt = createRuntime({
    model: opts.model ?? createScriptedModel(SCRIPT, { record: false }),
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.inspect ? { inspect: opts.inspect } : {}),
    ...(opts.historyCacheEntries !== undefined ? { limits: { historyCacheEntries: opts.historyCacheEntries } } : {}),
  });
  rt.registries.tools.register({ name: 'look', description: 'look', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => ({ seen: 'a cat' }) });
  rt.registries.actors.register({ name: 'a', tools: ['look'] });
  return rt;
}

describe('retention: an idle inspected session', () => {
  it('retention:inspect:idle-mailbox — with an inspector, an idle session keeps no more of its mailbox than historyCacheEntries allows (0: none), its actor stays the one the inspector sees, and the model is sent the same history', async () => {
    const dir = directoryOf();
    const actors: unknown[] = [];
    const model = createScriptedModel(SCRIPT);
    const rt = runtime({ historyCacheEntries: 0, model, inspect: (e) => void (e.type === '@xstate.actor' && actors.push(e.actorRef)) });
    const s = await rt.createSession({ id: 's1', actor: 'a' });
    const TURNS = 120;
    for (let i = 0; i < TURNS; i++) {
      await (await s.send(i % 3 === 0 ? `look ${i}` : `hello ${i}`)).settled;
      await s.idle();
      expect(heldByHost(dir(), s.id)).toBe(0);
    }
    // The conversation is long (well past what the cache would keep) and all of it is in the store.
    expect((await rt.store.readMailbox('s1')).length).toBeGreaterThan(MIN_KEPT_ENTRIES);
    // One live actor for the session across every turn: the inspector sees the same one.
    expect(actors).toHaveLength(1);
    // The history read back from the store each turn is the one the session would have kept.
    const plain = createScriptedModel(SCRIPT);
    const rt2 = runtime({ model: plain });
    const s2 = await rt2.createSession({ id: 's1', actor: 'a' });
    for (let i = 0; i < TURNS; i++) await (await s2.send(i % 3 === 0 ? `look ${i}` : `hello ${i}`)).settled;
    const norm = (x: unknown) => JSON.stringify(x).replace(/toolu_[A-Za-z0-9_]+/g, 'id');
    expect(norm(model.requests.map((r) => r.messages))).toEqual(norm(plain.requests.map((r) => r.messages)));
    await rt.close();
    await rt2.close();
  });

  it('retention:inspect:cache-budget — with an inspector, what an idle session keeps goes to the history cache, within its budget', async () => {
    const dir = directoryOf();
    const cache = historyCacheOf();
    const BUDGET = 2 * MIN_KEPT_ENTRIES;
    const rt = runtime({ historyCacheEntries: BUDGET, inspect: () => {} });
    const s = await rt.createSession({ id: 's1', actor: 'a' });
    for (let i = 0; i < 150; i++) {
      await (await s.send(`look ${i}`)).settled;
      await s.idle();
      expect(heldByHost(dir(), s.id) + (cache()?.size ?? 0)).toBeLessThanOrEqual(BUDGET);
    }
    // The mailbox outgrew the budget: neither the host nor the cache keeps it.
    expect((await rt.store.readMailbox('s1')).length).toBeGreaterThan(BUDGET);
    await rt.close();
  });
});

describe('retention: subscribers parked after a failed write', () => {
  /** A memory store whose commits of a message holding "boom" fail. */
  function failing(): SessionStore {
    const inner = createMemoryStore();
    return new Proxy(inner, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === 'commit') {
          return (id: string, step: Parameters<SessionStore['commit']>[1]) => {
            if (step.mailbox?.some((m) => JSON.stringify(m).includes('boom'))) throw new Error('disk full');
            return inner.commit(id, step);
          };
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
  const followersOf = (dir: SessionDirectory) => (dir as unknown as { followers: Map<string, unknown> }).followers;

  it('retention:followers:unsubscribed — a session whose write failed keeps nothing for subscribers that left before it was used again', async () => {
    const dir = directoryOf();
    const rt = runtime({ store: failing() });
    for (let i = 0; i < 30; i++) {
      const s = await rt.createSession({ actor: 'a' });
      await (await s.send('hello')).settled;
      const sub = s.events().subscribe(() => {});
      await expect(s.send('boom')).rejects.toThrow('disk full');
      // The subscriber is present at the failure: it waits for the session's next host.
      expect(followersOf(dir()).size).toBe(1);
      sub.unsubscribe();
      rt.passivateIdle();
      expect(followersOf(dir()).size).toBe(0);
    }
    await rt.close();
  });

  it('retention:followers:still-followed — a subscriber that stays after another left still follows the woken session, each event once and in order', async () => {
    const dir = directoryOf();
    const rt = runtime({ store: failing() });
    const s = await rt.createSession({ actor: 'a' });
    await (await s.send('hello')).settled;
    const seen: number[] = [];
    let ended = false;
    const stays = s.events().subscribe({ next: (e) => seen.push(e.seq), complete: () => (ended = true) });
    const leaves = s.events().subscribe(() => {});
    await expect(s.send('boom')).rejects.toThrow('disk full');
    leaves.unsubscribe();
    expect(followersOf(dir()).size).toBe(1);
    rt.passivateIdle();
    expect((await (await s.send('hello again')).settled).finalizedBy).toBe('complete');
    await s.idle();
    expect(followersOf(dir()).size).toBe(0);
    expect(ended).toBe(false);
    expect(seen).toEqual((await rt.history(s.id)).map((e) => e.seq));
    expect(seen.length).toBeGreaterThan(0);
    // Leaving later, from the adopting host, touches nothing parked.
    stays.unsubscribe();
    expect(followersOf(dir()).size).toBe(0);
    await rt.close();
  });
});

describe('retention: a closed runtime', () => {
  it('retention:close:history-cache — close() empties the history cache: a closed runtime still referenced keeps no mailbox', async () => {
    const cache = historyCacheOf();
    const rt = runtime();
    const sessions = await Promise.all([0, 1, 2].map(() => rt.createSession({ actor: 'a' })));
    for (let i = 0; i < 3 * 80; i++) await (await sessions[i % 3]!.send(`look ${i}`)).settled;
    // The sleeping sessions' mailboxes are kept between turns (each past MIN_KEPT_ENTRIES).
    expect(cache()!.size).toBeGreaterThanOrEqual(2 * MIN_KEPT_ENTRIES);
    await rt.close();
    expect(cache()!.size).toBe(0);
    for (const s of sessions) expect(cache()!.take(s.id)).toBeUndefined();
  });
});
