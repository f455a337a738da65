/**
 * Crash at every write: a conversation (tools, approvals, a denial, a streamed answer; or
 * hand-offs, a failing bypass tool, an approval and a model failure) is run once to count its
 * store writes; then, for every write N, it is run again on a fresh
 * SQLite file where write N and every write after it fail, as if the process died just before
 * it. A new runtime opens the file, recovers, and the conversation is driven to its end.
 * After each: the log is 1..n, every started turn settled once and as it did undisturbed, no
 * tool ran twice, no denied tool ran, no approval resolved twice.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/machines/ports.js';
import type { SessionHandle } from '../../src/api.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import type { SessionEvent, StepCommit } from '../../src/types.js';
import { TRAVEL_SCRIPT, travelSetup } from '../replay/fixtures.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { buildDesk, sideEffects } from './fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WRITES = new Set(['commit', 'resolveApproval', 'createSession', 'deleteSession']);

class SimulatedCrash extends Error {}

/** A snapshot as a turnstate from before `halt` (where a turn rests) wrote it: the machine's context without it. */
function withoutHalt(step: StepCommit): StepCommit {
  const snap = step.snapshot as { machine?: { context?: Record<string, unknown> } } | undefined;
  if (!snap?.machine?.context || !('halt' in snap.machine.context)) return step;
  const { halt: _halt, ...context } = snap.machine.context;
  return { ...step, snapshot: { ...snap, machine: { ...snap.machine, context } } as StepCommit['snapshot'] };
}

/**
 * A store whose writes fail from the `dieAt`-th on (1-based); counts writes. `legacy`: its
 * snapshots are written as an older turnstate wrote them (withoutHalt).
 */
