/**
 * Mailbox views kept between turns (src/host/history-cache.ts): a session that slept between
 * turns, or was passivated, takes its mailbox and model history back and reads only the entries
 * written after them, so a turn's cost does not grow with the conversation. What the model is
 * sent is the same with or without the cache.
 */
import { describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/machines/ports.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { HistoryCache, MIN_KEPT_ENTRIES } from '../../src/host/history-cache.js';
import type { MailboxEntry } from '../../src/types.js';
import type { ModelScript } from '../../src/models/script.js';

const SCRIPT: ModelScript = {
  rules: [
    { id: 'tool', when: { on: 'user', text: '^look' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } }, { type: 'tool_use', name: 'look', input: {} }] } },
    { id: 'chat', when: { on: 'any' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'You said: $user', metadata: { partType: 'response' } }], turnState: 'complete' } }] } },
  ],
};

/** A memory store that records the `afterN` of every readMailbox call. */
function spied(): { store: SessionStore; reads: number[] } {
  const inner = createMemoryStore();
  const reads: number[] = [];
  const store = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === 'readMailbox') return (id: string, after?: number) => (reads.push(after ?? 0), inner.readMailbox(id, after));
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store, reads };
}

/** Tool-use ids (unique per ScriptedModel) renamed by order of first appearance and times left out, so runs compare. */
function normalized(x: unknown): unknown {
  const ids = new Map<string, string>();
  const text = JSON.stringify(x, (k, v: unknown) => (k === 'at' || k === 'turnId' ? undefined : v));
  return JSON.parse(text.replace(/toolu_[A-Za-z0-9_]+/g, (id) => ids.get(id) ?? (ids.set(id, `id${ids.size}`), `id${ids.size - 1}`)));
}

/** Enough turns for the mailbox to pass MIN_KEPT_ENTRIES (about 4 entries per turn). */
const TURNS = 120;

async function converse(historyCacheEntries: number, passivateEvery: number) {
  const { store, reads } = spied();
  const model = createScriptedModel(SCRIPT);
  const rt = createRuntime({ model, store, limits: { historyCacheEntries } });
  rt.registries.tools.register({ name: 'look', description: 'look', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => ({ seen: 'a cat' }) });
  rt.registries.actors.register({ name: 'a', tools: ['look'] });
  const s = await rt.createSession({ id: 's1', actor: 'a' });
  const sizes: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    sizes.push((await store.readMailbox('s1')).length);
    reads.pop();
    await (await s.send(i % 3 === 0 ? `look ${i}` : `hello ${i}`)).settled;
    if (passivateEvery && i % passivateEvery === passivateEvery - 1) expect(rt.passivateIdle()).toBe(1);
  }
  const requests = normalized(model.requests.map((r) => r.messages));
  const turnReads = reads.slice();
  const mailbox = normalized(await s.mailbox());
  await rt.close();
  return { reads: turnReads, sizes, requests, mailbox };
}

describe('history cache', () => {
  it('history:wake:incremental — a session woken after sleeping or passivation reads only the mailbox entries written after its view', async () => {
    const { reads, sizes } = await converse(100_000, 4);
    // A new session starts with an empty mailbox (no read). While the mailbox is short it is read
    // whole; once it holds MIN_KEPT_ENTRIES, every wake reads from where its view ends.
    const expected = sizes.slice(1).map((n) => (n >= MIN_KEPT_ENTRIES ? n : 0));
    expect(reads).toEqual(expected);
    expect(expected.filter((n) => n > 0).length).toBeGreaterThan(TURNS / 3);
  });

  it('history:cache:same-requests — the model is sent the same history with the cache, without it (budget 0) and across passivation', async () => {
    const cached = await converse(100_000, 0);
    const none = await converse(0, 0);
    const passivated = await converse(100_000, 2);
    expect(none.reads.every((n) => n === 0)).toBe(true);
    expect(cached.requests).toEqual(none.requests);
    expect(passivated.requests).toEqual(none.requests);
    expect(cached.mailbox).toEqual(none.mailbox);
  });

  it('history:cache:budget — least recently kept views go first; a view larger than the budget is not kept', () => {
    const cache = new HistoryCache(10, 0);
    const view = (n: number) => ({ entries: Array.from({ length: n }, (): MailboxEntry => ({ kind: 'user', text: 'x', turnId: 't', at: 'x' })), histories: null });
    cache.put('a', view(4));
    cache.put('b', view(4));
    cache.put('c', view(4));
    expect(cache.take('a')).toBeUndefined();
    expect(cache.size).toBe(8);
    cache.put('big', view(11));
    expect(cache.take('big')).toBeUndefined();
    expect(cache.take('b')?.entries).toHaveLength(4);
    expect(cache.size).toBe(4);
    cache.drop('c');
    expect(cache.size).toBe(0);
  });

  it('history:cache:short — a mailbox shorter than MIN_KEPT_ENTRIES is not kept (an idle short session costs no memory; re-reading it is bounded)', () => {
    const cache = new HistoryCache(100_000);
    const view = (n: number) => ({ entries: Array.from({ length: n }, (): MailboxEntry => ({ kind: 'user', text: 'x', turnId: 't', at: 'x' })), histories: null });
    cache.put('short', view(MIN_KEPT_ENTRIES - 1));
    cache.put('long', view(MIN_KEPT_ENTRIES));
    expect(cache.take('short')).toBeUndefined();
    expect(cache.take('long')?.entries).toHaveLength(MIN_KEPT_ENTRIES);
  });

  it('history:cache:deleted — a deleted session\'s view is dropped: a new session of the same id starts from its own empty mailbox', async () => {
    const rt = createRuntime({ model: createScriptedModel(SCRIPT) });
    rt.registries.actors.register({ name: 'a', tools: [] });
    const s = await rt.createSession({ id: 'same', actor: 'a' });
    await (await s.send('hello')).settled;
    expect(await rt.deleteSession('same')).toBe(true);
    const again = await rt.createSession({ id: 'same', actor: 'a' });
    await (await again.send('again')).settled;
    expect((await again.mailbox()).flatMap((m) => (m.kind === 'user' ? [m.text] : []))).toEqual(['again']);
    await rt.close();
  });
});
