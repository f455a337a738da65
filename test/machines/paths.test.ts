/**
 * Transition tests driven by paths generated from the session machine (DESIGN "Testing"):
 * every shortest path to every state, and a sample of the simple paths of one turn, becomes a
 * scripted run through createRuntime, with fast-check payloads. The runtime must walk the same
 * turn states the machine path names, and keep the session-stream invariants after every step.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { firstValueFrom, take, toArray } from 'rxjs';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import type { SessionHandle } from '../../src/api.js';
import { createSessionMachine } from '../../src/machines/session.machine.js';
import type { ModelScript, ScriptBlock, ScriptResponse } from '../../src/models/script.js';
import { createRegistries } from '../../src/create-registries.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { MailboxEntry, SessionEvent } from '../../src/types.js';
import { LIMITS, MACHINE_INPUT, labelOf, loopKey, registerConsumerStates, shortKey, subOf } from './graph-fixtures.js';
import { Recorder, addTool, checkHistory, checkStream, harness, part, respond, type Harness } from '../runtime/helpers.js';

/* ------------------------------------------------------------------ the registry under test */

const registries = createRegistries();
registerConsumerStates(registries);
const machine = createSessionMachine(registries.turnStates);

type Snap = ReturnType<typeof machine.transition>;
type Ev = Parameters<typeof machine.transition>[1];

/** The events the host can send in each state (what the runtime can actually produce). */
function eventsFor(s: Snap): Ev[] {
  const v = s.value;
  if (v === 'idle') return [{ type: 'START', turnId: 'turn' }];
  const sub = subOf(v);
  if (sub === 'ready') return [{ type: 'CALL' }];
  if (sub === 'calling') {
    const other = s.context.actor === 'a' ? 'b' : 'a';
    return [
      ...(['dispatch', 'call', 'rejected', 'free-text'] as const).map((next) => ({ type: 'MODEL_DONE', next }) as Ev),
      ...registries.turnStates
        .list()
        // The model never declares `suspended` (the runtime enters it) nor the state it is in.
        .filter((d) => d.id !== 'suspended' && d.id !== 'awaiting')
        .map((d) => ({ type: 'RESPOND', to: d.id, ...(d.meta.handsOff ? { passTo: other } : {}) }) as Ev),
      { type: 'FAIL', code: 'model.overloaded', message: 'overloaded' },
      // A double-texted message under the `interrupt` policy aborts the streaming call.
      { type: 'INTERRUPTED' },
    ];
  }
  // After its tools the host calls the model again (CALL from dispatching) or holds for approval.
  if (sub === 'dispatching') return [{ type: 'CALL' }, { type: 'HOLD', to: 'suspended' }];
  const def = registries.turnStates.get(labelOf(v))!;
  if (def.meta.isTerminal) return [{ type: 'SETTLE' }];
  if (def.meta.holdsActor) return [{ type: 'RESUME', resumeOn: def.meta.resumeOn! }];
  return [];
}

const shortest = getShortestPaths(machine, { input: MACHINE_INPUT, events: eventsFor, serializeState: shortKey as any });
const simple = getSimplePaths(machine, {
  input: MACHINE_INPUT,
  events: eventsFor,
  serializeState: loopKey as any,
  stopWhen: (s) => s.value === 'idle' && s.context.lastSettled !== null,
}).filter((p) => p.steps.filter((st) => st.event.type === 'START').length === 1);
/** Group-commit stores publish a call's deltas when it has ended: too late to interrupt it from a subscriber. */
const simpleNoInterrupt = simple.filter((p) => !p.steps.some((st) => st.event.type === 'INTERRUPTED'));

/* ------------------------------------------------------------------ path -> scripted run */

interface Payload {
  texts: string[];
  qs: string[];
  flags: boolean[];
}
const safeText = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 24 })
  .filter((s) => /\S/.test(s) && !s.includes('$') && !s.startsWith('['));
