/**
 * Replay reproduces recorded sessions exactly (same path through turn states, same parts, same
 * tool outcomes) with no model call and no handler call; the diff names the first divergence.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/machines/ports.js';
import type { ModelScript } from '../../src/models/script.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { MailboxEntry, Part, SessionEvent } from '../../src/types.js';
import { diffSessions, extractPath, replaySession, replayWithScript, ReplayError, type SessionPath } from '../../src/replay/index.js';
import { buildDesk } from '../durability/fixtures/scenario.js';
import { Child } from '../durability/fixtures/child.js';
import { handlerCalls, respond, TRAVEL_SCRIPT, travelRuntime, travelSetup } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeEach(() => {
  handlerCalls.n = 0;
});

const partsOf = (events: readonly SessionEvent[]): Part[] => events.flatMap((e) => (e.type === 'part.received' ? [e.part] : []));
const envelopes = (events: readonly SessionEvent[]) => events.flatMap((e) => (e.type === 'envelope.settled' ? [e.envelope.parts] : []));
const toolResults = (m: readonly MailboxEntry[]) => m.flatMap((e) => (e.kind === 'tool_result' ? [[e.tool, e.content, e.isError]] : []));

/** A travel session: greeting, a hand-off with a routed tool and a failing bypass tool, an approved booking, a model failure. */
async function recordTravel(name: string): Promise<{ store: SessionStore; id: string }> {
  const store = createSqliteStore({ path: join(dir, `${name}.db`) });
  const rt = travelRuntime(store);
  const s = await rt.createSession({ id: name, actor: 'front' });
  for (const text of ['hello', 'flights to Corfu please', 'book the cheap one', 'break it']) {
    const out = await (await s.send(text, { principal: { userId: 'traveller' } })).settled;
    if (out.finalizedBy === 'suspended') {
      const [a] = await store.listApprovals({ sessionId: name, status: 'pending' });
      await rt.answerApproval(a!.approvalId, { approved: true, reason: 'fine' }, { userId: 'ops' }, 'email');
      await s.idle();
    }
  }
  // Close the runtime but keep the file: reopen it read-side, as a replay tool would.
  await rt.close();
  return { store: createSqliteStore({ path: join(dir, `${name}.db`) }), id: name };
}

/** A desk session: chat, two approvals (one approved, one denied), a tool, a streamed answer. */
async function recordDesk(name: string): Promise<{ store: SessionStore; id: string }> {
  const db = join(dir, `${name}.db`);
  const rt = buildDesk({ db, sideLog: join(dir, `${name}.log`) });
  const s = await rt.createSession({ id: name, actor: 'desk' });
  await (await s.send('hi')).settled;
  await (await s.send('pair Corfu')).settled;
  const [a, b] = await rt.store.listApprovals({ sessionId: name, status: 'pending' });
  await rt.answerApproval(a!.approvalId, { approved: true }, { userId: 'ops' }, 'api');
  await rt.answerApproval(b!.approvalId, { approved: false, reason: 'over budget' }, { userId: 'ops' }, 'chat');
  await s.idle();
  await (await s.send('charge it')).settled;
  await (await s.send('stream it')).settled;
  await rt.close();
  return { store: createSqliteStore({ path: db }), id: name };
}

async function expectExactReplay(store: SessionStore, id: string, setup?: Parameters<typeof replaySession>[2], exactToolText = true) {
  const events = await store.readEvents(id, 0);
  const mailbox = await store.readMailbox(id);
  const r = await replaySession(store, id, setup);
  expect(r.diff.differences).toEqual([]);
  expect(r.diff.identical).toBe(true);
  expect(r.stoppedEarly).toBeUndefined();
  expect(r.unmatchedCalls).toEqual([]);
  expect(r.replayed).toEqual(r.recorded);
  // Every model call was answered from the recording.
  expect(r.recordedModelCalls).toBe(mailbox.filter((m) => m.kind === 'assistant').length);
  // Same parts, same envelopes, same tool results as the model saw them.
  expect(partsOf(r.events)).toEqual(partsOf(events));
  expect(envelopes(r.events)).toEqual(envelopes(events));
  if (exactToolText) expect(toolResults(r.mailbox)).toEqual(toolResults(mailbox));
  expect(r.events.map((e) => e.turnId).filter((t, i, a) => a.indexOf(t) === i)).toEqual(events.map((e) => e.turnId).filter((t, i, a) => a.indexOf(t) === i));
  return r;
}

