/**
 * The machines on their own: the session machine generated from the TurnStateRegistry (a state
 * node per registered state, behaviour per metadata) and the standalone actor machine's budgets.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createActorMachine, DEFAULT_LOOP_LIMITS, type ActorLoopEvent } from '../../src/machines/actor.machine.js';
import { createSessionMachine, upgradeSessionSnapshot } from '../../src/machines/session.machine.js';
import { createRegistries } from '../../src/create-registries.js';
import { registerConsumerStates } from './graph-fixtures.js';

function registriesWithConsumers() {
  const r = createRegistries();
  registerConsumerStates(r);
  return r;
}

function start(machine: ReturnType<typeof createSessionMachine>, input: Record<string, unknown> = {}) {
  const a = createActor(machine, { input: { entryActor: 'a', ...input } as any });
  a.start();
  return a;
}

const turnOf = (v: unknown) => {
  if (typeof v === 'string') return v;
  const t = (v as { turn: string | Record<string, string> }).turn;
  return typeof t === 'string' ? t : `awaiting.${Object.values(t)[0]}`;
};

describe('createSessionMachine(registries.turnStates)', () => {
  it('machine:session:node-per-state — every registered turn state, consumer ones included, is a state node under turn', () => {
    const r = registriesWithConsumers();
    const m = createSessionMachine(r.turnStates);
    const nodes = Object.keys(m.root.states.turn!.states);
    expect(nodes.sort()).toEqual([...r.turnStates.ids()].sort());
    expect(Object.keys(m.root.states).sort()).toEqual(['idle', 'turn']);
  });

  it('machine:session:behaviour-per-metadata — terminal, envelope, hold and hand-off nodes follow their metadata', () => {
    const r = registriesWithConsumers();
    const m = createSessionMachine(r.turnStates);
    const turn = m.root.states.turn!.states;
    for (const def of r.turnStates.list()) {
      const node = turn[def.id]!;
      const events = node.ownEvents;
      if (def.meta.isTerminal) {
        expect(node.tags, def.id).toContain('terminal');
        expect(node.tags.includes('emitsEnvelope'), `${def.id} emitsEnvelope tag`).toBe(def.meta.emitsEnvelope);
        expect(events).toEqual(['SETTLE']);
      } else if (def.meta.handsOff) {
        expect(node.tags).toContain('handsOff');
        expect(node.always?.length).toBe(2);
      } else if (def.meta.holdsActor) {
        expect(node.tags).toContain('holdsActor');
        // The state pending calls hold a turn in also resumes when they are all answered; no other does.
        expect(events.sort()).toEqual(def.id === 'suspended' ? ['ANSWERED', 'FAIL', 'RESUME'] : ['FAIL', 'RESUME']);
      } else {
        expect(node.tags).toContain('working');
        expect(Object.keys(node.states).sort()).toEqual(['calling', 'dispatching', 'ready']);
      }
    }
  });

  it('machine:session:config-json-safe — the config Stately imports has no inline functions in guards or actions', () => {
    const m = createSessionMachine(registriesWithConsumers().turnStates);
    const fns: string[] = [];
    const walk = (x: unknown, path: string) => {
      if (typeof x === 'function') fns.push(path);
      else if (Array.isArray(x)) x.forEach((v, i) => walk(v, `${path}[${i}]`));
      else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) walk(v, `${path}.${k}`);
    };
    walk(m.config.states, 'states');
    expect(fns).toEqual([]);
    expect(() => JSON.stringify(m.config.states)).not.toThrow();
  });

  it('machine:session:consumer-terminal — a consumer terminal state settles back to idle and is recorded as lastSettled', () => {
    const a = start(createSessionMachine(registriesWithConsumers().turnStates));
    a.send({ type: 'START', turnId: 't1' });
    expect(turnOf(a.getSnapshot().value)).toBe('awaiting.ready');
    a.send({ type: 'CALL' });
    a.send({ type: 'RESPOND', to: 'escalated' });
    expect(turnOf(a.getSnapshot().value)).toBe('escalated');
    expect(a.getSnapshot().hasTag('terminal')).toBe(true);
    expect(a.getSnapshot().hasTag('emitsEnvelope')).toBe(false);
    a.send({ type: 'SETTLE' });
    expect(a.getSnapshot().value).toBe('idle');
    expect(a.getSnapshot().context.lastSettled).toBe('escalated');
    expect(a.getSnapshot().context.turnId).toBeNull();
  });

  it('machine:session:consumer-hold — a consumer hold waits for its own resumeOn; others are ignored', () => {
    const a = start(createSessionMachine(registriesWithConsumers().turnStates));
    a.send({ type: 'START', turnId: 't1' });
    a.send({ type: 'CALL' });
    a.send({ type: 'RESPOND', to: 'on-hold' });
    expect(turnOf(a.getSnapshot().value)).toBe('on-hold');
    a.send({ type: 'RESUME', resumeOn: 'approval-response' });
    a.send({ type: 'SETTLE' });
    a.send({ type: 'CALL' });
    expect(turnOf(a.getSnapshot().value)).toBe('on-hold');
    a.send({ type: 'RESUME', resumeOn: 'human' });
    expect(turnOf(a.getSnapshot().value)).toBe('awaiting.ready');
  });

  it('machine:session:handoff — passed and a consumer hand-off state switch the acting actor and count against the budget', () => {
    const a = start(createSessionMachine(registriesWithConsumers().turnStates), { maxHandoffs: 2 });
    a.send({ type: 'START', turnId: 't1' });
    expect(a.getSnapshot().context.actor).toBe('a');
    a.send({ type: 'CALL' });
    a.send({ type: 'RESPOND', to: 'passed', passTo: 'b' });
    expect(turnOf(a.getSnapshot().value)).toBe('awaiting.ready');
    expect(a.getSnapshot().context).toMatchObject({ actor: 'b', handoffs: 1, passTo: null });
    a.send({ type: 'CALL' });
    a.send({ type: 'RESPOND', to: 'transferred', passTo: 'c' });
    expect(a.getSnapshot().context).toMatchObject({ actor: 'c', handoffs: 2 });
    a.send({ type: 'CALL' });
    a.send({ type: 'RESPOND', to: 'passed', passTo: 'a' });
    expect(turnOf(a.getSnapshot().value)).toBe('error');
    expect(a.getSnapshot().context.error).toEqual({ code: 'turn.handoff_budget', message: 'too many hand-offs in one turn' });
    // The next turn starts with the entry actor and a fresh budget.
    a.send({ type: 'SETTLE' });
    a.send({ type: 'START', turnId: 't2' });
    expect(a.getSnapshot().context).toMatchObject({ actor: 'a', handoffs: 0, error: null, modelCalls: 0 });
  });

  it('machine:session:passed-without-passTo — a passed RESPOND without passTo goes to error, never to awaiting with no actor', () => {
    const a = start(createSessionMachine(registriesWithConsumers().turnStates));
    a.send({ type: 'START', turnId: 't1' });
    a.send({ type: 'CALL' });
    a.send({ type: 'RESPOND', to: 'passed' });
    expect(turnOf(a.getSnapshot().value)).toBe('error');
  });

  it('machine:session:stale-events-dropped — events that do not belong to the current state change nothing', () => {
    const a = start(createSessionMachine(registriesWithConsumers().turnStates));
    const same = (ev: any) => {
      const before = a.getSnapshot();
      a.send(ev);
      const after = a.getSnapshot();
      expect(after.value, JSON.stringify(ev)).toEqual(before.value);
      expect(after.context, JSON.stringify(ev)).toEqual(before.context);
    };
    for (const ev of [{ type: 'CALL' }, { type: 'SETTLE' }, { type: 'RESPOND', to: 'complete' }, { type: 'RESUME', resumeOn: 'human' }, { type: 'TOOLS_DONE' }]) same(ev);
    a.send({ type: 'START', turnId: 't1' });
    for (const ev of [{ type: 'START', turnId: 't2' }, { type: 'MODEL_DONE', next: 'call' }, { type: 'TOOLS_DONE' }, { type: 'SETTLE' }]) same(ev);
    a.send({ type: 'CALL' });
    for (const ev of [{ type: 'CALL' }, { type: 'TOOLS_DONE' }, { type: 'RESUME', resumeOn: 'approval-response' }, { type: 'RESPOND', to: 'no-such-state' }]) same(ev);
    a.send({ type: 'RESPOND', to: 'complete' });
    for (const ev of [{ type: 'CALL' }, { type: 'RESPOND', to: 'error' }, { type: 'FAIL', code: 'x', message: 'y' }, { type: 'START', turnId: 't3' }]) same(ev);
  });

  it('machine:session:regenerated — a machine built after a registration has the new node; one built before does not', () => {
    const r = createRegistries();
    const before = createSessionMachine(r.turnStates);
    r.turnStates.register({ id: 'paused', meta: { description: 'Paused.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'unpause' } });
    const after = createSessionMachine(r.turnStates);
    expect(Object.keys(before.root.states.turn!.states)).not.toContain('paused');
    expect(Object.keys(after.root.states.turn!.states)).toContain('paused');
  });

  it('machine:session:persisted-small — the persisted snapshot holds control state only and restores', () => {
    const m = createSessionMachine(registriesWithConsumers().turnStates);
    const a = start(m);
    a.send({ type: 'START', turnId: 't1' });
    a.send({ type: 'CALL' });
    a.send({ type: 'MODEL_DONE', next: 'dispatch' });
    const persisted = a.getPersistedSnapshot();
    expect(JSON.stringify(persisted).length).toBeLessThan(1024);
    const b = createActor(m, { input: { entryActor: 'a' }, snapshot: persisted as any });
    b.start();
    expect(turnOf(b.getSnapshot().value)).toBe('awaiting.dispatching');
    b.send({ type: 'HOLD', to: 'suspended' });
    expect(turnOf(b.getSnapshot().value)).toBe('suspended');
  });

  it('machine:session:halt — "where the current turn rests (held or ending); null while it works": kept by the machine, and given by upgradeSessionSnapshot to a snapshot from before it was kept', () => {
    const r = registriesWithConsumers();
    const m = createSessionMachine(r.turnStates);
    const a = start(m);
    a.send({ type: 'START', turnId: 't2' });
    expect(a.getSnapshot().context.halt).toBeNull();
    a.send({ type: 'HOLD', to: 'suspended' });
    expect(a.getSnapshot().context.halt).toEqual({ type: 'hold', state: 'suspended' });
    a.send({ type: 'RESUME', resumeOn: 'approval-response' });
    expect(turnOf(a.getSnapshot().value)).toBe('awaiting.ready');
    expect(a.getSnapshot().context.halt).toBeNull();
    a.send({ type: 'RESPOND', to: 'complete' });
    expect(a.getSnapshot().context.halt).toEqual({ type: 'settle', state: 'complete', emitsEnvelope: true });

    // Without it a resting turn would repeat nothing on RECOVER (effects:recover checks the rest).
    const written = a.getPersistedSnapshot() as unknown as { value: unknown; context: Record<string, unknown> };
    const { halt: _halt, ...context } = written.context;
    const older = { ...written, context };
    const repeated: unknown[] = [];
    const raw = createActor(m, { input: { entryActor: 'a' }, snapshot: older as any });
    raw.on('*', (e) => repeated.push(e));
    raw.start();
    raw.send({ type: 'RECOVER' });
    expect(repeated).toEqual([]);
    expect((upgradeSessionSnapshot(m, older) as typeof written).context.halt).toEqual({ type: 'settle', state: 'complete', emitsEnvelope: true });
    // A snapshot written now is left as it is; an older one of a working turn rests nowhere.
    expect(upgradeSessionSnapshot(m, written)).toBe(written);
    expect((upgradeSessionSnapshot(m, { ...older, value: { turn: { awaiting: 'ready' } } }) as typeof written).context.halt).toBeNull();
  });

  it('machine:session:settle-failed — "the machine emits its decisions": a turn ending in error settles with failed (the host adds the error part and the error stop from it, not from the state\'s name); a snapshot resting in error written before the flag gets it on upgrade, and RECOVER repeats it', () => {
    const m = createSessionMachine(registriesWithConsumers().turnStates);
    const a = start(m);
    const emitted: unknown[] = [];
    a.on('*', (e) => emitted.push(e));
    a.send({ type: 'START', turnId: 't1' });
    a.send({ type: 'FAIL', code: 'tool.failed', message: 'boom' });
    expect(turnOf(a.getSnapshot().value)).toBe('error');
    expect(emitted.filter((e) => (e as { type: string }).type === 'settle')).toEqual([{ type: 'settle', state: 'error', emitsEnvelope: false, failed: true }]);
    // Any other ending is not a failure.
    const b = start(m);
    b.send({ type: 'START', turnId: 't2' });
    b.send({ type: 'RESPOND', to: 'complete' });
    expect(b.getSnapshot().context.halt).toEqual({ type: 'settle', state: 'complete', emitsEnvelope: true });

    const written = a.getPersistedSnapshot() as unknown as { value: unknown; context: Record<string, unknown> };
    const older = { ...written, context: { ...written.context, halt: { type: 'settle', state: 'error', emitsEnvelope: false } } };
    const upgraded = upgradeSessionSnapshot(m, older) as typeof written;
    expect(upgraded.context.halt).toEqual({ type: 'settle', state: 'error', emitsEnvelope: false, failed: true });
    expect(upgradeSessionSnapshot(m, written)).toBe(written);
    const repeated: unknown[] = [];
    const restored = createActor(m, { input: { entryActor: 'a' }, snapshot: upgraded as any });
    restored.on('*', (e) => repeated.push(e));
    restored.start();
    restored.send({ type: 'RECOVER' });
    expect(repeated).toEqual([{ type: 'settle', state: 'error', emitsEnvelope: false, failed: true }]);
  });
});

describe('createActorMachine (standalone loop)', () => {
  const run = (limits: Partial<typeof DEFAULT_LOOP_LIMITS>, events: ActorLoopEvent[]) => {
    const a = createActor(createActorMachine(limits));
    a.start();
    for (const e of events) a.send(e);
    return a.getSnapshot();
  };

  it('machine:actor:model-call-budget — the call after maxModelCalls exhausts the loop', () => {
    const s = run({ maxModelCalls: 2 }, [
      { type: 'CALL' },
      { type: 'MODEL_DONE', next: 'call' },
      { type: 'CALL' },
      { type: 'MODEL_DONE', next: 'call' },
      { type: 'CALL' },
    ]);
    expect(s.value).toBe('exhausted');
    expect(s.status).toBe('done');
    expect(s.context).toMatchObject({ modelCalls: 2, error: { code: 'turn.model_call_budget' } });
  });

  it('machine:actor:retry-budget — maxRespondRetries rejections are retried, the next one exhausts', () => {
    const ev: ActorLoopEvent[] = [];
    for (let i = 0; i < 3; i++) ev.push({ type: 'CALL' }, { type: 'MODEL_DONE', next: 'rejected' });
    const s = run({ maxRespondRetries: 2 }, ev);
    expect(s.value).toBe('exhausted');
    expect(s.context).toMatchObject({ rejections: 2, error: { code: 'turn.respond_retries' } });
    const ok = run({ maxRespondRetries: 2 }, ev.slice(0, 4));
    expect(ok.value).toBe('ready');
  });

  it('machine:actor:call-after-tools — a CALL right after dispatching counts against the same budget', () => {
    const s = run({ maxModelCalls: 1 }, [{ type: 'CALL' }, { type: 'MODEL_DONE', next: 'dispatch' }, { type: 'CALL' }]);
    expect(s.value).toBe('exhausted');
    expect(s.context).toMatchObject({ modelCalls: 1, error: { code: 'turn.model_call_budget' } });
  });

  it('machine:actor:nudge-budget — free text is nudged maxNudges times, then exhausts', () => {
    const ev: ActorLoopEvent[] = [];
    for (let i = 0; i < 2; i++) ev.push({ type: 'CALL' }, { type: 'MODEL_DONE', next: 'free-text' });
    const s = run({ maxNudges: 1 }, ev);
    expect(s.value).toBe('exhausted');
    expect(s.context).toMatchObject({ nudges: 1, error: { code: 'turn.free_text' } });
  });

  it('machine:actor:defaults — the defaults are the documented ones', () => {
    const s = run({}, []);
    expect(s.context).toMatchObject({ maxModelCalls: 16, maxRespondRetries: 2, maxNudges: 2, modelCalls: 0 });
    expect(DEFAULT_LOOP_LIMITS).toEqual({ maxModelCalls: 16, maxRespondRetries: 2, maxNudges: 2 });
  });

  it('machine:actor:budgets-property — under any event sequence the counters never pass their bounds and exhaustion is final', () => {
    const evArb = fc.constantFrom<ActorLoopEvent>(
      { type: 'CALL' },
      { type: 'MODEL_DONE', next: 'dispatch' },
      { type: 'MODEL_DONE', next: 'call' },
      { type: 'MODEL_DONE', next: 'rejected' },
      { type: 'MODEL_DONE', next: 'free-text' },
      { type: 'INTERRUPTED' },
      { type: 'TOOLS_DONE' },
    );
    fc.assert(
      fc.property(
        fc.record({ maxModelCalls: fc.integer({ min: 1, max: 5 }), maxRespondRetries: fc.integer({ min: 0, max: 3 }), maxNudges: fc.integer({ min: 0, max: 3 }) }),
        fc.array(evArb, { maxLength: 60 }),
        (limits, events) => {
          const a = createActor(createActorMachine(limits));
          a.start();
          let calls = 0;
          let exhaustedAt = -1;
          for (const [i, e] of events.entries()) {
            const before = a.getSnapshot();
            const from = before.value as string;
            a.send(e);
            const after = a.getSnapshot();
            if ((from === 'ready' || from === 'dispatching') && e.type === 'CALL' && (after.value as string) === 'calling') calls++;
            const c = after.context;
            expect(c.modelCalls).toBeLessThanOrEqual(limits.maxModelCalls);
            expect(c.rejections).toBeLessThanOrEqual(limits.maxRespondRetries);
            expect(c.nudges).toBeLessThanOrEqual(limits.maxNudges);
            if ((after.value as string) === 'exhausted' && exhaustedAt < 0) {
              exhaustedAt = i;
              expect(c.error).not.toBeNull();
            }
            if (exhaustedAt >= 0 && i > exhaustedAt) expect(after).toBe(before);
          }
          expect(a.getSnapshot().context.modelCalls).toBe(calls);
        },
      ),
      { numRuns: 300 },
    );
  });
});