const payloadArb: fc.Arbitrary<Payload> = fc.record({
  texts: fc.array(safeText, { minLength: 16, maxLength: 16 }),
  qs: fc.array(fc.string({ maxLength: 12 }).filter((s) => !s.includes('$')), { minLength: 8, maxLength: 8 }),
  flags: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
});

type Action =
  | { kind: 'send'; text: string }
  | { kind: 'approve'; approved: boolean; reason: string }
  | { kind: 'peer' }
  | { kind: 'resume'; payload: string };

interface Plan {
  responses: ScriptResponse[];
  actions: Action[];
  /** The acting actor of each model call the path makes. */
  actors: string[];
  /** Turn states the path walks (collapsed), starting at idle. */
  labels: string[];
  /** The hand-offs the path makes (from->to). */
  passes: string[];
  /** The texts double-texted into interrupted calls, in order. */
  interrupts: string[];
  /** Whether the path ends where the runtime stops by itself (idle or a held state). */
  endsStable: boolean;
  finalLabel: string;
}

function plan(steps: readonly { event: Ev; state: Snap }[], p: Payload): Plan {
  let ti = 0;
  let qi = 0;
  let fi = 0;
  const text = () => p.texts[ti++ % p.texts.length]!;
  const q = () => p.qs[qi++ % p.qs.length]!;
  const flag = () => p.flags[fi++ % p.flags.length]!;
  const responses: ScriptResponse[] = [];
  const actions: Action[] = [];
  const actors: string[] = [];
  const labels: string[] = [];
  const passes: string[] = [];
  const interrupts: string[] = [];
  let unseen = 0;
  const push = (l: string) => {
    if (labels.at(-1) !== l) labels.push(l);
  };
  for (let i = 0; i < steps.length; i++) {
    const { event, state } = steps[i]!;
    push(labelOf(state.value));
    switch (event.type) {
      case 'START':
        actions.push({ kind: 'send', text: text() });
        break;
      case 'CALL':
        // A CALL over the model-call budget makes no model call.
        if (subOf(state.value) === 'calling') {
          actors.push(state.context.actor!);
          unseen = 0;
        }
        break;
      case 'SETTLE':
        // A message that interrupted the turn's last call, with no model call after it, is
        // answered in a turn of its own (the fallback response completes it).
        for (; unseen > 0; unseen--) labels.push('awaiting', 'complete', 'idle');
        break;
      case 'MODEL_DONE': {
        if (event.next === 'dispatch') {
          const holds = steps[i + 1]?.event.type === 'HOLD';
          const blocks: ScriptBlock[] = [];
          if (flag()) blocks.push(respond([part('ack', text())], 'awaiting'));
          if (!holds || flag()) blocks.push({ type: 'tool_use', name: 'lookup', input: { q: q() } });
          if (holds) blocks.push({ type: 'tool_use', name: 'gated', input: { q: q() } });
          responses.push({ blocks });
        } else if (event.next === 'call') {
          responses.push({ blocks: [respond([part(flag() ? 'ack' : 'thinking', text())], 'awaiting')] });
        } else if (event.next === 'rejected') {
          responses.push({ blocks: [respond([{ text: text(), metadata: { partType: 'not-registered' } }], 'complete')] });
        } else {
          responses.push({ blocks: [{ type: 'text', text: text() }] });
        }
        break;
      }
      case 'RESPOND': {
        const to = event.to;
        if (event.passTo && labelOf(state.value) === 'awaiting') passes.push(`${steps[i - 1]!.state.context.actor}->${event.passTo}`);
        const parts =
          to === 'complete' || to === 'partial'
            ? [part('response', text()), ...(flag() ? [{ data: { q: q() }, metadata: { partType: 'domain-data' } }] : [])]
            : to === 'clarifying'
              ? [part('clarify', text())]
              : to === 'error'
                ? [part('error', text())]
                : to === 'escalated'
                  ? [part('response', text())]
                  : [part('thinking', text())];
        responses.push({ blocks: [respond(parts, to, event.passTo ? { passTo: event.passTo } : {})] });
        break;
      }
      case 'INTERRUPTED':
        // A long streamed call; the driver sends a message on its first part.delta.
        responses.push({ chunkSize: 4, blocks: [respond([part('thinking', `${text()} ${'.'.repeat(80)}`)], 'awaiting', { id: `toolu_int_${responses.length}` })] });
        interrupts.push(text());
        unseen++;
        break;
      case 'FAIL':
        responses.push({ blocks: [], fail: { code: 'model.overloaded', message: 'overloaded' } });
        break;
      case 'RESUME': {
        const from = labelOf(steps[i - 1]!.state.value);
        if (from === 'suspended') actions.push({ kind: 'approve', approved: flag(), reason: text() });
        else if (from === 'delegated') actions.push({ kind: 'peer' });
        else actions.push({ kind: 'resume', payload: text() });
        break;
      }
      default:
        break;
    }
  }
  const last = steps.at(-1)!.state;
  const finalLabel = labelOf(last.value);
  const def = registries.turnStates.get(finalLabel);
  return { responses, actions, actors, labels, passes, interrupts, endsStable: finalLabel === 'idle' || !!def?.meta.holdsActor, finalLabel };
}

