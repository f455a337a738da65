/**
 * The machine decides, the host executes: for every path generated from the session machine
 * (every shortest path, and every one-turn simple path with its loops bounded by the budgets),
 * the effects the machine emits at each step are exactly the ones an oracle expects. The oracle
 * is written from the turn-state registry's metadata and the documented effect table
 * (docs/architecture.md), not from the machine's config: a terminal state settles, a holding
 * state holds, a hand-off passes the turn (or fails over its budget), every change of state is
 * announced, a blown budget fails with its code, and a loop that is ready asks for the next call.
 * After a restart (RECOVER), a resting turn repeats its effect and a working one continues.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { createRegistries } from '../../src/create-registries.js';
import { compiledSessionRun, createSessionMachine, upgradeSessionSnapshot, type SessionEffect } from '../../src/machines/session.machine.js';
import { MACHINE_INPUT, labelOf, loopKey, registerConsumerStates, shortKey, subOf } from './graph-fixtures.js';

const registries = createRegistries();
registerConsumerStates(registries);
const machine = createSessionMachine(registries.turnStates);
type Snap = ReturnType<typeof machine.transition>;
type Ev = Parameters<typeof machine.transition>[1];
const meta = (id: string) => registries.turnStates.get(id)!.meta;

/**
 * The receiving actor's own bounds in a hand-off (its ActorDefinition's): small, because its counts
 * start afresh (a bound is what one actor may spend), so the paths after a hand-off stay few.
 */
const RECEIVER_BOUNDS = { maxModelCalls: 1, maxRespondRetries: 0, maxNudges: 0 };

/** The events the host (and the model, through it) can produce in each state. */
function eventsFor(s: Snap): Ev[] {
  const v = s.value;
  if (v === 'idle') return [{ type: 'START', turnId: 't' }];
  const phase = subOf(v);
  if (phase === 'ready') return [{ type: 'CALL' }];
  if (phase === 'calling') {
    const other = s.context.actor === 'a' ? 'b' : 'a';
    return [
      ...(['dispatch', 'call', 'rejected', 'free-text'] as const).map((next) => ({ type: 'MODEL_DONE', next }) as Ev),
      // A whole response's summary: tool uses, a cut-short response.
      { type: 'MODEL_DONE', toolUses: 1, rejected: 0, applied: 1, freeText: false, stopReason: 'tool_use' } as Ev,
      { type: 'MODEL_DONE', toolUses: 1, rejected: 0, applied: 0, freeText: false, stopReason: 'max_tokens' } as Ev,
      ...registries.turnStates
        .list()
        .filter((d) => d.id !== 'suspended' && d.id !== 'awaiting')
        .map((d) => ({ type: 'RESPOND', to: d.id, ...(d.meta.handsOff ? { passTo: other, limits: RECEIVER_BOUNDS } : {}) }) as Ev),
      { type: 'FAIL', code: 'model.overloaded', message: 'overloaded' },
      { type: 'INTERRUPTED' },
    ];
  }
  if (phase === 'dispatching') return [{ type: 'CALL' }, { type: 'CALL', pending: 1 }];
  const m = meta(labelOf(v));
  if (m.isTerminal) return [{ type: 'SETTLE' }];
  if (m.holdsActor) return [{ type: 'RESUME', resumeOn: m.resumeOn! }, { type: 'ANSWERED' }];
  return [];
}

/** An effect reduced to what the host acts on. */
type Fx = { type: string; [k: string]: unknown };
function brief(e: SessionEffect): Fx {
  switch (e.type) {
    case 'state.changed':
      return { type: e.type, from: e.from, to: e.to, actor: e.actor, ...(e.resumedBy === undefined ? {} : { resumedBy: e.resumedBy }) };
    case 'fail':
      return { type: e.type, code: e.code, ...(e.stop === undefined ? {} : { stop: e.stop }) };
    case 'settle':
      return { type: e.type, state: e.state, emitsEnvelope: e.emitsEnvelope, ...(e.failed ? { failed: e.failed } : {}) };
    case 'hold':
      return { type: e.type, state: e.state };
    case 'actor.passed':
      return { type: e.type, from: e.from, to: e.to };
    case 'nudge':
      return { type: e.type, freeText: e.freeText, ...(e.compat ? { compat: true } : {}) };
    default:
      return { type: e.type };
  }
}

/** The settlement the oracle expects: a turn ending in the canonical `error` state has failed. */
const settles = (state: string, emitsEnvelope: boolean): Fx => ({ type: 'settle', state, emitsEnvelope, ...(state === 'error' ? { failed: true } : {}) });

