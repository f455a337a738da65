/**
 * What an actor receives from the rest of its turn (spec 000 "Turn states"):
 * - `passed`: "The named actor inherits the mailbox. Each actor's tool scope still applies."
 * - `delegated`: "Partial (streaming of the peer's envelope as it arrives)".
 * - `complete`: "The envelope is built from the mailbox's data-bearing events plus the current parts."
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHistory, deriveHistory } from '../../src/machines/mailbox.js';
import { annotate } from '../../src/router/annotated.js';
import type { ModelScript } from '../../src/models/script.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { Envelope, Part, SessionEvent } from '../../src/types.js';
import { Recorder, addTool, answer, checkHistory, checkStream, dataPart, harness, lastUserBlocks, part, respond, toolUse } from './helpers.js';

const FLIGHTS = { flights: [{ flight: 'EJ4521', price: 94 }, { flight: 'BA2043', price: 187 }] };

/** A planner that searches, then hands the turn to a drafter with the flight it chose. */
function handoffRuntime(handoffParts: Part[]) {
  const h = harness({
    rules: [
      { when: { actor: 'planner', on: 'user' }, respond: answer(respond([part('ack', 'Searching.')], 'awaiting'), toolUse('search_flights', { q: 'Corfu' })) },
      { when: { actor: 'planner', on: 'tool_result' }, respond: answer(respond(handoffParts, 'passed', { passTo: 'drafter' })) },
      { when: { actor: 'drafter', on: 'handoff' }, respond: answer(respond([part('response', 'Drafted.')], 'complete')) },
    ],
  });
  addTool(h.rt.registries, 'search_flights', () => FLIGHTS);
  addTool(h.rt.registries, 'draft_email');
  h.rt.registries.actors.register({ name: 'planner', tools: ['search_flights'], handoffs: ['drafter'] });
  h.rt.registries.actors.register({ name: 'drafter', tools: ['draft_email'] });
  return h;
}

describe('passed: the receiver inherits the mailbox', () => {
  it('respond:passTo:inherits-mailbox — "The named actor inherits the mailbox": the hand-off\'s domain-data reaches the receiver', async () => {
    const chosen = { chosen: { flight: 'EJ4521', price: 94 } };
    const { rt, model } = handoffRuntime([part('thinking', 'Handing off to the drafter.'), dataPart('domain-data', chosen)]);
    const s = await rt.createSession({ actor: 'planner' });
    const out = await (await s.send('Write to Anna about Corfu flights')).settled;
    expect(out.finalizedBy).toBe('complete');
    const req = model.requests.find((r) => r.actor === 'drafter')!;
    // The hand-off's text and, beside it, its data parts as JSON text.
    expect(lastUserBlocks(req).at(-1)).toEqual({
      type: 'text',
      text: `[handoff from planner] Handing off to the drafter.\n[domain-data] ${JSON.stringify(chosen)}`,
    });
    checkHistory(req);
    await rt.close();
  });

  it('respond:passTo:inherits-mailbox — "The named actor inherits the mailbox": the data the turn gathered reaches the receiver as text, never as the sender\'s tool blocks', async () => {
    const { rt, model } = handoffRuntime([part('thinking', 'Handing off to the drafter.')]);
    const s = await rt.createSession({ actor: 'planner' });
    const rec = new Recorder(s);
    const out = await (await s.send('Write to Anna about Corfu flights')).settled;
    expect(out.finalizedBy).toBe('complete');
    const req = model.requests.find((r) => r.actor === 'drafter')!;
    // Each data-bearing result of the turn so far, as the model may see it (its tool_result text),
    // in the hand-off's user message, before the hand-off itself.
    const blocks = lastUserBlocks(req);
    expect(blocks).toEqual([
      { type: 'text', text: `[data from planner] ${JSON.stringify(FLIGHTS)}` },
      { type: 'text', text: '[handoff from planner] Handing off to the drafter.' },
    ]);
    // The receiver has no such tool: no tool_use or tool_result block names it.
    expect(req.messages.flatMap((m) => m.content).filter((b) => b.type === 'tool_use' || b.type === 'tool_result')).toEqual([]);
    expect(JSON.stringify(req.messages)).not.toContain('search_flights');
    checkHistory(req);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
    await rt.close();
  });

  it('respond:passTo:inherits-mailbox — the receiver sees what the turn gathered as the model may see it: a field hidden from llm-session stays hidden, and earlier turns are not repeated', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { actor: 'planner', on: 'user' }, respond: answer(toolUse('quote', { q: 'Corfu' })) },
        { when: { actor: 'planner', on: 'tool_result' }, respond: answer(respond([part('thinking', 'Over to you.')], 'passed', { passTo: 'drafter' })) },
        { when: { actor: 'drafter', on: 'handoff' }, respond: answer(respond([part('response', 'Drafted.')], 'complete')) },
      ],
    });
    let n = 0;
    addTool(rt.registries, 'quote', () => annotate({ fare: `F${++n}`, margin: `M${n}` }, { fields: { '/margin': ['peer-response', 'audit'] } }));
    rt.registries.actors.register({ name: 'planner', tools: ['quote'], handoffs: ['drafter'] });
    rt.registries.actors.register({ name: 'drafter' });
    const s = await rt.createSession({ actor: 'planner' });
    const first = await (await s.send('quote one')).settled;
    // The envelope carries the peer-response view (margin included) ...
    expect(first.envelope!.parts.find((p) => p.metadata.partType === 'domain-data')!.data).toEqual({ quote: { fare: 'F1', margin: 'M1' } });
    // ... the receiver's model only the llm-session view.
    const req1 = model.requests.filter((r) => r.actor === 'drafter')[0]!;
    expect(lastUserBlocks(req1)).toEqual([
      { type: 'text', text: 'quote one' },
      { type: 'text', text: '[data from planner] {"fare":"F1"}' },
      { type: 'text', text: '[handoff from planner] Over to you.' },
    ]);
    expect(JSON.stringify(req1.messages)).not.toContain('M1');

    await (await s.send('quote two')).settled;
    const req2 = model.requests.filter((r) => r.actor === 'drafter')[1]!;
    const texts = req2.messages.flatMap((m) => m.content).flatMap((b) => (b.type === 'text' ? [b.text] : []));
    // Each turn's data once, at its own hand-off.
    expect(texts.filter((t) => t.startsWith('[data from planner]'))).toEqual(['[data from planner] {"fare":"F1"}', '[data from planner] {"fare":"F2"}']);
    checkHistory(req2);
    // The history is folded incrementally (the history cache): entry by entry, it is the same.
    const mailbox = await s.mailbox();
    const view = createHistory('drafter');
    for (let i = 1; i <= mailbox.length; i++) view.update(mailbox.slice(0, i));
    expect(view.update(mailbox)).toEqual(deriveHistory(mailbox, 'drafter'));
    expect(JSON.stringify(deriveHistory(mailbox, 'drafter'))).toContain('[data from planner] {\\"fare\\":\\"F2\\"}');
    await rt.close();
  });
});