describe('replay reproduces recorded sessions', () => {
  it('replay:exact:handoff-approval — hand-offs, a routed tool, a failing bypass tool, an approval and a model failure replay identically; no handler runs', async () => {
    const { store, id } = await recordTravel('travel');
    expect(handlerCalls.n).toBe(3); // search, fare_rules, book ran while recording
    handlerCalls.n = 0;
    const r = await expectExactReplay(store, id, { setup: (reg) => travelSetup(reg) });
    expect(handlerCalls.n).toBe(0);
    expect(r.servedResults).toBe(3);
    expect(r.recorded.turns.map((t) => t.finalizedBy)).toEqual(['complete', 'complete', 'complete', 'error']);
    expect(r.recorded.turns[1]!.steps.map((s) => s.actor)).toEqual(['front', 'flights', 'flights', 'flights']);
    expect(r.recorded.turns[2]!.steps[1]!.approvals).toEqual(['book:requested', 'book:approved']);
    // The re-run's approval keeps who answered and through which channel.
    const resolved = r.events.find((e) => e.type === 'approval.resolved');
    expect(resolved).toMatchObject({ decision: 'approved', by: { userId: 'ops' }, via: 'email', reason: 'fine' });
    store.close();
  });

  it('replay:exact:inferred-setup — without the application setup, registrations inferred from the recording replay identically', async () => {
    const { store, id } = await recordTravel('travel-inferred');
    handlerCalls.n = 0;
    await expectExactReplay(store, id);
    expect(handlerCalls.n).toBe(0);
    store.close();
  });

  it('replay:exact:approvals-denied — approved and denied approvals, a tool and a streamed answer replay identically', async () => {
    const { store, id } = await recordDesk('desk');
    let calls = 0;
    const r = await expectExactReplay(store, id, {
      setup: (reg) => {
        const handler = () => {
          calls++;
          return {};
        };
        reg.tools.register({ name: 'book', description: 'Book', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler });
        reg.tools.register({ name: 'charge', description: 'Charge', inputSchema: { type: 'object' }, scope: 'generalist', handler });
        reg.actors.register({ name: 'desk', tools: ['book', 'charge'] });
      },
    });
    expect(calls).toBe(0);
    expect(r.recorded.turns[1]!.steps[0]!.approvals).toEqual(['book:requested', 'book:requested', 'book:approved', 'book:denied']);
    expect(r.recorded.turns[1]!.steps[0]!.results).toEqual(['book:ok', 'book:error']);
    await expectExactReplay(store, id);
    store.close();
  });

  it('replay:exact:pending-at-end — a recording that ends waiting for approval replays to the same wait', async () => {
    const db = join(dir, 'pending.db');
    const rt = buildDesk({ db, sideLog: join(dir, 'pending.log') });
    const s = await rt.createSession({ id: 'pending', actor: 'desk' });
    await (await s.send('hi')).settled;
    await (await s.send('book Corfu')).settled;
    await rt.close();
    const store = createSqliteStore({ path: db });
    const r = await expectExactReplay(store, 'pending');
    expect(r.replayed.turns[1]!.finalizedBy).toBeNull();
    expect(r.replayed.turns[1]!.steps[0]!.states).toEqual(['awaiting->awaiting', 'awaiting->suspended']);
    store.close();
  });

  it('replay:exact:recovered — sessions whose process was killed inside a tool, or mid-stream, and recovered replay with the same path', async () => {
    const db = join(dir, 'recovered.db');
    const sideLog = join(dir, 'recovered.log');
    const first = new Child({ db, sideLog, phase: 'start', sessionId: 'rec', message: 'charge the card', killInCharge: true });
    await first.exited;
    const second = new Child({ db, sideLog, phase: 'resume', sessionId: 'rec' });
    await second.until((l) => l.kind === 'idle');
    await second.exited;
    const store = createSqliteStore({ path: db });
    // The unknown outcome replays as a failed call: same path, and the model reads the recorded text as it was.
    const r = await expectExactReplay(store, 'rec');
    expect(r.recorded.turns[0]!.steps[0]!.results).toEqual(['charge:error']);
    const replayedResult = r.mailbox.find((m) => m.kind === 'tool_result' && m.tool === 'charge');
    expect(replayedResult).toMatchObject({ isError: true, content: expect.stringMatching(/The outcome of charge is unknown/) });
    store.close();

    // Killed mid-stream: the lost call's deltas stay in the log; the path is the retried call's.
    const db2 = join(dir, 'recovered-stream.db');
    const third = new Child({ db: db2, sideLog, phase: 'start', sessionId: 'rec2', message: 'stream it', chunkDelayMs: 40 });
    await third.until((l) => l.kind === 'event' && l.type === 'part.delta');
    await third.kill();
    const fourth = new Child({ db: db2, sideLog, phase: 'resume', sessionId: 'rec2' });
    await fourth.until((l) => l.kind === 'idle');
    await fourth.exited;
    const store2 = createSqliteStore({ path: db2 });
    const r2 = await expectExactReplay(store2, 'rec2');
    expect(r2.recorded.turns[0]!.steps).toHaveLength(1);
    store2.close();
  }, 60_000);

  it('replay:exact:client-tool — a turn that waited for a client-side tool replays with the recorded client result injected', async () => {
    const { createRuntime } = await import('../../src/runtime.js');
    const { createScriptedModel } = await import('../../src/models/scripted.js');
    const store = createSqliteStore({ path: join(dir, 'client.db') });
    const model = createScriptedModel({
      rules: [
        { when: { on: 'user' }, respond: { blocks: [respond([{ text: 'Pick a seat on the map.', partType: 'ack' }], 'awaiting'), { type: 'tool_use', name: 'pick_seat', input: { flight: 'CFU1' } }] } },
        { when: { on: 'tool_result', tool: 'pick_seat', text: '(\\d+[A-F])' }, respond: { blocks: [respond([{ text: 'Seat $1 it is.', partType: 'response' }], 'complete')] } },
      ],
    });
    const rt = createRuntime({ model, store });
    rt.registries.actors.register({ name: 'seats', tools: [] });
    const s = await rt.createSession({ id: 'client', actor: 'seats' });
    const clientTools = [{ name: 'pick_seat', description: 'Let the user pick a seat', parameters: { type: 'object' } }];
    const out = await (await s.send('a window seat please', { clientTools })).settled;
    expect(out.finalizedBy).toBe('suspended');
    const callId = (await s.snapshot()).pendingClientCalls[0]!.callId;
    await s.inject({ kind: 'client-tool-result', callId, content: '{"seat":"14A"}' });
    await s.idle();
    await rt.close();
    const reopened = createSqliteStore({ path: join(dir, 'client.db') });
    const r = await expectExactReplay(reopened, 'client');
    expect(r.recorded.turns[0]!.steps[0]!.tools).toEqual(['client:pick_seat']);
    expect(partsOf(r.events).at(-1)?.text).toBe('Seat 14A it is.');
    reopened.close();
  });

  it('replay:exact:consumer-hold — a consumer state that held the actor until a named injection replays identically, with and without the setup', async () => {
    const { createRuntime } = await import('../../src/runtime.js');
    const { createScriptedModel } = await import('../../src/models/scripted.js');
    const setup = (reg: import('../../src/registries/types.js').Registries) => {
      reg.turnStates.register({
        id: 'awaiting-payment',
        meta: { description: 'Waiting for the payment provider.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'payment-confirmed' },
      });
      reg.actors.register({ name: 'till', tools: [] });
    };
    const store = createSqliteStore({ path: join(dir, 'hold.db') });
    const rt = createRuntime({
      model: createScriptedModel({
        rules: [
          { when: { on: 'user', text: '^\\[payment-confirmed\\] .*"amount":(\\d+)' }, respond: { blocks: [respond([{ text: 'Paid $1. Thank you!', partType: 'response' }], 'complete')] } },
          { when: { on: 'user' }, respond: { blocks: [respond([{ text: 'Waiting for your payment.', partType: 'progress' }], 'awaiting-payment')] } },
        ],
      }),
      store,
    });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'hold', actor: 'till' });
    expect((await (await s.send('pay for the ferry')).settled).finalizedBy).toBe('awaiting-payment');
    const ref = await s.inject({ kind: 'resume', resumeOn: 'payment-confirmed', payload: { amount: 42 } });
    expect((await ref!.settled).finalizedBy).toBe('complete');
    await rt.close();
    const reopened = createSqliteStore({ path: join(dir, 'hold.db') });
    const r = await expectExactReplay(reopened, 'hold', { setup });
    // The resume belongs to the step that held (as an approval's resume does).
    expect(r.recorded.turns[0]!.steps[0]!.states).toEqual(['awaiting->awaiting-payment', 'awaiting-payment->awaiting']);
    expect(r.recorded.turns[0]!.steps[1]!.states).toEqual(['awaiting->complete']);
    await expectExactReplay(reopened, 'hold');
    reopened.close();
  });

  it('replay:exact:delegated — a turn delegated to a peer replays identically: the peer\'s envelope is injected again from the mailbox, its parts are published and its domain-data is in the envelope', async () => {
    const { createRuntime } = await import('../../src/runtime.js');
    const { createScriptedModel } = await import('../../src/models/scripted.js');
    const setup = (reg: import('../../src/registries/types.js').Registries): void => {
      reg.actors.register({ name: 'baxter', tools: [] });
    };
    const store = createSqliteStore({ path: join(dir, 'delegated.db') });
    const rt = createRuntime({
      model: createScriptedModel({
        rules: [
          { when: { on: 'user', text: '^\\[peer-envelope\\]' }, respond: { blocks: [respond([{ text: 'The fares agent found EJ4521.', partType: 'response' }], 'complete')] } },
          { when: { on: 'user' }, respond: { blocks: [respond([{ text: 'Asking the fares agent.', partType: 'ack' }], 'delegated')] } },
        ],
      }),
      store,
    });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'delegated', actor: 'baxter' });
    expect((await (await s.send('flights?')).settled).finalizedBy).toBe('delegated');
    const peer = {
      role: 'agent' as const,
      parts: [
        { text: 'EJ4521 £94', metadata: { partType: 'response' } },
        { data: { fares: [{ flight: 'EJ4521', price: 94 }] }, metadata: { partType: 'domain-data' } },
      ],
      meta: { sessionId: 'peer', turnId: 'pt', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' },
    };
    expect((await (await s.inject({ kind: 'peer-envelope', envelope: peer }))!.settled).finalizedBy).toBe('complete');
    await rt.close();
    const reopened = createSqliteStore({ path: join(dir, 'delegated.db') });
    const recorded = await reopened.readEvents('delegated', 0);
    // What was recorded: the peer's parts, and its data in the envelope.
    expect(partsOf(recorded).map((p) => p.metadata.partType)).toEqual(['ack', 'response', 'domain-data', 'response']);
    expect(envelopes(recorded)[0]!.find((p) => p.metadata.partType === 'domain-data')!.data).toEqual({ peer: { fares: [{ flight: 'EJ4521', price: 94 }] } });
    await expectExactReplay(reopened, 'delegated', { setup });
    await expectExactReplay(reopened, 'delegated');
    reopened.close();
  });

  it('replay:exact:retried-tool — a call of an idempotent tool that took three attempts replays from its final attempt, by callId and by content', async () => {
    const { createRuntime } = await import('../../src/runtime.js');
    const { createScriptedModel } = await import('../../src/models/scripted.js');
    let runs = 0;
    const setup = (reg: import('../../src/registries/types.js').Registries) => {
      reg.tools.register({
        name: 'rates',
        description: 'Exchange rates',
        inputSchema: { type: 'object', properties: { ccy: { type: 'string' } } },
        scope: 'generalist',
        idempotent: true,
        retry: { attempts: 3 },
        handler: () => {
          runs += 1;
          if (runs < 3) throw new Error(`upstream 503 (${runs})`);
          return { eur: 1.08 };
        },
      });
      reg.actors.register({ name: 'fx', tools: ['rates'] });
    };
    const store = createSqliteStore({ path: join(dir, 'retried.db') });
    const rt = createRuntime({
      model: createScriptedModel({
        rules: [
          { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'rates', input: { ccy: 'EUR' } }] } },
          { when: { on: 'tool_result', tool: 'rates' }, respond: { blocks: [respond([{ text: 'EUR is 1.08.', partType: 'response' }], 'complete')] } },
        ],
      }),
      store,
    });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'retried', actor: 'fx' });
    expect((await (await s.send('euro rate?')).settled).finalizedBy).toBe('complete');
    await rt.close();
    const reopened = createSqliteStore({ path: join(dir, 'retried.db') });
    expect((await reopened.readExecutions('retried')).map((x) => x.outcome)).toEqual(['error', 'error', 'ok']);
    runs = 0;
    await expectExactReplay(reopened, 'retried', { setup });
    await expectExactReplay(reopened, 'retried', { setup, match: 'content' });
    // Inferred from the recording (no retry policy known): the final attempt is what is served.
    await expectExactReplay(reopened, 'retried', { match: 'content' });
    expect(runs).toBe(0);
    reopened.close();
  });

  it('replay:exact:policy-denied — a call its policy denied replays as denied from the recorded tool.result (the denial is data, never parsed out of the text), also with the setup inferred', async () => {
    const { createRuntime } = await import('../../src/runtime.js');
    const { createScriptedModel } = await import('../../src/models/scripted.js');
    let runs = 0;
    const setup = (reg: import('../../src/registries/types.js').Registries) => {
      reg.tools.register({
        name: 'wire',
        description: 'Wire money',
        inputSchema: { type: 'object', properties: { amount: { type: 'number' } } },
        scope: 'generalist',
        requiresApproval: () => ({ decision: 'deny', reason: 'over the daily limit' }),
        handler: () => {
          runs += 1;
          return { sent: true };
        },
      });
      reg.actors.register({ name: 'bank', tools: ['wire'] });
    };
    const store = createSqliteStore({ path: join(dir, 'policy-denied.db') });
    const rt = createRuntime({
      model: createScriptedModel({
        rules: [
          { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'wire', input: { amount: 5000 } }] } },
          { when: { on: 'rejection' }, respond: { blocks: [respond([{ text: 'The transfer was refused.', partType: 'response' }], 'complete')] } },
        ],
      }),
      store,
    });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'policy-denied', actor: 'bank' });
    const out = await (await s.send('send 5000')).settled;
    expect(out.parts.map((p) => p.text)).toEqual(['The transfer was refused.']);
    expect(out.finalizedBy).toBe('complete');
    await rt.close();
    expect(runs).toBe(0);
    const reopened = createSqliteStore({ path: join(dir, 'policy-denied.db') });
    const result = (await reopened.readEvents('policy-denied', 0)).find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ isError: true, view: 'Tool call denied: over the daily limit', denial: { reason: 'over the daily limit' } });
    await expectExactReplay(reopened, 'policy-denied', { setup });
    await expectExactReplay(reopened, 'policy-denied');
    expect(runs).toBe(0);
    reopened.close();
  });

  it('replay:error:unknown-session — replaying a session the store does not hold fails with a clear error', async () => {
    const { store } = await recordDesk('desk-unknown');
    await expect(replaySession(store, 'nope')).rejects.toThrow(ReplayError);
    await expect(replaySession(store, 'nope')).rejects.toThrow(/no session "nope".*desk-unknown/);
    store.close();
  });
});

