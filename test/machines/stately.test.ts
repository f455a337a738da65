import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { and, assign, createActor, createMachine, setup, type AnyStateMachine } from 'xstate';
import {
  EXAMPLE_CONSUMER_STATES,
  REPRESENTATIVE_SESSION_INPUT,
  ROOT_URL,
  exportMachines,
  generateFiles,
  initialContext,
  toJson,
  toStatelyConfig,
  type ExportedMachine,
} from '../../scripts/export-machines.js';
import { TurnstateError } from '../../src/errors.js';
import { createActorMachine } from '../../src/machines/actor.machine.js';
import { createSessionMachine } from '../../src/machines/session.machine.js';
import { createRegistries } from '../../src/create-registries.js';

const exported = exportMachines();
const byFile = (f: string): ExportedMachine => {
  const m = exported.find((x) => x.file === `docs/machines/${f}`);
  if (!m) throw new Error(`no export ${f}`);
  return m;
};
const committed = (file: string) => readFile(new URL(file, ROOT_URL), 'utf8');

/** Every function found anywhere in a value, by path. */
function functionsIn(value: unknown, path = '$'): string[] {
  if (typeof value === 'function') return [path];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => functionsIn(v, `${path}.${k}`));
}

/** The imported machine: the committed JSON plus the original's named implementations. */
function importMachine(json: string, original: AnyStateMachine): AnyStateMachine {
  return createMachine(JSON.parse(json)).provide(original.implementations as any) as unknown as AnyStateMachine;
}

type Ev = { type: string; [k: string]: unknown };

function observe(machine: AnyStateMachine, input: unknown) {
  const actor = createActor(machine, input === undefined ? {} : { input });
  actor.start();
  const view = () => {
    const s = actor.getSnapshot();
    return { value: s.value, context: s.context, status: s.status, tags: [...s.tags].sort() };
  };
  return { actor, view };
}

/** Replays `events` on both machines, comparing value, context, status and tags after every step. */
function replayBoth(original: AnyStateMachine, input: unknown, imported: AnyStateMachine, events: Ev[]) {
  const a = observe(original, input);
  const b = observe(imported, undefined);
  expect(b.view()).toEqual(a.view());
  for (const [i, ev] of events.entries()) {
    if (a.view().status === 'done') break;
    a.actor.send(ev as any);
    b.actor.send(ev as any);
    const va = a.view();
    expect(b.view(), `after event ${i} ${JSON.stringify(ev)}`).toEqual(va);
  }
  const last = a.view();
  a.actor.stop();
  b.actor.stop();
  return last;
}

const loopStep = (next: string): Ev[] => [{ type: 'CALL' }, { type: 'MODEL_DONE', next }];

