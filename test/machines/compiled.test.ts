/**
 * The compiled machine (src/machines/compiled-machine.ts) runs the session machine's definition
 * without an XState actor. It must be indistinguishable from the actor: after every event the
 * same state value, the same context and the same effects in the same order; the same answer to
 * `can`; persisted snapshots either side restores. A machine it cannot run does not compile, and
 * its sessions run on an actor.
 */
import { describe, expect, it } from 'vitest';
import { createActor, createMachine } from 'xstate';
import { createRegistries } from '../../src/create-registries.js';
import { createActorMachine } from '../../src/machines/actor.machine.js';
import { compileMachine, CompiledRun } from '../../src/machines/compiled-machine.js';
import { compiledSessionRun, createSessionMachine, sessionActionSpecs, type SessionEffect, type SessionMachineEvent } from '../../src/machines/session.machine.js';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { MACHINE_INPUT, registerConsumerStates } from './graph-fixtures.js';
import { seeded } from '../seeded.js';

const registries = createRegistries();
registerConsumerStates(registries);
const machine = createSessionMachine(registries.turnStates);
const stateIds = registries.turnStates.list().map((d) => d.id);

/** Every kind of event the host can send, in any state (most are ignored where they do not apply). */
function anyEvent(r: () => number): SessionMachineEvent {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const to = pick([...stateIds, 'nowhere']);
  const summary = {
    toolUses: pick([0, 0, 1, 2]),
    rejected: pick([0, 0, 1]),
    applied: pick([0, 1, 1]),
    freeText: r() < 0.3,
    stopReason: pick(['tool_use', 'end_turn', 'max_tokens', 'refusal', 'model_context_window_exceeded']),
    ...(r() < 0.3 ? { change: { to, ...(r() < 0.5 ? { passTo: pick(['a', 'b']) } : {}), ...(r() < 0.3 ? { limits: { maxModelCalls: 2, maxRespondRetries: 1 } } : {}) } } : {}),
    ...(r() < 0.2 ? { compat: true } : {}),
    ...(r() < 0.2 ? { fallback: pick(['complete', 'partial']) } : {}),
  };
  const all: (() => SessionMachineEvent)[] = [
    () => ({ type: 'START', turnId: `t${Math.floor(r() * 100)}`, ...(r() < 0.3 ? { limits: { maxModelCalls: 2, maxRespondRetries: 0 } } : {}) }),
    () => ({ type: 'CALL' }),
    () => ({ type: 'CALL', pending: pick([0, 1]) }),
    () => ({ type: 'MODEL_DONE', ...summary }) as SessionMachineEvent,
    () => ({ type: 'MODEL_DONE', next: pick(['dispatch', 'call', 'rejected', 'free-text'] as const) }),
    () => ({ type: 'RESPOND', to, ...(r() < 0.6 ? { passTo: pick(['a', 'b']) } : {}) }),
    () => ({ type: 'HOLD', to }),
    () => ({ type: 'RESUME', resumeOn: pick(['approval-response', 'client-input', 'human', 'injection', 'x']) }),
    () => ({ type: 'FAIL', code: 'model.overloaded', message: 'overloaded', ...(r() < 0.3 ? { userText: 'Try again.', stop: 'error' as const } : {}) }),
    () => ({ type: 'SETTLE' }),
    () => ({ type: 'JOIN', pending: pick([0, 1]) }),
    () => ({ type: 'INTERRUPTED' }),
    () => ({ type: 'TOOLS_DONE', pending: pick([0, 1]) }),
    () => ({ type: 'RECOVER', pending: pick([0, 1]) }),
  ];
  return pick(all)();
}

/** An XState actor and a compiled run, side by side from the same snapshot. */
function pair(from?: unknown) {
  const actor = createActor(machine, { input: MACHINE_INPUT, ...(from ? { snapshot: from as any } : {}) });
  const fromActor: SessionEffect[] = [];
  actor.on('*', (e) => fromActor.push(e as SessionEffect));
  actor.start();
  const run = compiledSessionRun(machine, from ?? actor.getPersistedSnapshot())!;
  const fromRun: SessionEffect[] = [];
  return {
    actor,
    run,
    send(event: SessionMachineEvent) {
      fromActor.length = 0;
      fromRun.length = 0;
      actor.send(event);
      run.handle(event, fromRun);
      return { fromActor: [...fromActor], fromRun: [...fromRun] };
    },
  };
}