describe('diff names the first divergence', () => {
  it('replay:diff:script-change — a new script that skips a step diverges at that turn and step, with expected and actual', async () => {
    const { store, id } = await recordTravel('travel-diff');
    handlerCalls.n = 0;
    const script: ModelScript = {
      rules: TRAVEL_SCRIPT.rules.map((r) =>
        r.id === 'rules' ? { ...r, respond: { blocks: [respond([{ text: 'Two flights: 94 and 120.', partType: 'response' }], 'complete')] } } : r,
      ),
    };
    const r = await replayWithScript(store, id, script, { setup: (reg) => travelSetup(reg) });
    expect(handlerCalls.n).toBe(0);
    expect(r.diff.identical).toBe(false);
    expect(r.diff.first).toMatchObject({ turn: 1, step: 2, field: 'parts', expected: ['progress'], actual: ['response'] });
    expect(r.diff.first!.message).toMatch(/^turn 1 \(turn_[^)]+\), step 2: parts differ — expected \["progress"\] but got \["response"\]$/);
    // Turns 0, 2 and 3 still match: approvals and tool results were matched by tool and arguments.
    expect(r.diff.differences.map((d) => d.turn)).toEqual([1]);
    expect(r.replayed.turns[2]!.steps[1]!.approvals).toEqual(['book:requested', 'book:approved']);
    store.close();
  });

  it('replay:diff:policy-change — a tool that no longer needs approval shows as a missing approval-request at its step', async () => {
    const { store, id } = await recordTravel('travel-policy');
    const r = await replaySession(store, id, { setup: (reg) => travelSetup(reg, { bookNeedsApproval: false }) });
    expect(r.diff.first).toMatchObject({ turn: 2, step: 1, field: 'parts', expected: ['approval-request'], actual: [] });
    expect(r.replayed.turns[2]!.steps[1]!.tools).toEqual(['book']);
    expect(r.replayed.turns[2]!.steps[1]!.approvals).toEqual([]);
    store.close();
  });

  it('replay:diff:text-only — same structure with different words is reported as a content difference, not a path difference', async () => {
    const { store, id } = await recordTravel('travel-text');
    const script: ModelScript = {
      rules: TRAVEL_SCRIPT.rules.map((r) => (r.id === 'greet' ? { ...r, respond: { blocks: [respond([{ text: 'Hi! Where to?', partType: 'response' }], 'complete')] } } : r)),
    };
    const r = await replayWithScript(store, id, script, { setup: (reg) => travelSetup(reg) });
    expect(r.diff.differences).toHaveLength(1);
    expect(r.diff.first).toMatchObject({ turn: 0, step: 0, field: 'texts', expected: ['Hello! Where to?'], actual: ['Hi! Where to?'] });
    store.close();
  });

  it('replay:diff:turns — a missing turn, an extra step and a different settlement are named; the first is the earliest', () => {
    const step = (parts: string[], states: string[]) => ({ actor: 'a', parts, states, tools: [], approvals: [], results: [], handoffs: [], texts: parts });
    const base: SessionPath = {
      sessionId: 's',
      turns: [
        { index: 0, turnId: 't0', input: 'x', actor: 'a', steps: [step(['response'], ['awaiting->complete'])], finalizedBy: 'complete' },
        { index: 1, turnId: 't1', input: 'y', actor: 'a', steps: [step(['ack'], ['awaiting->awaiting']), step(['response'], ['awaiting->complete'])], finalizedBy: 'complete' },
        { index: 2, turnId: 't2', input: 'z', actor: 'a', steps: [step(['response'], ['awaiting->complete'])], finalizedBy: 'complete' },
      ],
    };
    const other: SessionPath = {
      sessionId: 's',
      turns: [
        base.turns[0]!,
        { ...base.turns[1]!, steps: [step(['ack'], ['awaiting->awaiting']), step(['ack'], ['awaiting->awaiting']), step(['error'], ['awaiting->error'])], finalizedBy: 'error' },
      ],
    };
    expect(diffSessions(base, base)).toEqual({ identical: true, differences: [] });
    const d = diffSessions(base, other);
    expect(d.first).toMatchObject({ turn: 1, step: 1, field: 'parts', expected: ['response'], actual: ['ack'] });
    expect(d.differences.map((x) => [x.turn, x.field])).toEqual([
      [1, 'parts'],
      [1, 'finalizedBy'],
      [2, 'turn'],
    ]);
    expect(d.differences[2]!.message).toMatch(/turn 2 \(t2\): the turn is missing/);
    // The path of a session is the same whichever way it is read.
    expect(extractPath('s', [], [])).toEqual({ sessionId: 's', turns: [] });
  });
});