describe('machines: Stately export', () => {
  it('machines:stately:no-drift — the committed docs/machines files equal a fresh export', async () => {
    const files = await generateFiles();
    expect(files.map((f) => f.file).sort()).toEqual([
      'docs/machines/README.md',
      'docs/machines/actor.machine.json',
      'docs/machines/session.consumer-example.machine.json',
      'docs/machines/session.machine.json',
    ]);
    for (const f of files) {
      expect(await committed(f.file), `${f.file} is out of date: run npm run machines:export`).toBe(f.content);
    }
  });

  it('machines:stately:json-safe — each export is pure JSON: no functions, and stringify/parse is lossless', () => {
    for (const m of exported) {
      // The only function in a source config is the session machine's context factory.
      expect(functionsIn(m.machine.config), `${m.file} source config`).toEqual(m.config.id === 'session' ? ['$.context'] : []);
      expect(functionsIn(m.config), m.file).toEqual([]);
      expect(JSON.parse(m.json)).toEqual(m.config);
      expect(m.json.endsWith('\n')).toBe(true);
    }
    // The session machine's context factory is replaced by the context of the representative input.
    const session = byFile('session.machine.json');
    expect(typeof session.machine.config.context).toBe('function');
    expect(session.config.context).toEqual(initialContext(session.machine, REPRESENTATIVE_SESSION_INPUT));
    expect((session.config.context as { entryActor: string }).entryActor).toBe('assistant');
  });

  it('machines:stately:deterministic — the export is byte-identical across runs and independent of key insertion order', () => {
    expect(exportMachines().map((m) => m.json)).toEqual(exported.map((m) => m.json));
    const impl = { guards: { ok: () => true }, actions: { go: () => {} } };
    const one = setup(impl).createMachine({
      id: 'm',
      initial: 'a',
      context: { z: 1, a: { y: 2, b: 3 } },
      states: { a: { on: { X: { target: 'b', guard: 'ok', actions: [{ type: 'go', params: { q: 1, p: 2 } }] } } }, b: {} },
    });
    const two = setup(impl).createMachine({
      states: { a: { on: { X: { actions: [{ params: { p: 2, q: 1 }, type: 'go' }], guard: 'ok', target: 'b' } } }, b: {} },
      context: { a: { b: 3, y: 2 }, z: 1 },
      initial: 'a',
      id: 'm',
    });
    expect(toJson(toStatelyConfig(one))).toBe(toJson(toStatelyConfig(two)));
    // Node order is the machine's document order, not alphabetical.
    expect(Object.keys((byFile('session.machine.json').config.states as any).turn.states)).toEqual(createRegistries().turnStates.ids());
  });

  it('machines:stately:fails-loudly — a function, combined guard, context factory, class instance or unknown name is an error naming the path', () => {
    const expectNotSafe = (fn: () => unknown, path: string) => {
      let err: unknown;
      try {
        fn();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TurnstateError);
      expect((err as TurnstateError).code).toBe('machines.not_json_safe');
      expect((err as TurnstateError).message).toContain(path);
    };
    const inlineGuard = createMachine({ id: 'g', initial: 'a', states: { a: { on: { X: { guard: () => true, target: 'b' } } }, b: {} } });
    expectNotSafe(() => toStatelyConfig(inlineGuard), 'config.states.a.on.X.guard');
    const inlineAction = createMachine({ id: 'i', initial: 'a', context: { n: 0 }, states: { a: { entry: assign({ n: 1 }) } } });
    expectNotSafe(() => toStatelyConfig(inlineAction), 'config.states.a.entry');
    const combined = setup({ guards: { p: () => true, q: () => true } }).createMachine({
      id: 'c',
      initial: 'a',
      states: { a: { on: { X: { guard: and(['p', 'q']), target: 'b' } } }, b: {} },
    });
    expectNotSafe(() => toStatelyConfig(combined), 'config.states.a.on.X.guard');
    expectNotSafe(() => toStatelyConfig(byFile('session.machine.json').machine), 'config.context');
    const dated = createMachine({ id: 'd', context: { at: new Date(0) }, initial: 'a', states: { a: {} } });
    expectNotSafe(() => toStatelyConfig(dated), 'config.context.at');
    const unnamed = createMachine({ id: 'u', initial: 'a', states: { a: { on: { X: { guard: 'nowhere', target: 'b' } } }, b: {} } });
    expectNotSafe(() => toStatelyConfig(unnamed), 'config.states.a.on.X[0].guard');
    const noAction = createMachine({ id: 'n', initial: 'a', states: { a: { entry: [{ type: 'missing' }] } } });
    expectNotSafe(() => toStatelyConfig(noAction), 'config.states.a.entry[0]');
  });

  it('turn-states:registry:open — every registered turn state, canonical or consumer, is a node of the export (spec 000 "Turn states are an open registry")', () => {
    for (const [file, consumer] of [
      ['session.machine.json', false],
      ['session.consumer-example.machine.json', true],
    ] as const) {
      const registries = createRegistries();
      if (consumer) for (const s of EXAMPLE_CONSUMER_STATES) registries.turnStates.register({ id: s.id, meta: { ...s.meta } });
      const json = JSON.parse(byFile(file).json);
      const nodes = json.states.turn.states as Record<string, { tags: string[]; on?: Record<string, any> }>;
      expect(Object.keys(nodes)).toEqual([...registries.turnStates.ids()]);
      const imported = createMachine(json);
      for (const def of registries.turnStates.list()) {
        const node = nodes[def.id]!;
        expect(imported.getStateNodeById(`session.turn.${def.id}`).key).toBe(def.id);
        const kind = def.meta.isTerminal ? 'terminal' : def.meta.holdsActor ? 'holdsActor' : def.meta.handsOff ? 'handsOff' : 'working';
        expect(node.tags[0], def.id).toBe(kind);
        if (def.meta.holdsActor) expect(node.on?.RESUME.guard.params.resumeOn).toBe(def.meta.resumeOn);
        // `awaiting` can respond into every registered state.
        expect(nodes.awaiting!.on!.RESPOND.some((t: any) => t.guard.params.state === def.id)).toBe(true);
      }
      if (consumer) {
        expect(nodes.escalated!.tags).toEqual(['terminal']);
        expect(nodes['awaiting-review']!.on!.RESUME.guard.params.resumeOn).toBe('review');
      }
    }
    // A state registered at run time shows up in a fresh export too.
    const registries = createRegistries();
    registries.turnStates.register({ id: 'handed-to-human', meta: { description: 'A person answers from here.', isTerminal: true, emitsEnvelope: true, holdsActor: false } });
    const machine = createSessionMachine(registries.turnStates);
    const cfg = toStatelyConfig(machine, { context: initialContext(machine, REPRESENTATIVE_SESSION_INPUT) }) as any;
    expect(cfg.states.turn.states['handed-to-human'].tags).toEqual(['terminal', 'emitsEnvelope']);
  });
});