function crashingStore(inner: SessionStore, dieAt: number, group: boolean, legacy = false): { store: SessionStore; writes: () => number; dead: () => boolean; died: Promise<never> } {
  let writes = 0;
  let dead = false;
  let die!: (e: Error) => void;
  const died = new Promise<never>((_, reject) => (die = reject));
  died.catch(() => undefined);
  const store = new Proxy(inner, {
    get(target, prop) {
      // Without group commit every step is its own write: the finest crash points.
      if (prop === 'groupCommit' && !group) return undefined;
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      if (!WRITES.has(prop as string)) return (v as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        if (dead || ++writes === dieAt) {
          dead = true;
          const err = new SimulatedCrash(`simulated crash before write ${dieAt}`);
          die(err);
          throw err;
        }
        if (legacy && prop === 'commit') args[1] = withoutHalt(args[1] as StepCommit);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, writes: () => writes, dead: () => dead, died };
}

type Step = (f: () => Promise<unknown>) => Promise<void>;

interface Conversation {
  name: string;
  open(store: SessionStore, sideLog: string): TurnstateRuntime;
  /** Runs the conversation through `step`, which stops it once the "process" is dead. */
  run(rt: TurnstateRuntime, step: Step): Promise<void>;
}

const DESK: Conversation = {
  name: 'desk: tools, two approvals, a denial, a streamed answer',
  open: (store, sideLog) => buildDesk({ store, sideLog }),
  async run(rt, step) {
    let s!: SessionHandle;
    await step(async () => (s = await rt.createSession({ id: 'c', actor: 'desk' })));
    await step(async () => (await s.send('charge it')).settled);
    await step(async () => (await s.send('pair Corfu')).settled);
    const [a, b] = await rt.store.listApprovals({ sessionId: 'c', status: 'pending' });
    await step(() => rt.answerApproval(a!.approvalId, { approved: true }, { userId: 'ops' }, 'api'));
    await step(() => rt.answerApproval(b!.approvalId, { approved: false, reason: 'too dear' }, { userId: 'ops' }, 'api'));
    await step(() => s.idle());
    await step(async () => (await s.send('stream it')).settled);
  },
};

const TRAVEL: Conversation = {
  name: 'travel: hand-offs, a routed tool, a failing bypass tool, an approval, a model failure',
  open(store, sideLog) {
    const rt = createRuntime({ model: createScriptedModel(TRAVEL_SCRIPT), store });
    travelSetup(rt.registries, { onRun: (tool, callId) => appendFileSync(sideLog, `${tool} ${callId}\n`) });
    return rt;
  },
  async run(rt, step) {
    let s!: SessionHandle;
    await step(async () => (s = await rt.createSession({ id: 'c', actor: 'front' })));
    await step(async () => (await s.send('hello')).settled);
    await step(async () => (await s.send('flights to Corfu')).settled);
    await step(async () => (await s.send('book the cheap one')).settled);
    const [a] = await rt.store.listApprovals({ sessionId: 'c', status: 'pending' });
    await step(() => rt.answerApproval(a!.approvalId, { approved: true }, { userId: 'ops' }, 'api'));
    await step(() => s.idle());
    await step(async () => (await s.send('break it')).settled);
  },
};

/**
 * Run a conversation until the "process" dies. A dead process has no callers left, so each
 * step races the death: what the old runtime does with its promises no longer matters.
 */
async function converse(c: Conversation, rt: TurnstateRuntime, dead: () => boolean, died: Promise<never>): Promise<void> {
  await c.run(rt, async (f) => {
    if (dead()) throw new SimulatedCrash('dead');
    await Promise.race([f(), died]);
    if (dead()) throw new SimulatedCrash('dead');
  });
}

/** After the restart: answer whatever still waits (approve), until the session is idle. */
async function finish(rt: TurnstateRuntime): Promise<void> {
  await rt.recover();
  const s = await rt.session('c');
  if (!s) return;
  for (let i = 0; i < 10_000; i++) {
    const snap = await s.snapshot();
    if (snap.state === 'idle' && snap.queued === 0) return;
    if (snap.state === 'suspended') {
      for (const p of snap.pendingApprovals) await rt.answerApproval(p.approvalId, { approved: true }, { userId: 'late' }, 'api');
    }
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('the session did not finish');
}

const settledStates = (log: readonly SessionEvent[]) => log.flatMap((e) => (e.type === 'turn.settled' ? [e.finalizedBy] : []));

describe.each([
  ['per-step commits', false, false],
  ['group commit', true, false],
  // A file an older turnstate wrote (no `halt` in its snapshots): recovering from it keeps every guarantee.
  ['per-step commits, snapshots without halt', false, true],
])('crash at every store write (%s)', (mode, group, legacy) => {
  it.each([DESK, TRAVEL])(`durability:crash-points — death before any write N, then recovery: no gap, no duplicate, no tool twice, every turn settles as undisturbed (${mode}; $name)`, async (c) => {
    const tag = `${c === DESK ? 'desk' : 'travel'}-${group}-${legacy}`;
    // Count the writes of an undisturbed run.
    const base = crashingStore(createSqliteStore({ path: join(dir, `base-${tag}.db`) }), Infinity, group, legacy);
    const rt0 = c.open(base.store, join(dir, `base-${tag}.log`));
    await converse(c, rt0, base.dead, base.died);
    const total = base.writes();
    const expected = settledStates(await rt0.store.readEvents('c', 0));
    await rt0.close();
    expect(total).toBeGreaterThan(8);

    for (let n = 1; n <= total; n++) {
      const db = join(dir, `c${n}-${tag}.db`);
      const sideLog = join(dir, `c${n}-${tag}.log`);
      const crashing = crashingStore(createSqliteStore({ path: db }), n, group, legacy);
      const rt1 = c.open(crashing.store, sideLog);
      await converse(c, rt1, crashing.dead, crashing.died).catch((e: unknown) => {
        if (!crashing.dead()) throw e;
      });
      expect(crashing.dead(), `write ${n} was reached`).toBe(true);
      await rt1.close().catch(() => undefined);

      const rt2 = c.open(createSqliteStore({ path: db }), sideLog);
      await finish(rt2);
      const log = await rt2.store.readEvents('c', 0);
      const ctx = `crash before write ${n} of ${total}`;
      expect(log.map((e) => e.seq), ctx).toEqual(log.map((_, i) => i + 1));
      const started = log.filter((e) => e.type === 'turn.started').map((e) => e.turnId);
      const settled = log.filter((e) => e.type === 'turn.settled');
      expect(settled.map((e) => e.turnId), ctx).toEqual(started);
      // The turns that ran settled as they did undisturbed.
      expect(settledStates(log), ctx).toEqual(expected.slice(0, settled.length));
      const runs = sideEffects(sideLog);
      expect(new Set(runs).size, `${ctx}: a tool ran twice: ${runs.join(', ')}`).toBe(runs.length);
      const approvals = await rt2.store.listApprovals({ sessionId: 'c' });
      for (const a of approvals) {
        const ran = runs.filter((r) => r.endsWith(` ${a.callId}`)).length;
        if (a.status === 'denied') expect(ran, ctx).toBe(0);
        const resolved = log.filter((e) => e.type === 'approval.resolved' && e.approvalId === a.approvalId).length;
        expect(resolved, ctx).toBe(a.status === 'pending' ? 0 : 1);
      }
      // Every tool result the model saw answers a call, once.
      const results = log.filter((e) => e.type === 'tool.result').map((e) => (e.type === 'tool.result' ? e.callId : ''));
      expect(new Set(results).size, ctx).toBe(results.length);
      await rt2.close();
    }
  }, 120_000);
});