/** The oracle: the effects a step must emit, from the state before it, the event and the registry. */
function expected(before: Snap, event: Ev): Fx[] {
  const c = before.context;
  const acting = c.actor ?? c.entryActor;
  const state = labelOf(before.value);
  const out: Fx[] = [];
  /** Entering turn state `to` from `from` (announced), with what that state does on entry. */
  const enter = (from: string, to: string, actor = acting, resumedBy?: string): void => {
    out.push({ type: 'state.changed', from, to, actor, ...(resumedBy === undefined ? {} : { resumedBy }) });
    const m = meta(to);
    if (m.isTerminal) out.push(settles(to, m.emitsEnvelope));
    else if (m.holdsActor) out.push({ type: 'hold', state: to });
    else if (to === 'awaiting') out.push({ type: 'model.next' });
  };
  const failTo = (code: string, stop?: string): void => {
    out.push({ type: 'fail', code, ...(stop === undefined ? {} : { stop }) });
    enter(state, 'error');
  };
  const nextCall = (): void => {
    if (c.modelCalls < c.maxModelCalls) out.push({ type: 'model.call' });
    else failTo('turn.model_call_budget');
  };
  switch (event.type) {
    case 'START':
      return [{ type: 'model.next' }];
    case 'CALL':
      if ((event.pending ?? 0) > 0) enter(state, 'suspended');
      else nextCall();
      return out;
    case 'MODEL_DONE': {
      if (event.next === 'dispatch') return out;
      if (event.next === 'call') return [{ type: 'model.next' }];
      if (event.next === 'rejected') {
        if (c.rejections < c.maxRespondRetries) return [{ type: 'model.next' }];
        failTo('turn.respond_retries');
        return out;
      }
      if (event.next === 'free-text') {
        if (c.nudges < c.maxNudges) return [{ type: 'model.next' }];
        failTo('turn.free_text');
        return out;
      }
      if (event.next !== undefined) throw new Error(`the oracle has no rule for MODEL_DONE:${event.next}`);
      if (event.stopReason === 'max_tokens') failTo('model.max_tokens', 'max_tokens');
      else if (event.toolUses > 0) out.push({ type: 'tools.dispatch' });
      return out;
    }
    case 'RESPOND': {
      const m = meta(event.to);
      if (!m.handsOff) {
        enter(state, event.to);
        return out;
      }
      out.push({ type: 'state.changed', from: state, to: event.to, actor: acting });
      if (c.handoffs < c.maxHandoffs) {
        out.push({ type: 'actor.passed', from: acting, to: event.passTo! });
        enter(event.to, 'awaiting', event.passTo!);
      } else {
        out.push({ type: 'fail', code: 'turn.handoff_budget' });
        enter(event.to, 'error');
      }
      return out;
    }
    case 'RESUME':
      enter(state, 'awaiting', acting, event.resumeOn);
      return out;
    case 'ANSWERED':
      // Only the state pending calls hold a turn in (`suspended`) resumes: a consumer's hold waits on.
      if (state === 'suspended') enter(state, 'awaiting', acting, meta(state).resumeOn);
      return out;
    case 'FAIL':
      failTo(event.code);
      return out;
    case 'INTERRUPTED':
      return [{ type: 'model.next' }];
    case 'SETTLE':
      return [];
    default:
      throw new Error(`the oracle has no rule for ${event.type}`);
  }
}

const shortest = getShortestPaths(machine, { input: MACHINE_INPUT, events: eventsFor, serializeState: shortKey as any });
const simple = getSimplePaths(machine, {
  input: MACHINE_INPUT,
  events: eventsFor,
  serializeState: loopKey as any,
  stopWhen: (s) => s.value === 'idle' && s.context.lastSettled !== null,
}).filter((p) => p.steps.filter((st) => st.event.type === 'START').length === 1);

const label = (e: Ev) => e.type + ('next' in e && e.next ? `:${e.next}` : 'to' in e ? `:${e.to}` : 'stopReason' in e ? `:${e.stopReason}` : 'pending' in e ? `:${e.pending}` : '');

/**
 * Replays a path on a live XState actor, or on the compiled run sessions use (compiled-machine.ts);
 * returns, per step, what was emitted and what the oracle expects.
 */
