import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createScriptedModel, type ScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { PARTS_EXTENSION_URI } from '../../src/envelope/agent-card.js';
import type { Part, SessionEvent, SessionEventOf } from '../../src/types.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { serve, type Served } from '../transports/streams/app.js';
import { WsClient } from '../transports/streams/clients.js';
import { api, createSession as createAapSession, textOf, turn as aapTurn, user } from '../transports/aap/helpers.js';

const CONTEXT_TEXT = 'EasyJet is half the price but departs at 06:15.';
const CONTEXT_SCRIPT: ModelScript = {
  rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'write_llm_context', input: { text: CONTEXT_TEXT } }], usage: { inputTokens: 7, outputTokens: 3 } } }],
};
const respond = (parts: Part[], turnState: string) => ({ blocks: [{ type: 'tool_use' as const, name: 'respond', input: { parts, turnState } }] });
/** Every user message gets a complete answer with domain data. */
const ANSWER: ModelScript = {
  rules: [{ respond: respond([{ text: 'Two direct flights.', metadata: { partType: 'response' } }, { data: { flights: 2 }, metadata: { partType: 'domain-data' } }], 'complete') }],
};

interface Rig {
  rt: TurnstateRuntime;
  model: ScriptedModel;
  contextModel: ScriptedModel;
}

function rig(script: ModelScript = ANSWER): Rig {
  const model = createScriptedModel(script);
  const contextModel = createScriptedModel(CONTEXT_SCRIPT);
  const rt = createRuntime({ model, contextModel });
  rt.registries.actors.register({ name: 'sally' });
  return { rt, model, contextModel };
}

const llmContextParts = (events: readonly SessionEvent[]) =>
  events.filter((e): e is SessionEventOf<'part.received'> => e.type === 'part.received' && e.part.metadata.partType === 'llm-context').map((e) => e.part);

const peerCard = (consumes: string[]) => ({ name: 'baxter', capabilities: { extensions: [{ uri: PARTS_EXTENSION_URI, params: { consumes } }] } });

