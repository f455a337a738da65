/**
 * Creating and deleting sessions while other calls on the same id are in flight, and a runtime
 * after close(), on a synchronous store (memory) and a group-commit store (SQLite). Races are made
 * deterministic by a store whose chosen method waits at a gate the test opens.
 */
import { describe, expect, it } from 'vitest';
import type { ModelPort, TurnRef } from '../../src/api.js';
import type { SessionStore } from '../../src/machines/ports.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { answer, harness, part, respond } from './helpers.js';

const simple = { rules: [{ respond: answer(respond([part('response', 'hi')], 'complete')) }] };

/**
 * `store` with `method` held at a gate once `arm()` is called: each call made while armed waits
 * until `release()`; `arrived` resolves at the first such call.
 */
function gated(store: SessionStore, method: keyof SessionStore) {
  let armed = false;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let arrive!: () => void;
  const arrived = new Promise<void>((r) => (arrive = r));
  const wrapped = new Proxy(store, {
    get(target, key) {
      const v = Reflect.get(target, key);
      if (typeof v !== 'function') return v;
      if (key !== method) return v.bind(target);
      return (...args: unknown[]) => {
        if (!armed) return v.apply(target, args);
        arrive();
        return gate.then(() => v.apply(target, args));
      };
    },
  });
  return { store: wrapped, arm: () => (armed = true), release: () => release(), arrived };
}

const stores = {
  memory: () => createMemoryStore(),
  sqlite: () => createSqliteStore({ path: ':memory:' }),
};