describe('machines: the exported JSON round-trips through createMachine(JSON.parse(json))', () => {
  const session = byFile('session.machine.json');
  const example = byFile('session.consumer-example.machine.json');
  const actorExport = byFile('actor.machine.json');
  const importedSession = importMachine(session.json, session.machine);
  const importedExample = importMachine(example.json, example.machine);
  const importedActor = importMachine(actorExport.json, actorExport.machine);
  const input = REPRESENTATIVE_SESSION_INPUT;

  it('machines:stately:round-trip:happy — tools, another call, respond awaiting then complete, settle', () => {
    const last = replayBoth(session.machine, input, importedSession, [
      { type: 'START', turnId: 't1' },
      ...loopStep('dispatch'),
      { type: 'TOOLS_DONE' },
      ...loopStep('call'),
      { type: 'RESPOND', to: 'awaiting' },
      ...loopStep('call'),
      { type: 'RESPOND', to: 'complete' },
      { type: 'SETTLE' },
    ]);
    expect(last.value).toBe('idle');
    expect(last.context).toMatchObject({ lastSettled: 'complete', modelCalls: 3, turnId: null });
  });

  it('machines:stately:round-trip:hold — approval hold ignores the wrong resume kind, resumes, clarifies', () => {
    const last = replayBoth(session.machine, input, importedSession, [
      { type: 'START', turnId: 't1' },
      ...loopStep('dispatch'),
      { type: 'HOLD', to: 'suspended' },
      { type: 'RESUME', resumeOn: 'peer-envelope' },
      { type: 'RESUME', resumeOn: 'approval-response' },
      ...loopStep('rejected'),
      ...loopStep('call'),
      { type: 'RESPOND', to: 'clarifying' },
      { type: 'SETTLE' },
      { type: 'START', turnId: 't2' },
      { type: 'RESPOND', to: 'delegated' },
      { type: 'FAIL', code: 'peer.down', message: 'the peer is down' },
    ]);
    expect(last.value).toEqual({ turn: 'error' });
    expect(last.context).toMatchObject({ lastSettled: 'clarifying', error: { code: 'peer.down' } });
  });

  it('machines:stately:round-trip:budgets — hand-off, model-call and retry budgets end in error alike', () => {
    const handoffs = replayBoth(session.machine, input, importedSession, [
      { type: 'START', turnId: 't1' },
      ...Array.from({ length: 5 }, (_, i) => ({ type: 'RESPOND', to: 'passed', passTo: `actor-${i}` })),
    ]);
    expect(handoffs.value).toEqual({ turn: 'error' });
    expect(handoffs.context).toMatchObject({ handoffs: 4, error: { code: 'turn.handoff_budget' } });

    const calls = replayBoth(session.machine, input, importedSession, [
      { type: 'START', turnId: 't1' },
      ...Array.from({ length: 17 }, () => loopStep('call')).flat(),
    ]);
    expect(calls.context).toMatchObject({ error: { code: 'turn.model_call_budget' } });

    const retries = replayBoth(session.machine, input, importedSession, [
      { type: 'START', turnId: 't1' },
      ...Array.from({ length: 3 }, () => loopStep('rejected')).flat(),
    ]);
    expect(retries.context).toMatchObject({ error: { code: 'turn.respond_retries' }, rejections: 2 });
  });

  it('machines:stately:round-trip:consumer — a consumer holding state resumes on its own kind; a consumer terminal state settles', () => {
    const last = replayBoth(example.machine, input, importedExample, [
      { type: 'START', turnId: 't1' },
      { type: 'RESPOND', to: 'awaiting-review' },
      { type: 'RESUME', resumeOn: 'approval-response' },
      { type: 'RESUME', resumeOn: 'review' },
      { type: 'HOLD', to: 'awaiting-review' },
      { type: 'RESUME', resumeOn: 'review' },
      ...loopStep('call'),
      { type: 'RESPOND', to: 'escalated' },
      { type: 'SETTLE' },
    ]);
    expect(last.value).toBe('idle');
    expect(last.context).toMatchObject({ lastSettled: 'escalated' });
  });

  it('machines:stately:round-trip:actor — the standalone loop exhausts its budgets alike', () => {
    const last = replayBoth(actorExport.machine, undefined, importedActor, [
      ...loopStep('dispatch'),
      { type: 'TOOLS_DONE' },
      ...loopStep('free-text'),
      ...loopStep('free-text'),
      { type: 'CALL' },
      { type: 'INTERRUPTED' },
      ...loopStep('free-text'),
    ]);
    expect(last.value).toBe('exhausted');
    expect(last.status).toBe('done');
    expect(last.context).toMatchObject({ nudges: 2, error: { code: 'turn.free_text' } });
  });

  const turnStates = [...createRegistries().turnStates.ids(), ...EXAMPLE_CONSUMER_STATES.map((s) => s.id), 'nowhere'];
  const eventArb: fc.Arbitrary<Ev> = fc.oneof(
    fc.record({ type: fc.constant('START'), turnId: fc.constantFrom('t1', 't2') }),
    fc.constant({ type: 'CALL' }),
    fc.record({ type: fc.constant('MODEL_DONE'), next: fc.constantFrom('dispatch', 'call', 'rejected', 'free-text', 'other') }),
    fc.constant({ type: 'INTERRUPTED' }),
    fc.constant({ type: 'TOOLS_DONE' }),
    fc.record({ type: fc.constant('RESPOND'), to: fc.constantFrom(...turnStates) }),
    fc.record({ type: fc.constant('RESPOND'), to: fc.constant('passed'), passTo: fc.constantFrom('a', 'b') }),
    fc.record({ type: fc.constant('HOLD'), to: fc.constantFrom(...turnStates) }),
    fc.record({ type: fc.constant('RESUME'), resumeOn: fc.constantFrom('approval-response', 'peer-envelope', 'review', 'other') }),
    fc.record({ type: fc.constant('FAIL'), code: fc.constant('x.fail'), message: fc.constant('failed') }),
    fc.constant({ type: 'SETTLE' }),
    fc.constant({ type: 'UNKNOWN' }),
  );

  it('machines:stately:round-trip:property — on random event sequences the imported machines match the originals step by step', () => {
    const reached = new Set<string>();
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 60 }), (events) => {
        for (const [orig, imported] of [
          [session.machine, importedSession],
          [example.machine, importedExample],
        ] as const) {
          const last = replayBoth(orig, input, imported, [{ type: 'START', turnId: 't0' }, ...events]);
          reached.add(JSON.stringify(last.value));
        }
        replayBoth(actorExport.machine, undefined, importedActor, events);
      }),
      { numRuns: 150 },
    );
    // The sequences reach more than the start: several turn states, idle again.
    expect(reached.size).toBeGreaterThan(4);
    expect(reached.has('"idle"')).toBe(true);
  });

  it('machines:stately:round-trip:actor-machine — createActorMachine limits become the exported context', () => {
    const m = createActorMachine({ maxModelCalls: 3 });
    expect((toStatelyConfig(m).context as { maxModelCalls: number }).maxModelCalls).toBe(3);
    expect(actorExport.config.context).toEqual(createActor(actorExport.machine).getSnapshot().context);
  });
});