/** The turn states a session walked, from its events (collapsed; `passed` is transient in the machine). */
function walked(events: readonly SessionEvent[]): string[] {
  const out = ['idle'];
  const push = (l: string) => {
    if (!HANDS_OFF.has(l) && out.at(-1) !== l) out.push(l);
  };
  for (const e of events) {
    if (e.type === 'turn.started') push('awaiting');
    else if (e.type === 'turnState.changed') push(e.to);
    else if (e.type === 'turn.settled') push('idle');
  }
  return out;
}

/** Hand-off states are transient in the machine (resolved within the step). */
const HANDS_OFF = new Set(registries.turnStates.list().filter((d) => d.meta.handsOff).map((d) => d.id));
const HOLDING = new Set(registries.turnStates.list().filter((d) => d.meta.holdsActor).map((d) => d.id));

/** Waits until the session settles a turn or stops in a held state after `afterSeq`. */
function quiet(rec: Recorder, afterSeq: number): Promise<SessionEvent> {
  return rec.waitFor((e) => e.seq > afterSeq && (e.type === 'turn.settled' || (e.type === 'turnState.changed' && HOLDING.has(e.to))));
}

function checkMailboxKept(before: MailboxEntry[], after: MailboxEntry[]): void {
  expect(after.length).toBeGreaterThanOrEqual(before.length);
  expect(after.slice(0, before.length)).toEqual(before);
}

/**
 * Runs a plan through createRuntime and checks, after every step: the stream invariants
 * (checkStream), an append-only mailbox, and that a held turn never settles by itself.
 */
function sharedRuntime(store: 'memory' | 'sqlite' = 'memory'): Harness {
  const h = harness({ rules: [] }, { limits: LIMITS, ...(store === 'sqlite' ? { store: createSqliteStore({ path: ':memory:' }) } : {}) });
  registerConsumerStates(h.rt.registries);
  addTool(h.rt.registries, 'lookup', (a) => ({ found: a.q }));
  addTool(h.rt.registries, 'gated', (a) => ({ done: a.q }), { requiresApproval: true });
  h.rt.registries.actors.register({ name: 'a', tools: ['lookup', 'gated'], handoffs: ['b'] });
  h.rt.registries.actors.register({ name: 'b', tools: ['lookup', 'gated'], handoffs: ['a'] });
  return h;
}