for (const kind of ['memory', 'sqlite'] as const) {
  describe(`session lifecycle (${kind} store)`, () => {
    it('store:commit:creates-session — "of concurrent creates of one id exactly one succeeds and the others get session.exists": two creates of one id for two tenants, and the session is the winner\'s everywhere (handle, live session, store)', async () => {
      const g = gated(stores[kind](), 'getSession');
      const { rt } = harness(simple, { store: g.store });
      rt.registries.actors.register({ name: 'desk' });
      g.arm();
      // The first create waits in the store's existence check while the second one starts.
      const first = rt.createSession({ id: 'shared', actor: 'desk', tenantId: 'acme' });
      const second = rt.createSession({ id: 'shared', actor: 'desk', tenantId: 'evil' });
      await g.arrived;
      g.release();
      const [a, b] = await Promise.allSettled([first, second]);
      expect(a.status).toBe('fulfilled');
      expect(b).toMatchObject({ status: 'rejected', reason: { code: 'session.exists' } });
      const handle = (a as PromiseFulfilledResult<any>).value;
      expect(handle.record.tenantId).toBe('acme');
      expect(await rt.session('shared')).toBe(handle);
      expect((await (await handle.send('hello')).settled).finalizedBy).toBe('complete');
      expect((await rt.store.getSession('shared'))?.tenantId).toBe('acme');
      expect((await rt.listSessions({ tenantId: 'evil' })).map((r) => r.id)).toEqual([]);
      expect(rt.liveSessions).toBe(1);
      await rt.close();
    });

    it('session:delete:during-activation — "leaves no live session behind: later uses get session.not_found": a passivated session woken while deleteSession is still deleting it stays deleted', async () => {
      const g = gated(stores[kind](), 'deleteSession');
      const { rt } = harness(simple, { store: g.store });
      rt.registries.actors.register({ name: 'desk' });
      const s = await rt.createSession({ id: 'gone', actor: 'desk' });
      await (await s.send('hello')).settled;
      expect(rt.passivateIdle()).toBe(1);
      g.arm();
      const deleted = rt.deleteSession('gone');
      // The delete is in the store now; the session's rows are still there to be read.
      await g.arrived;
      const woken = await rt.session('gone');
      g.release();
      expect(await deleted).toBe(true);
      expect(woken).toBeUndefined();
      expect(rt.liveSessions).toBe(0);
      expect(await rt.session('gone')).toBeUndefined();
      await expect(s.send('again')).rejects.toMatchObject({ code: 'session.not_found' });
      await expect(s.snapshot()).rejects.toMatchObject({ code: 'session.not_found' });
      expect(await rt.history('gone')).toEqual([]);
      await rt.close();
    });

    it('session:delete:during-activation — "a second deleteSession of it while the first runs answers false once the first is done"; a handle used while it is being deleted gets session.not_found and wakes nothing', async () => {
      const g = gated(stores[kind](), 'deleteSession');
      const { rt } = harness(simple, { store: g.store });
      rt.registries.actors.register({ name: 'desk' });
      const s = await rt.createSession({ id: 'twice', actor: 'desk' });
      await (await s.send('hello')).settled;
      g.arm();
      const first = rt.deleteSession('twice');
      await g.arrived;
      const second = rt.deleteSession('twice');
      const snap = s.snapshot().then(
        () => 'snapshot',
        (e) => e.code,
      );
      g.release();
      expect(await Promise.all([first, second])).toEqual([true, false]);
      expect(await snap).toBe('session.not_found');
      expect(rt.liveSessions).toBe(0);
      expect(await rt.session('twice')).toBeUndefined();
      expect(await rt.deleteSession('twice')).toBe(false);
      await rt.close();
    });

    it('api:closed — "every method of the runtime that reaches a session or the store rejects with runtime.closed": deleteSession, listSessions, history, approvals, approval and recover too, never the store\'s store.closed', async () => {
      const { rt } = harness(simple, { store: stores[kind]() });
      rt.registries.actors.register({ name: 'desk' });
      const s = await rt.createSession({ id: 's1', actor: 'desk' });
      await (await s.send('hello')).settled;
      await rt.close();
      const calls: [string, () => Promise<unknown>][] = [
        ['deleteSession', () => rt.deleteSession('s1')],
        ['listSessions', () => rt.listSessions()],
        ['history', () => rt.history('s1')],
        ['approvals', () => rt.approvals({ sessionId: 's1' })],
        ['approval', () => rt.approval('appr_x')],
        ['recover', () => rt.recover()],
        ['createSession', () => rt.createSession({ actor: 'desk' })],
        ['send', () => s.send('again')],
      ];
      const codes: Record<string, unknown> = {};
      for (const [name, call] of calls) codes[name] = await call().then(() => 'resolved', (e) => e.code);
      expect(codes).toEqual(Object.fromEntries(calls.map(([name]) => [name, 'runtime.closed'])));
    });

    it.each(['getSession', 'readEvents', 'deleteSession', 'listApprovals'] as const)('api:closed — "also when the call was under way as the runtime closed": a call waiting in the store\'s %s when close() closes the store rejects with runtime.closed', async (method) => {
      const g = gated(stores[kind](), method);
      const { rt } = harness(simple, { store: g.store });
      rt.registries.actors.register({ name: 'desk' });
      const s = await rt.createSession({ id: 's1', actor: 'desk' });
      await (await s.send('hello')).settled;
      g.arm();
      const call = {
        getSession: () => rt.createSession({ id: 's2', actor: 'desk' }),
        readEvents: () => rt.history('s1'),
        deleteSession: () => rt.deleteSession('s1'),
        listApprovals: () => rt.approvals({ sessionId: 's1' }),
      }[method]();
      await g.arrived;
      await rt.close();
      g.release();
      await expect(call).rejects.toMatchObject({ code: 'runtime.closed' });
    });

    it('api:closed:send-under-way — "also when the call was under way as the runtime closed": a send made as close() stops the session, while a model response arrives that the stopped host must not write, is taken (its outcome session.stopped) and never rejects with the store\'s store.closed', async () => {
      const scripted = createScriptedModel(simple);
      const outcomes = new Set<string>();
      // The model's response lands a varying number of microtasks before the send and close().
      for (let ticks = 0; ticks < 30; ticks++) {
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const model: ModelPort = {
          name: 'gated',
          async *stream(req) {
            // Ignores the abort: the response arrives whatever happened meanwhile.
            await gate;
            yield* scripted.stream(req, new AbortController().signal);
          },
        };
        const rt = createRuntime({ model, store: stores[kind]() });
        rt.registries.actors.register({ name: 'desk' });
        const s = await rt.createSession({ actor: 'desk' });
        await s.send('hello');
        await new Promise((r) => setTimeout(r, 5));
        release();
        for (let i = 0; i < ticks; i++) await Promise.resolve();
        const sent = s.send('again');
        const closed = rt.close();
        const ref = await sent.catch((e: { code?: string }) => e);
        // Taken (queued behind the running turn, or a turn of its own once that one settled).
        expect(ref, `${ticks} microtasks`).toMatchObject({ turnId: expect.any(String), queued: expect.any(Boolean) });
        outcomes.add((await (ref as TurnRef).settled).error?.code ?? 'none');
        await closed;
      }
      expect([...outcomes]).toEqual(['session.stopped']);
    });
  });
}

describe('session lifecycle, two runtimes on one store', () => {
  it('store:commit:creates-session — "a store that refuses the id itself (store.session_exists: another runtime on it wrote the id first) is answered session.exists too"', async () => {
    const g = gated(createMemoryStore(), 'getSession');
    const one = harness(simple, { store: g.store }).rt;
    const two = harness(simple, { store: g.store }).rt;
    for (const rt of [one, two]) rt.registries.actors.register({ name: 'desk' });
    g.arm();
    const first = one.createSession({ id: 'shared', actor: 'desk', tenantId: 'acme' });
    const second = two.createSession({ id: 'shared', actor: 'desk', tenantId: 'evil' });
    await g.arrived;
    g.release();
    const [a, b] = await Promise.allSettled([first, second]);
    expect(a.status).toBe('fulfilled');
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'session.exists', message: 'a session with id "shared" already exists' } });
    expect(two.liveSessions).toBe(0);
    await one.close();
  });
});