describe('compiled session machine', () => {
  it('compiled:compiles — the session machine (canonical and consumer turn states) compiles; its run starts where the actor starts', () => {
    expect(compileMachine(machine, sessionActionSpecs)).not.toBeNull();
    const p = pair();
    expect(p.run.value).toEqual(p.actor.getSnapshot().value);
    expect(p.run.ctx).toEqual(p.actor.getSnapshot().context);
  });

  it('compiled:lockstep:random — over 400 seeded walks of 40 events of every kind, each event leaves the run and the actor in the same state with the same context, having emitted the same effects in the same order, and can() agrees before it', () => {
    let moved = 0;
    const visited = new Set<string>();
    for (let w = 0; w < 400; w++) {
      const r = seeded(1000 + w);
      const p = pair();
      const trail: string[] = [];
      for (let i = 0; i < 40; i++) {
        // Half the time, an event that starts or continues a turn, so walks get deep into turns.
        const event = r() < 0.5 && p.actor.getSnapshot().value === 'idle' ? ({ type: 'START', turnId: 't' } as const) : anyEvent(r);
        trail.push(JSON.stringify(event));
        const where = `walk ${w}: ${trail.join(' ')}`;
        expect(p.run.can(event), where).toBe(p.actor.getSnapshot().can(event));
        const before = JSON.stringify(p.actor.getSnapshot().value);
        const { fromActor, fromRun } = p.send(event);
        const snap = p.actor.getSnapshot();
        expect(fromRun, where).toEqual(fromActor);
        expect(p.run.value, where).toEqual(snap.value);
        expect(p.run.ctx, where).toEqual(snap.context);
        if (JSON.stringify(snap.value) !== before) moved++;
        visited.add(JSON.stringify(snap.value));
      }
      p.actor.stop();
    }
    // The walks are not idle: they move often and reach every turn state of the registry.
    expect(moved).toBeGreaterThan(2500);
    for (const id of stateIds) {
      if (registries.turnStates.get(id)!.meta.handsOff) continue;
      expect([...visited].some((v) => v.includes(`"${id}"`)), id).toBe(true);
    }
  });

  it('compiled:lockstep:self-send — a response whose summary asks for a known state reaches the machine as its own RESPOND, after the summary\'s effects, in both', () => {
    const p = pair();
    p.send({ type: 'START', turnId: 't' });
    p.send({ type: 'CALL' });
    const { fromActor, fromRun } = p.send({ type: 'MODEL_DONE', toolUses: 0, rejected: 0, applied: 1, freeText: false, stopReason: 'tool_use', change: { to: 'transferred', passTo: 'b' } });
    expect(fromRun).toEqual(fromActor);
    expect(fromRun.map((e) => e.type)).toEqual(['state.changed', 'actor.passed', 'state.changed', 'model.next']);
    expect(p.run.ctx.actor).toBe('b');
  });

  it('compiled:persisted — persisted snapshots have XState\'s shape: an actor restores the run\'s, a run restores the actor\'s, and both go on alike', () => {
    const r = seeded(7);
    for (let w = 0; w < 60; w++) {
      const p = pair();
      for (let i = 0; i < 12; i++) p.send(i === 0 ? { type: 'START', turnId: 't' } : anyEvent(r));
      const fromRun = JSON.parse(JSON.stringify(p.run.persisted()));
      expect(fromRun).toEqual(JSON.parse(JSON.stringify(p.actor.getPersistedSnapshot())));
      // Crossed over: the actor continues from the run's snapshot and vice versa.
      const a = pair(fromRun);
      const b = new CompiledRun(compileMachine(machine, sessionActionSpecs)!, JSON.parse(JSON.stringify(p.actor.getPersistedSnapshot())));
      for (let i = 0; i < 12; i++) {
        const event = anyEvent(r);
        const { fromActor, fromRun: effects } = a.send(event);
        const again: SessionEffect[] = [];
        b.handle(event, again);
        expect(effects).toEqual(fromActor);
        expect(again).toEqual(fromActor);
        expect(b.ctx).toEqual(a.actor.getSnapshot().context);
      }
      a.actor.stop();
      p.actor.stop();
    }
  });

  it('compiled:persisted:unchanged — an event that changes nothing keeps the persisted snapshot (one object), one that moves the machine replaces it', () => {
    const p = pair();
    const s0 = p.run.persisted();
    expect(p.run.persisted()).toBe(s0);
    p.send({ type: 'SETTLE' }); // not handled while idle
    expect(p.run.persisted()).toBe(s0);
    p.send({ type: 'START', turnId: 't' });
    expect(p.run.persisted()).not.toBe(s0);
    expect(p.run.persisted().value).toEqual({ turn: { awaiting: 'ready' } });
  });

  it('compiled:restore:bad-value — a snapshot naming a state the machine lacks is refused with the missing state named', () => {
    const bad = { status: 'active', value: { turn: 'vanished' }, historyValue: {}, context: p0().context, children: {} };
    expect(() => compiledSessionRun(machine, bad)).toThrow(/'vanished' does not exist on 'session\.turn'/);
  });

  it('compiled:unsupported — a machine with a final state, parallel regions or an invocation does not compile (its sessions run on an XState actor)', () => {
    expect(compileMachine(createActorMachine(), sessionActionSpecs)).toBeNull(); // a final state
    const parallel = createMachine({ id: 'p', type: 'parallel', states: { a: {}, b: {} } });
    expect(compileMachine(parallel, {})).toBeNull();
    const invoking = createMachine({ id: 'i', initial: 'a', states: { a: { invoke: { src: createMachine({}) } } } });
    expect(compileMachine(invoking, {})).toBeNull();
    // An action without a spec cannot run compiled either.
    const inline = createMachine({ id: 'x', initial: 'a', states: { a: { on: { GO: { target: 'b', actions: () => undefined } } }, b: {} } });
    expect(compileMachine(inline, {})).toBeNull();
  });

  it('compiled:runtime — a session without an inspector runs compiled and settles the same turn an inspected (actor) session settles, with the same events', async () => {
    const script = {
      rules: [
        {
          id: 'call',
          when: { call: 0 },
          respond: {
            blocks: [
              { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
              { type: 'tool_use', name: 'lookup', input: { q: 'corfu' } },
            ],
          },
        },
        { id: 'done', when: { call: 1 }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Found.', metadata: { partType: 'response' } }], turnState: 'complete' } }] } },
      ],
    };
    const turnOf = async (inspect?: (e: unknown) => void) => {
      const rt = createRuntime({ model: createScriptedModel(script as any), ...(inspect ? { inspect } : {}) });
      rt.registries.tools.register({ name: 'lookup', description: 'Looks up', scope: 'generalist', inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }, handler: async (a: any) => ({ found: a.q }) });
      rt.registries.actors.register({ name: 'alpha', tools: ['lookup'] });
      const s = await rt.createSession({ actor: 'alpha' });
      const out = await (await s.send('find corfu')).settled;
      // Every event of the session, from the start to the settlement.
      const events = await new Promise<unknown[]>((resolve) => {
        const seen: unknown[] = [];
        const sub = s.events(0).subscribe((e) => {
          seen.push({ type: e.type, ...(e.type === 'turnState.changed' ? { from: e.from, to: e.to } : {}) });
          if (e.type === 'turn.settled') {
            queueMicrotask(() => sub.unsubscribe());
            resolve(seen);
          }
        });
      });
      const snap = await s.snapshot();
      await rt.close();
      return { out: { finalizedBy: out.finalizedBy, parts: out.parts }, events, state: snap.state, lastSeq: snap.lastSeq };
    };
    let inspected = 0;
    const compiled = await turnOf();
    const actor = await turnOf(() => inspected++);
    expect(inspected).toBeGreaterThan(0);
    expect(compiled.out.finalizedBy).toBe('complete');
    expect(compiled.events).toContainEqual({ type: 'turnState.changed', from: 'awaiting', to: 'complete' });
    expect(compiled.state).toBe('idle');
    expect(compiled).toEqual(actor);
  });
});

function p0() {
  return createActor(machine, { input: MACHINE_INPUT }).getPersistedSnapshot() as any;
}