async function run(pl: Plan, h: Harness): Promise<void> {
  const { rt, model } = h;
  // The script plays the path's responses in order; beyond the path's end, the turn completes.
  model.setScript({
    rules: pl.responses.map((r, i) => ({ id: `path-${i}`, times: 1, respond: r })),
    fallback: { blocks: [respond([part('response', 'beyond the path')], 'complete')] },
  } satisfies ModelScript);
  // A fresh session per run: nothing carries over but the registries.
  const s: SessionHandle = await rt.createSession({ actor: 'a', tenantId: 'tn', doubleTexting: 'interrupt' });
  const interrupts = [...pl.interrupts];
  const fired = new Set<string>();
  const sent: Promise<unknown>[] = [];
  const rec = new Recorder(s, (e) => {
    if (e.type === 'part.delta' && e.callId.startsWith('toolu_int_') && !fired.has(e.callId)) {
      fired.add(e.callId);
      sent.push(s.send(interrupts.shift()!));
    }
  });
  let mailbox: MailboxEntry[] = [];
  const answered = new Set<string>();

  const afterStep = async () => {
    checkStream(rec.events, rt.registries);
    const now = await s.mailbox();
    checkMailboxKept(mailbox, now);
    mailbox = now;
  };

  for (const a of pl.actions) {
    const from = rec.events.at(-1)?.seq ?? 0;
    if (a.kind === 'send') {
      await s.send(a.text);
    } else if (a.kind === 'approve') {
      const pending = rec.of('approval.requested').filter((r) => !answered.has(r.approvalId));
      expect(pending.length, 'an approval is pending').toBeGreaterThan(0);
      for (const r of pending) {
        answered.add(r.approvalId);
        const res = await s.answerApproval(r.approvalId, { approved: a.approved, ...(a.approved ? {} : { reason: a.reason }) }, { userId: 'u', tenantId: 'tn' }, 'api');
        expect(res.ok).toBe(true);
      }
    } else if (a.kind === 'peer') {
      await s.inject({ kind: 'peer-envelope', envelope: { role: 'agent', parts: [part('response', 'peer says hi')], meta: { sessionId: 'peer', turnId: 'pt', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' } } });
    } else {
      await s.inject({ kind: 'resume', resumeOn: 'human', payload: { reply: a.payload } });
    }
    await quiet(rec, from);
    await afterStep();
  }

  // Every interrupting message joined its turn (no extra turn) and reached a later model call.
  for (const r of (await Promise.all(sent)) as { queued: boolean }[]) expect(r.queued).toBe(false);
  expect(interrupts).toEqual([]);
  // A held turn stays held: give it time to (wrongly) settle.
  await new Promise((r) => setTimeout(r, 2));
  await afterStep();

  const labels = walked(rec.events);
  if (pl.endsStable) expect(labels).toEqual(pl.labels);
  else expect(labels.slice(0, pl.labels.length)).toEqual(pl.labels);
  const requests = model.requests.filter((r) => r.sessionId === s.id);
  expect(requests.slice(0, pl.actors.length).map((r) => r.actor)).toEqual(pl.actors);
  // Every request the runtime made is one the Messages API accepts.
  for (const r of requests) checkHistory(r);

  // passed changes the acting actor, announced by actor.passed.
  for (const e of rec.of('actor.passed')) expect(e.from).not.toBe(e.to);
  expect(rec.of('actor.passed').map((e) => `${e.from}->${e.to}`)).toEqual(pl.passes);
  // suspended never settles without an approval answer.
  for (const settled of rec.of('turn.settled')) {
    const turnEvents = rec.events.filter((e) => e.turnId === settled.turnId);
    const suspensions = turnEvents.filter((e) => e.type === 'turnState.changed' && e.to === 'suspended');
    for (const sus of suspensions) {
      const resolved = turnEvents.find((e) => e.type === 'approval.resolved' && e.seq > sus.seq);
      expect(resolved, 'a suspended turn settled without an approval answer').toBeDefined();
    }
  }
  if (labels.at(-1) === 'suspended') expect((await s.snapshot()).pendingApprovals.length).toBeGreaterThan(0);
  // Replay-then-live: a late subscriber from seq 0 gets the same events.
  const replay = await firstValueFrom(s.events().pipe(take(rec.events.length), toArray()));
  expect(replay).toEqual(rec.events);
  rec.close();
  await rt.deleteSession(s.id);
}

function describePath(steps: readonly { event: Ev }[]): string {
  return steps
    .map((s) => s.event)
    .filter((e) => (e.type as string) !== 'xstate.init')
    .map((e) => e.type + ('next' in e ? `:${e.next}` : 'to' in e ? `:${e.to}` : ''))
    .join(' ');
}

/* ------------------------------------------------------------------ tests */

describe('session machine paths as scripted runs', () => {
  it('paths:shortest:cover — the shortest paths reach every registered turn state (consumer ones included) and idle', () => {
    const reached = new Set(shortest.map((p) => labelOf(p.state.value)));
    for (const id of registries.turnStates.ids()) {
      if (registries.turnStates.get(id)!.meta.handsOff) continue; // transient: resolved within the same step
      expect(reached.has(id), `a path reaches ${id}`).toBe(true);
    }
    expect(reached.has('idle')).toBe(true);
    // Every settled-state variant of idle is reached: one per terminal state.
    const settledKinds = new Set(shortest.filter((p) => p.state.value === 'idle').map((p) => p.state.context.lastSettled));
    for (const d of registries.turnStates.list()) if (d.meta.isTerminal) expect(settledKinds.has(d.id)).toBe(true);
    expect(shortest.length).toBeGreaterThan(40);
  });

  it('paths:shortest:replay — every shortest path replays through createRuntime with generated payloads; session:seq:gapless, session:settle:exactly-once, session:settle:nothing-after, session:envelope:iff-emits and session:held:no-settle hold after every step', async () => {
    const h = sharedRuntime();
    for (const path of shortest) {
      if (path.steps.length <= 1) continue;
      await fc.assert(
        fc.asyncProperty(payloadArb, async (payload) => {
          await run(plan(path.steps as any, payload), h);
        }),
        { numRuns: 3, seed: 42, endOnFailure: true, interruptAfterTimeLimit: 20_000 },
      ).catch((err: Error) => {
        throw new Error(`path: ${describePath(path.steps as any)}\n${err.message}`);
      });
    }
  });

  it('paths:simple:one-turn-sample — a sample of the one-turn simple paths (loops bounded by the budgets) replays with session:seq:gapless, session:settle:exactly-once, session:settle:nothing-after, session:envelope:iff-emits, session:held:no-settle', async () => {
    expect(simple.length).toBeGreaterThan(500);
    const h = sharedRuntime();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: simple.length - 1 }), payloadArb, async (i, payload) => {
        const path = simple[i]!;
        try {
          await run(plan(path.steps as any, payload), h);
        } catch (err) {
          throw new Error(`path #${i}: ${describePath(path.steps as any)}\n${(err as Error).message}`);
        }
      }),
      { numRuns: 200, endOnFailure: true },
    );
  });

  it('paths:simple:sqlite — the same sample on the SQLite store (group commit) keeps every invariant', async () => {
    const h = sharedRuntime('sqlite');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: simpleNoInterrupt.length - 1 }), payloadArb, async (i, payload) => {
        const path = simpleNoInterrupt[i]!;
        try {
          await run(plan(path.steps as any, payload), h);
        } catch (err) {
          throw new Error(`path #${i}: ${describePath(path.steps as any)}\n${(err as Error).message}`);
        }
      }),
      { numRuns: 80, endOnFailure: true },
    );
  });

  it('paths:simple:budgets — paths that exhaust each budget end in error, and the runtime agrees', async () => {
    const exhausting = (code: string) =>
      simple.find((p) => {
        const last = p.steps.at(-2)?.state;
        return last && labelOf(last.value) === 'error' && last.context.error?.code === code;
      });
    const h = sharedRuntime();
    for (const code of ['turn.model_call_budget', 'turn.respond_retries', 'turn.free_text', 'turn.handoff_budget']) {
      const path = exhausting(code);
      expect(path, `a simple path exhausts ${code}`).toBeDefined();
      const payload = fc.sample(payloadArb, { numRuns: 1, seed: 7 })[0]!;
      await run(plan(path!.steps as any, payload), h);
    }
  });
});