const PEER: Envelope = {
  role: 'agent',
  parts: [
    part('response', 'EJ4521 at £94 is the cheapest.'),
    dataPart('domain-data', { fares: [{ flight: 'EJ4521', price: 94 }] }),
    part('no-such-type', 'a part type this runtime does not know'),
  ],
  meta: { sessionId: 'peer', turnId: 'pt', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' },
};

/** An agent that delegates to a peer, then answers with the peer's finding and data of its own. */
const DELEGATING: ModelScript = {
  rules: [
    { when: { text: '^\\[peer-envelope\\]' }, respond: answer(respond([part('response', 'The fares agent found EJ4521 at £94.'), dataPart('domain-data', { route: { to: 'CFU' } })], 'complete')) },
    { when: { on: 'user' }, respond: answer(respond([part('ack', 'Asking the fares agent.')], 'delegated')) },
  ],
};

const peerRecord = (turnId: string) => ({
  data: { peer: { fares: [{ flight: 'EJ4521', price: 94 }] }, route: { to: 'CFU' } },
  metadata: {
    partType: 'domain-data',
    sources: [
      { from: 'peer', callId: `${turnId}:peer-envelope:0`, pointer: '/peer' },
      // The turn's third part: after the ack of the delegating call and the response.
      { from: 'actor', part: 2, pointer: '' },
    ],
  },
});

const afterInjection = (events: readonly SessionEvent[], seq: number) =>
  events.filter((e) => e.seq > seq && e.type !== 'model.usage').map((e) => (e.type === 'part.received' ? `part.received(${e.part.metadata.partType}@${e.turnState})` : e.type));

describe('delegated: the peer\'s envelope', () => {
  it('delegated:peer-envelope:streamed — "Partial (streaming of the peer\'s envelope as it arrives)": the peer\'s deliverable parts are published in the delegated state, and the model still reads the envelope', async () => {
    const { rt, model } = harness(DELEGATING);
    rt.registries.actors.register({ name: 'baxter' });
    const s = await rt.createSession({ actor: 'baxter' });
    const rec = new Recorder(s);
    const first = await (await s.send('flights?')).settled;
    expect(first.finalizedBy).toBe('delegated');
    const seq = rec.events.at(-1)!.seq;
    const out = await (await s.inject({ kind: 'peer-envelope', envelope: PEER }))!.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(afterInjection(rec.events, seq)).toEqual([
      'part.received(response@delegated)',
      'part.received(domain-data@delegated)',
      'turnState.changed',
      'part.received(response@complete)',
      'part.received(domain-data@complete)',
      'turnState.changed',
      'envelope.settled',
      'turn.settled',
    ]);
    const peerParts = rec.of('part.received').filter((e) => e.seq > seq && e.turnState === 'delegated');
    expect(peerParts.map((e) => e.part)).toEqual(PEER.parts.slice(0, 2));
    expect(peerParts.map((e) => [e.callId, e.index, e.actor])).toEqual([
      [`${out.turnId}:peer-envelope:0`, 0, 'baxter'],
      [`${out.turnId}:peer-envelope:0`, 1, 'baxter'],
    ]);
    // The model reads the whole envelope, the unknown part type included.
    expect(lastUserBlocks(model.requests.at(-1)!).at(-1)).toEqual({ type: 'text', text: `[peer-envelope] ${JSON.stringify(PEER)}` });
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
    await rt.close();
  });

  it('envelope:domain-data:peer — "The envelope is built from the mailbox\'s data-bearing events plus the current parts": the peer\'s domain-data is a data-bearing record of the turn', async () => {
    const { rt } = harness(DELEGATING);
    rt.registries.actors.register({ name: 'baxter' });
    const s = await rt.createSession({ actor: 'baxter' });
    await (await s.send('flights?')).settled;
    const out = await (await s.inject({ kind: 'peer-envelope', envelope: PEER }))!.settled;
    // The peer's data under /peer (as a tool's under its name), the actor's own on top; the
    // peer's response is not this agent's: only the current parts are.
    expect(out.envelope!.parts).toEqual([part('response', 'The fares agent found EJ4521 at £94.'), peerRecord(out.turnId)]);
    const mailbox = await s.mailbox();
    expect(mailbox.filter((m) => m.kind === 'data')).toEqual([
      expect.objectContaining({ kind: 'data', from: 'peer', tool: 'peer', callId: `${out.turnId}:peer-envelope:0`, data: { fares: [{ flight: 'EJ4521', price: 94 }] } }),
    ]);
    await rt.close();
  });

  it('envelope:domain-data:peer — "The envelope is built from the mailbox\'s data-bearing events plus the current parts": the peer\'s data survives a restart between the injection and settlement', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-peer-'));
    try {
      const path = join(dir, 's.db');
      const build = (notify: () => Promise<unknown>) => {
        const rt = createRuntime({
          store: createSqliteStore({ path }),
          model: createScriptedModel({
            rules: [
              { when: { text: '^\\[peer-envelope\\]' }, respond: answer(toolUse('notify', { q: 'fares' })) },
              { when: { on: 'tool_result' }, respond: DELEGATING.rules[0]!.respond },
              { when: { on: 'rejection' }, respond: DELEGATING.rules[0]!.respond },
              DELEGATING.rules[1]!,
            ],
          }),
        });
        addTool(rt.registries, 'notify', notify);
        rt.registries.actors.register({ name: 'baxter', tools: ['notify'] });
        return rt;
      };
      const first = build(() => new Promise(() => undefined)); // never answers: the process stops mid-call
      const s = await first.createSession({ actor: 'baxter' });
      await (await s.send('flights?')).settled;
      const called = new Promise<void>((r) => s.events().subscribe((e) => e.type === 'tool.called' && r()));
      await s.inject({ kind: 'peer-envelope', envelope: PEER });
      await called;
      await first.close();

      const second = build(async () => ({ ok: true }));
      expect((await second.recover()).resumed).toEqual([s.id]);
      await (await second.session(s.id))!.idle();
      const events = await second.store.readEvents(s.id, 0);
      const settled = events.filter((e) => e.type === 'envelope.settled');
      expect(settled).toHaveLength(1);
      const envelope = (settled[0] as Extract<SessionEvent, { type: 'envelope.settled' }>).envelope;
      expect(envelope.parts).toEqual([part('response', 'The fares agent found EJ4521 at £94.'), peerRecord(envelope.meta.turnId)]);
      checkStream(events, second.registries, { settledTurns: [envelope.meta.turnId] });
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