function replay(steps: readonly { event: Ev }[], engine: 'actor' | 'compiled' = 'actor'): { step: string; got: Fx[]; want: Fx[] }[] {
  const actor = createActor(machine, { input: MACHINE_INPUT });
  let emitted: Fx[] = [];
  actor.on('*', (e) => emitted.push(brief(e as SessionEffect)));
  actor.start();
  const run = engine === 'compiled' ? compiledSessionRun(machine, actor.getPersistedSnapshot())! : null;
  const rows: { step: string; got: Fx[]; want: Fx[] }[] = [];
  for (const { event } of steps) {
    if (event.type === ('xstate.init' as string)) continue;
    if (run) {
      const want = expected({ value: run.value, context: run.ctx } as unknown as Snap, event);
      const out: SessionEffect[] = [];
      run.handle(event, out);
      rows.push({ step: label(event), got: out.map(brief), want });
      continue;
    }
    const want = expected(actor.getSnapshot(), event);
    emitted = [];
    actor.send(event);
    rows.push({ step: label(event), got: emitted, want });
  }
  actor.stop();
  return rows;
}

describe('session machine: the effects of every generated path', () => {
  it('effects:paths:generated — the generator reaches every turn state and enough one-turn paths to matter', () => {
    const reached = new Set(shortest.map((p) => labelOf(p.state.value)));
    for (const d of registries.turnStates.list()) if (!d.meta.handsOff) expect(reached.has(d.id), d.id).toBe(true);
    expect(shortest.length).toBeGreaterThan(40);
    expect(simple.length).toBeGreaterThan(100);
  });

  for (const [name, paths, engine] of [
    ['shortest', shortest, 'actor'],
    ['simple', simple, 'actor'],
    ['shortest', shortest, 'compiled'],
    ['simple', simple, 'compiled'],
  ] as const) {
    const tag = engine === 'actor' ? name : `${name}:compiled`;
    const on = engine === 'actor' ? 'on an XState actor' : 'on the compiled run sessions use';
    it(`effects:paths:${tag} — for each ${name} path ${on}, every step emits exactly the effects the registry's metadata calls for, in order`, () => {
      let steps = 0;
      for (const path of paths) {
        const rows = replay(path.steps as any, engine);
        steps += rows.length;
        for (let i = 0; i < rows.length; i++) {
          const r = rows[i]!;
          expect(r.got, `path ${rows.map((x) => x.step).join(' ')}, step ${i + 1} (${r.step})`).toEqual(r.want);
        }
      }
      expect(steps).toBeGreaterThan(paths.length);
    });
  }

  it('effects:recover — "recovery computes a plan that is fed to the machine as events", and the machine decides: restored from the persisted snapshot at the end of every shortest path, RECOVER emits what the registry calls for (a resting turn repeats its effect, a working one continues its loop), written now or by an older turnstate, on XState and compiled', () => {
    /** The oracle for RECOVER with `pending` calls still waiting, from the state restored and its acting actor. */
    const recovered = (value: unknown, pending: number, actor: string): Fx[] => {
      if (value === 'idle') return [];
      const state = labelOf(value);
      const m = meta(state);
      if (m.isTerminal) return [settles(state, m.emitsEnvelope)];
      if (m.holdsActor) return [{ type: 'hold', state }];
      const phase = subOf(value);
      // A ready or dispatching loop with calls still waiting holds for them; any other continues.
      if (pending > 0 && phase !== 'calling') return [{ type: 'state.changed', from: state, to: 'suspended', actor }, { type: 'hold', state: 'suspended' }];
      return [{ type: 'model.next' }];
    };
    let checked = 0;
    for (const path of shortest) {
      const actor = createActor(machine, { input: MACHINE_INPUT, snapshot: path.state as any });
      actor.start();
      const written = actor.getPersistedSnapshot() as unknown as { value: unknown; context: Record<string, unknown> };
      actor.stop();
      const { halt: _halt, ...olderContext } = written.context;
      const older = upgradeSessionSnapshot(machine, { ...written, context: olderContext });
      for (const snapshot of [written, older]) {
        for (const pending of [0, 1]) {
          const want = recovered(written.value, pending, (written.context.actor ?? written.context.entryActor) as string);
          const where = `${JSON.stringify(written.value)}, pending ${pending}${snapshot === older ? ', older snapshot' : ''}`;
          const live = createActor(machine, { input: MACHINE_INPUT, snapshot: snapshot as any });
          const got: Fx[] = [];
          live.on('*', (e) => got.push(brief(e as SessionEffect)));
          live.start();
          live.send({ type: 'RECOVER', pending });
          live.stop();
          expect(got, where).toEqual(want);
          const out: SessionEffect[] = [];
          const recover: Ev = { type: 'RECOVER', pending };
          compiledSessionRun(machine, snapshot)!.handle(recover, out);
          expect(out.map(brief), `${where}, compiled`).toEqual(want);
          checked++;
        }
      }
    }
    expect(checked).toBe(shortest.length * 4);
  });

  it('effects:summaries — "a model response reaches the machine as one event carrying a summary; guards choose what follows": each kind of summary, within and over its budget, emits exactly its effects on both engines', () => {
    const done = (summary: Partial<{ change: { to: string }; toolUses: number; rejected: number; applied: number; freeText: boolean; stopReason: string; compat: boolean; fallback: string }>): Ev =>
      ({ type: 'MODEL_DONE', toolUses: 0, rejected: 0, applied: 0, freeText: false, stopReason: 'end_turn', ...summary }) as Ev;
    const start: Ev[] = [{ type: 'START', turnId: 't' }, { type: 'CALL' }];
    const again: Ev = { type: 'CALL' };
    const ends = (state: string, from = 'awaiting'): Fx[] => [{ type: 'state.changed', from, to: state, actor: 'a' }, settles(state, meta(state).emitsEnvelope)];
    const fails = (code: string, stop?: string): Fx[] => [{ type: 'fail', code, ...(stop ? { stop } : {}) }, ...ends('error')];
    const cases: [string, Ev[], Fx[]][] = [
      ['a change to a terminal state', [done({ change: { to: 'complete' }, applied: 1 })], ends('complete')],
      ['a change cut short by max_tokens', [done({ change: { to: 'complete' }, applied: 1, stopReason: 'max_tokens' })], fails('model.max_tokens', 'max_tokens')],
      ['a change cut short by a refusal', [done({ change: { to: 'complete' }, applied: 1, stopReason: 'refusal' })], fails('model.refusal', 'refusal')],
      ['a change to a state the machine does not have', [done({ change: { to: 'no-such-state' }, applied: 1 })], fails('turn.state_not_in_machine')],
      ['a rejected respond(), within budget: no nudge', [done({ rejected: 1 })], [{ type: 'model.next' }]],
      ['a rejected respond(), over budget', [done({ rejected: 1 }), again, done({ rejected: 1 })], fails('turn.respond_retries')],
      ['free text, within budget', [done({ freeText: true })], [{ type: 'nudge', freeText: true }, { type: 'model.next' }]],
      ['free text, over budget', [done({ freeText: true }), again, done({ freeText: true })], fails('turn.free_text')],
      ['compat, incomplete, within budget', [done({ compat: true })], [{ type: 'nudge', freeText: false, compat: true }, { type: 'model.next' }]],
      ['compat, incomplete, over budget', [done({ compat: true }), again, done({ compat: true })], fails('turn.incomplete')],
      ['compat with a fallback, nudges spent', [done({ compat: true }), again, done({ compat: true, fallback: 'complete' })], [{ type: 'fallback' }, ...ends('complete')]],
      ['progress only (a summary with nothing else)', [done({ applied: 1 })], [{ type: 'model.next' }]],
    ];
    for (const engine of ['actor', 'compiled'] as const) {
      for (const [name, events, want] of cases) {
        const rows = replay([...start, ...events].map((event) => ({ event })), engine);
        expect(rows.at(-1)!.got, `${name} (${engine})`).toEqual(want);
      }
    }
  });

  it('effects:turn — one whole turn (two tool rounds, then complete) emits the host\'s work list in order', () => {
    const events: Ev[] = [
      { type: 'START', turnId: 't' },
      { type: 'CALL' },
      { type: 'MODEL_DONE', toolUses: 1, rejected: 0, applied: 1, freeText: false, stopReason: 'tool_use' } as Ev,
      { type: 'CALL', pending: 0 },
      { type: 'MODEL_DONE', toolUses: 1, rejected: 0, applied: 1, freeText: false, stopReason: 'tool_use' } as Ev,
      { type: 'CALL', pending: 0 },
      { type: 'RESPOND', to: 'complete' },
      { type: 'SETTLE' },
    ];
    const flat = replay(events.map((event) => ({ event }))).flatMap((r) => r.got.map((f) => f.type));
    expect(flat).toEqual(['model.next', 'model.call', 'tools.dispatch', 'model.call', 'tools.dispatch', 'model.call', 'state.changed', 'settle']);
  });
});