describe('llm-context: produced when and only when an originator consumes it (spec 001 "only if at least one originator\'s Agent Card declares consumes: [\'llm-context\']")', () => {
  it('envelope:llm-context:consumes:api — session.send: consumes, a caller card and the deprecated flag each produce it; no declaration, or a card that does not consume it, never calls the context model', async () => {
    const cases: [string, Record<string, unknown>, number][] = [
      ['nothing declared', {}, 0],
      ['consumes: []', { consumes: [] }, 0],
      ['a caller card without llm-context', { callerCard: peerCard(['domain-data']) }, 0],
      ['a caller card without the parts extension', { callerCard: { name: 'plain', capabilities: {} } }, 0],
      ["consumes: ['llm-context']", { consumes: ['llm-context'] }, 1],
      ['a caller card consuming llm-context', { callerCard: peerCard(['llm-context', 'something-else']) }, 1],
      ['the deprecated consumesLlmContext', { consumesLlmContext: true }, 1],
    ];
    for (const [label, opts, calls] of cases) {
      const { rt, contextModel } = rig();
      const s = await rt.createSession({ actor: 'sally' });
      const out = await (await s.send('flights?', opts)).settled;
      const events = await rt.store.readEvents(s.id, 0);
      expect(contextModel.requests.length, label).toBe(calls);
      expect(llmContextParts(events).length, label).toBe(calls);
      const env = events.find((e): e is SessionEventOf<'envelope.settled'> => e.type === 'envelope.settled')!.envelope;
      expect(env.parts.some((p) => p.metadata.partType === 'llm-context'), label).toBe(calls === 1);
      if (calls === 1) expect(out.envelope!.parts.at(-1)).toMatchObject({ text: CONTEXT_TEXT, metadata: { partType: 'llm-context', source: 'translator' } });
    }
  });

  it('envelope:llm-context:consumes:invalid — an unknown part type in consumes is refused before the message is accepted, naming it', async () => {
    const { rt, model } = rig();
    const s = await rt.createSession({ actor: 'sally' });
    await expect(s.send('flights?', { consumes: ['llm-contxt'] })).rejects.toMatchObject({ code: 'message.invalid_consumes', message: expect.stringContaining('"llm-contxt"') });
    await expect(s.send('flights?', { callerCard: 'baxter' as never })).rejects.toMatchObject({ code: 'message.invalid_caller_card' });
    expect(await rt.store.readEvents(s.id, 0)).toEqual([]);
    expect(model.requests).toHaveLength(0);
  });

  it('envelope:llm-context:once-per-turn — "cached per turn": every originator of one turn declaring it (a card, consumes, a message that joined) gets one part from one context-model call', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { rt, contextModel } = rig({
      rules: [
        { when: { call: 0 }, respond: { blocks: [{ type: 'tool_use', name: 'search', input: {} }] } },
        { respond: respond([{ text: 'Two direct flights.', metadata: { partType: 'response' } }], 'complete') },
      ],
    });
    rt.registries.tools.register({ name: 'search', description: 'Search', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => (await gate, { flights: 2 }) });
    rt.registries.actors.register({ name: 'desk', tools: ['search'] });
    const s = await rt.createSession({ actor: 'desk', doubleTexting: 'interrupt' });
    const a: SessionEvent[] = [];
    const b: SessionEvent[] = [];
    s.events().subscribe((e) => a.push(e));
    s.events().subscribe((e) => b.push(e));
    const first = await s.send('flights to Corfu?', { callerCard: peerCard(['llm-context']), consumes: ['llm-context'] });
    await new Promise<void>((r) => {
      const sub = s.events().subscribe((e) => e.type === 'tool.called' && (sub?.unsubscribe(), r()));
    });
    const joined = await s.send('for six people', { consumes: ['llm-context'] });
    expect(joined.turnId).toBe(first.turnId);
    release();
    await first.settled;
    expect(contextModel.requests).toHaveLength(1);
    expect(llmContextParts(a)).toHaveLength(1);
    // Both subscribers received the one part (the same event, not a second translation).
    expect(llmContextParts(b)).toEqual(llmContextParts(a));
  });

  it('envelope:llm-context:joined-originator — a message that joins a turn declaring consumes makes the turn produce it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { rt, contextModel } = rig({
      rules: [
        { when: { call: 0 }, respond: { blocks: [{ type: 'tool_use', name: 'search', input: {} }] } },
        { respond: respond([{ text: 'Two direct flights.', metadata: { partType: 'response' } }], 'complete') },
      ],
    });
    rt.registries.tools.register({ name: 'search', description: 'Search', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => (await gate, { flights: 2 }) });
    rt.registries.actors.register({ name: 'desk', tools: ['search'] });
    const s = await rt.createSession({ actor: 'desk', doubleTexting: 'interrupt' });
    const called = new Promise<void>((r) => s.events().subscribe((e) => e.type === 'tool.called' && r()));
    const first = await s.send('flights to Corfu?');
    await called;
    await s.send('and tell my agent', { consumes: ['llm-context'] });
    release();
    const out = await first.settled;
    expect(contextModel.requests).toHaveLength(1);
    expect(out.envelope!.parts.map((p) => p.metadata.partType)).toContain('llm-context');
  });

  it('envelope:llm-context:actor-own — an actor that wrote its own llm-context part: that part is used, the context model is not called', async () => {
    const { rt, contextModel } = rig({
      rules: [{ respond: respond([{ text: 'Two flights.', metadata: { partType: 'response' } }, { text: 'My own analysis.', metadata: { partType: 'llm-context' } }], 'complete') }],
    });
    const s = await rt.createSession({ actor: 'sally' });
    const out = await (await s.send('flights?', { consumes: ['llm-context'] })).settled;
    expect(contextModel.requests).toHaveLength(0);
    expect(out.envelope!.parts.filter((p) => p.metadata.partType === 'llm-context')).toEqual([{ text: 'My own analysis.', metadata: { partType: 'llm-context' } }]);
  });
});

