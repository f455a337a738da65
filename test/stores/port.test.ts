/**
 * A store written outside this repository meets the runtime at createRuntime: what it lacks of
 * the SessionStore port is named there (docs/stores.md "Writing another store"), not after a
 * restart or an approval answer that would be the first to call it.
 */
import { describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/api.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';

/** Every method of the port (all required); `kind` and `groupCommit` are properties. */
const METHODS = [
  'createSession',
  'getSession',
  'listSessions',
  'deleteSession',
  'commit',
  'readEvents',
  'lastSeq',
  'readMailbox',
  'readQueue',
  'readExecutions',
  'loadSnapshot',
  'getApproval',
  'listApprovals',
  'resolveApproval',
  'close',
] as const;

/** A hand-written store over a memory store: its methods copied, bound, minus `without`. */
function customStore(without: readonly string[] = []): SessionStore {
  const inner = createMemoryStore() as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = { kind: 'custom' };
  for (const m of METHODS) if (!without.includes(m)) out[m] = (inner[m] as (...a: unknown[]) => unknown).bind(inner);
  return out as unknown as SessionStore;
}

describe('a store written outside this repository', () => {
  const model = createScriptedModel({ rules: [] });

  it('store:port:methods — "Implement `SessionStore`": createRuntime refuses a store that lacks any method of the port (options.invalid naming each one it lacks), so a missing readQueue or resolveApproval is not first found after a restart or at an approval answer', () => {
    const memoryMethods = Object.keys(createMemoryStore()).filter((k) => k !== 'kind' && k !== 'groupCommit');
    expect([...METHODS].sort()).toEqual(memoryMethods.sort());
    for (const m of METHODS) {
      expect(() => createRuntime({ model, store: customStore([m]) }), m).toThrow(
        expect.objectContaining({ code: 'options.invalid', message: expect.stringMatching(new RegExp(`\`store\` must be a SessionStore .*; it lacks ${m}\\(\\)$`)) }),
      );
    }
    expect(() => createRuntime({ model, store: customStore(['readQueue', 'resolveApproval']) })).toThrow(
      expect.objectContaining({ code: 'options.invalid', message: expect.stringContaining('it lacks readQueue(), resolveApproval()') }),
    );
    // A property that is not a function is not the method.
    const notFn = { ...customStore(), lastSeq: 0 };
    expect(() => createRuntime({ model, store: notFn as never })).toThrow(expect.objectContaining({ code: 'options.invalid', message: expect.stringContaining('it lacks lastSeq()') }));
    expect(() => createRuntime({ model, store: null as never })).toThrow(expect.objectContaining({ code: 'options.invalid', message: expect.stringContaining('got null') }));
  });

  it('store:port:methods — a store with every method is accepted, its methods own properties or inherited (a class)', async () => {
    await createRuntime({ model, store: customStore() }).close();
    class Wrapped implements SessionStore {
      readonly kind = 'wrapped';
      private readonly inner = createMemoryStore();
      createSession: SessionStore['createSession'] = (r) => this.inner.createSession(r);
      getSession(id: string) {
        return this.inner.getSession(id);
      }
      listSessions(f?: { tenantId?: string }) {
        return this.inner.listSessions(f);
      }
      deleteSession(id: string) {
        return this.inner.deleteSession(id);
      }
      commit: SessionStore['commit'] = (id, step) => this.inner.commit(id, step);
      readEvents(id: string, after: number, limit?: number) {
        return this.inner.readEvents(id, after, limit);
      }
      lastSeq(id: string) {
        return this.inner.lastSeq(id);
      }
      readMailbox(id: string, after?: number) {
        return this.inner.readMailbox(id, after);
      }
      readQueue(id: string) {
        return this.inner.readQueue(id);
      }
      readExecutions(id: string) {
        return this.inner.readExecutions(id);
      }
      loadSnapshot(id: string) {
        return this.inner.loadSnapshot(id);
      }
      getApproval(id: string) {
        return this.inner.getApproval(id);
      }
      listApprovals: SessionStore['listApprovals'] = (f) => this.inner.listApprovals(f);
      resolveApproval: SessionStore['resolveApproval'] = (id, r) => this.inner.resolveApproval(id, r);
      close() {
        return this.inner.close();
      }
    }
    const rt = createRuntime({ model, store: new Wrapped() });
    rt.registries.actors.register({ name: 'desk' });
    const s = await rt.createSession({ actor: 'desk' });
    expect((await rt.store.getSession(s.id))?.actor).toBe('desk');
    await rt.close();
  });
});