describe('llm-context consumers over the transports', () => {
  let srv: Served | undefined;
  let aap: RunningServer | undefined;
  afterEach(async () => {
    await srv?.close();
    await aap?.close();
    srv = aap = undefined;
  });

  it('envelope:llm-context:consumes:websocket — a send frame with consumes [\'llm-context\'] produces it; without, nothing; an unknown type is an error frame', async () => {
    const r = rig();
    srv = await serve(r.rt);
    const s = await r.rt.createSession({ actor: 'sally', tenantId: 'acme' });
    const ws = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    ws.send({ type: 'subscribe', sessionId: s.id, ref: 'sub' });
    await ws.next((f) => f.type === 'subscribed');
    const settledCount = () => ws.frames.filter((f) => f.type === 'event' && f.event.type === 'turn.settled').length;

    ws.send({ type: 'send', sessionId: s.id, text: 'flights?', ref: 1 });
    await ws.next((f) => f.type === 'event' && f.event.type === 'turn.settled');
    expect(r.contextModel.requests).toHaveLength(0);

    ws.send({ type: 'send', sessionId: s.id, text: 'flights again?', consumes: ['llm-context'], ref: 2 });
    await ws.next((f) => f.type === 'event' && f.event.type === 'turn.settled' && settledCount() === 2);
    expect(r.contextModel.requests).toHaveLength(1);
    const got = ws.frames.filter((f) => f.type === 'event').map((f) => f.event as SessionEvent);
    expect(llmContextParts(got).map((p) => p.text)).toEqual([CONTEXT_TEXT]);

    ws.send({ type: 'send', sessionId: s.id, text: 'x', consumes: ['nope'], ref: 3 });
    expect(await ws.next((f) => f.type === 'error' && f.ref === 3)).toMatchObject({ code: 'message.invalid_consumes', message: expect.stringContaining('"nope"') });
    ws.send({ type: 'send', sessionId: s.id, text: 'x', consumes: 'llm-context', ref: 4 });
    expect(await ws.next((f) => f.type === 'error' && f.ref === 4)).toMatchObject({ code: 'message.invalid_consumes', message: expect.stringContaining('/consumes') });
    ws.ws.close();
  });

  it('envelope:llm-context:consumes:aap — AAP consumes on the session or on a turn produces it (the text the client sees is unchanged); none declared, never; an unknown type is 400 naming /consumes/i', async () => {
    const r = rig();
    aap = await startServer({ runtime: r.rt, transports: [createAapTransport({ runtime: r.rt })], port: 0 });
    const plain = await createAapSession(aap.url, { name: 'sally' });
    const t0 = await aapTurn(aap.url, plain, user('flights?', 'message'));
    expect(textOf(t0)).toBe('Two direct flights.');
    expect(r.contextModel.requests).toHaveLength(0);

    const created = await api(aap.url, '/sessions', { body: { agent: { name: 'sally' }, consumes: ['llm-context'] } });
    expect(created.status).toBe(201);
    const consuming = created.json.sessionId as string;
    expect((await api(aap.url, `/sessions/${consuming}`)).json.consumes).toEqual(['llm-context']);
    const t1 = await aapTurn(aap.url, consuming, user('flights?', 'none'));
    expect(textOf(t1)).toBe('Two direct flights.');
    expect(r.contextModel.requests).toHaveLength(1);

    // On a turn: from then on, like agent and tools.
    await aapTurn(aap.url, plain, user('flights?', 'delta', { consumes: ['llm-context'] }));
    expect(r.contextModel.requests).toHaveLength(2);
    const events = await r.rt.store.readEvents(plain, 0);
    expect(llmContextParts(events)).toHaveLength(1);

    const bad = await aapTurn(aap.url, plain, user('flights?', 'none', { consumes: ['llm-context', 'llm-contxt'] }));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'consumes.unknown_part_type', path: '/consumes/1' });
    const badCreate = await api(aap.url, '/sessions', { body: { agent: { name: 'sally' }, consumes: 'llm-context' } });
    expect(badCreate.status).toBe(400);
    expect(badCreate.json.error.path).toBe('/consumes');
    expect(r.contextModel.requests).toHaveLength(2);
  });
});
