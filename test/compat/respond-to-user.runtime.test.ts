import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { createAnthropicModel } from '../../src/models/anthropic.js';
import { startLoopbackMessagesServer } from '../../src/models/loopback-server.js';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import type { ActorDefinition } from '../../src/registries/types.js';
import { COMPAT_COMPLETION_NUDGE } from '../../src/respond/compat.js';
import type { SessionEvent, SessionEventOf } from '../../src/types.js';
import { serve, type Served } from '../transports/streams/app.js';
import { eventsOf, readSse } from '../transports/streams/clients.js';
import { MODES, createSession as createAapSession, startHarness, textOf, turn as aapTurn, user, type Harness } from '../transports/aap/helpers.js';

const rtu = (text: string) => ({ type: 'tool_use' as const, name: 'respond_to_user', input: { text } });
const done = (summary: string) => ({ type: 'tool_use' as const, name: 'mark_work_complete', input: { summary } });

/** Three drafts in one turn, each refining the last (spec 003 open question 1), then completion. */
const THREE_DRAFTS: ModelScript = {
  rules: [
    { when: { call: 0 }, respond: { blocks: [rtu('Tweet one.')] } },
    { when: { call: 1 }, respond: { blocks: [rtu('Tweet one. Tweet two.')] } },
    { when: { call: 2 }, respond: { blocks: [rtu('  Tweet one. Tweet two. Tweet three.  ')] } },
    { when: { call: 3 }, respond: { blocks: [done('Work was already marked complete.')] } },
  ],
};
const LAST = 'Tweet one. Tweet two. Tweet three.';

async function run(script: ModelScript, actor: Partial<ActorDefinition> = {}, text = 'read me it') {
  const model = createScriptedModel(script);
  const rt = createRuntime({ model });
  rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user', ...actor });
  const s = await rt.createSession({ actor: 'voice' });
  const events: SessionEvent[] = [];
  s.events().subscribe((e) => events.push(e));
  const out = await (await s.send(text)).settled;
  return { out, events, model, s };
}

const partsOf = (events: SessionEvent[]) => events.filter((e): e is SessionEventOf<'part.received'> => e.type === 'part.received');
const settledOf = (events: SessionEvent[]) => events.find((e): e is SessionEventOf<'turn.settled'> => e.type === 'turn.settled');

describe('spec 003 compatibility (respond_to_user / mark_work_complete) on the runtime', () => {
  it('compat:userResponse:last-call-wins — "Use the last call": three drafts, only the last is delivered, once, at completion', async () => {
    const { out, events, model } = await run(THREE_DRAFTS);
    expect(out.finalizedBy).toBe('complete');
    expect(out.userResponse).toBe(LAST);
    const parts = partsOf(events);
    expect(parts.map((p) => [p.part.text, p.turnState])).toEqual([[LAST, 'complete']]);
    // Nothing was published before mark_work_complete: the only part comes after the fourth model call's usage.
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'model.usage')).toHaveLength(4);
    expect(types.lastIndexOf('model.usage')).toBeLessThan(types.indexOf('part.received'));
    expect(events.filter((e) => e.type === 'part.delta')).toEqual([]);
    const env = events.find((e): e is SessionEventOf<'envelope.settled'> => e.type === 'envelope.settled')!.envelope;
    expect(env.parts).toEqual([{ text: LAST, metadata: { partType: 'response' } }]);
    // Each draft got spec 003's success result; the model saw the compat tools, not respond().
    const second = model.requests[1]!;
    expect(JSON.stringify(second.messages.at(-1)!.content)).toContain('Response recorded for delivery to user.');
    expect(second.tools.map((t) => t.name)).toEqual(['respond_to_user', 'mark_work_complete']);
  });

  it('compat:turn.settled:userResponse — "userResponse … finalContent remains unchanged for display": both ride turn.settled and the TurnOutcome', async () => {
    const { out, events } = await run(THREE_DRAFTS);
    const settled = settledOf(events)!;
    expect(settled).toMatchObject({ finalizedBy: 'complete', userResponse: LAST, finalContent: 'Work was already marked complete.' });
    expect(out).toMatchObject({ userResponse: LAST, finalContent: 'Work was already marked complete.' });
  });

  it('compat:turn.settled:respond-only — a respond() actor\'s turn.settled carries neither field', async () => {
    const model = createScriptedModel({
      rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Hi.', metadata: { partType: 'response' } }], turnState: 'complete' } }] } }],
    });
    const rt = createRuntime({ model });
    rt.registries.actors.register({ name: 'plain' });
    const s = await rt.createSession({ actor: 'plain' });
    const out = await (await s.send('hi')).settled;
    const settled = (await rt.store.readEvents(s.id, 0)).find((e) => e.type === 'turn.settled')!;
    expect(settled).not.toHaveProperty('userResponse');
    expect(settled).not.toHaveProperty('finalContent');
    expect(out).not.toHaveProperty('userResponse');
  });

  it('compat:deliverDrafts:opt-in — "Mid-task responses" only where the actor opts in: each draft is delivered as it is made, the last is userResponse', async () => {
    const { out, events } = await run(THREE_DRAFTS, { compat: { mode: 'respond_to_user', deliverDrafts: true } });
    expect(partsOf(events).map((p) => [p.part.text, p.turnState])).toEqual([
      ['Tweet one.', 'awaiting'],
      ['Tweet one. Tweet two.', 'awaiting'],
      [LAST, 'awaiting'],
    ]);
    // Each draft went out before the next model call finished.
    const types = events.map((e) => e.type);
    expect(types.indexOf('part.received')).toBeLessThan(types.lastIndexOf('model.usage'));
    expect(settledOf(events)).toMatchObject({ userResponse: LAST, finalContent: 'Work was already marked complete.' });
    expect(out.userResponse).toBe(LAST);
  });

  it('compat:nudge:completion — "INTERNAL_COMPLETION_NUDGE_TEXT": an actor that stops without mark_work_complete gets spec 003\'s nudge and completes', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [{ type: 'text', text: 'I have read the thread.' }] } },
        { when: { on: 'nudge' }, respond: { blocks: [rtu('Here is the thread: one, two, three.'), done('Read the thread aloud.')] } },
      ],
    });
    expect(out.finalizedBy).toBe('complete');
    expect(model.requests).toHaveLength(2);
    // The model may stop (tool_choice auto: its text is internal), and the nudge is spec 003's text.
    expect(model.requests[0]!.toolChoice).toBe('auto');
    expect(model.requests[1]!.messages.at(-1)!.content).toEqual([{ type: 'text', text: `[runtime] ${COMPAT_COMPLETION_NUDGE}` }]);
    expect(COMPAT_COMPLETION_NUDGE).toBe(
      'If all requested work is complete, use respond_to_user to tell the user the result, then call mark_work_complete with a concise summary. Otherwise continue working.',
    );
    // The internal text was not delivered; the respond_to_user text was.
    expect(partsOf(events).map((p) => p.part.text)).toEqual(['Here is the thread: one, two, three.']);
    expect(out).toMatchObject({ userResponse: 'Here is the thread: one, two, three.', finalContent: 'Read the thread aloud.' });
  });

  it('compat:userResponse:fallback-final-text — "falls back to finalContent": past the nudge budget, the last text is delivered and the turn completes', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [{ type: 'text', text: 'Checking the forecast.' }] } },
        { respond: { blocks: [{ type: 'text', text: 'It is sunny in Paris.' }] } },
      ],
    });
    expect(out.finalizedBy).toBe('complete');
    // One call, then one per nudge (maxFreeTextNudges = 2); the third stop settles.
    expect(model.requests).toHaveLength(3);
    expect(model.requests.slice(1).map((r) => r.messages.at(-1)!.content)).toEqual([
      [{ type: 'text', text: `[runtime] ${COMPAT_COMPLETION_NUDGE}` }],
      [{ type: 'text', text: `[runtime] ${COMPAT_COMPLETION_NUDGE}` }],
    ]);
    expect(partsOf(events).map((p) => p.part)).toEqual([{ text: 'It is sunny in Paris.', metadata: { partType: 'response' } }]);
    expect(settledOf(events)).toMatchObject({ userResponse: 'It is sunny in Paris.', finalContent: 'It is sunny in Paris.' });
  });

  it('compat:userResponse:draft-without-completion — a draft then a stop past the nudge budget: the draft is delivered, the text is finalContent', async () => {
    const { out, events } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [rtu('Your meeting is at ten.')] } },
        { respond: { blocks: [{ type: 'text', text: 'Told the user about the meeting.' }] } },
      ],
    });
    expect(out.finalizedBy).toBe('complete');
    expect(partsOf(events).map((p) => p.part.text)).toEqual(['Your meeting is at ten.']);
    expect(out).toMatchObject({ userResponse: 'Your meeting is at ten.', finalContent: 'Told the user about the meeting.' });
  });

  it('compat:respond_to_user:empty-rejected — empty or whitespace text gets the spec error and nothing is delivered', async () => {
    const { out, events, model } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [rtu('   ')] } },
        { when: { call: 1 }, respond: { blocks: [rtu('Here it is.'), { type: 'tool_use', name: 'mark_work_complete', input: {} }] } },
      ],
    });
    const rejected = model.requests[1]!.messages.at(-1)!.content[0] as any;
    expect(rejected.is_error).toBe(true);
    expect(rejected.content).toBe('{"success":false,"error":"text is required"}');
    expect(out.userResponse).toBe('Here it is.');
    expect(partsOf(events).map((p) => p.part.text)).toEqual(['Here it is.']);
  });

  it('compat:json:unreadable-input — "The Anthropic adapter checks every tool input": a repeated key or cut JSON in respond_to_user / mark_work_complete is an is_error result naming it, never a call with {} (a summary silently lost)', async () => {
    const server = await startLoopbackMessagesServer({
      script: [
        { content: [{ type: 'tool_use', name: 'respond_to_user', rawInput: '{"text":"Your flight is at 9.","text":"Your flight is at 7."}' }] },
        // Two refusals: within the respond() retry budget (maxRespondRetries 2).
        { content: [{ type: 'tool_use', name: 'respond_to_user', input: { text: 'Booked.' } }, { type: 'tool_use', name: 'mark_work_complete', rawInput: '{"summary":"boo' }] },
        { content: [{ type: 'tool_use', name: 'mark_work_complete', input: { summary: 'booked' } }] },
      ],
    });
    try {
      const rt = createRuntime({ model: createAnthropicModel({ apiKey: 'sk-test-abcdef', baseURL: server.url }) });
      rt.registries.actors.register({ name: 'voice', system: 'sys', compat: 'respond_to_user' });
      const s = await rt.createSession({ actor: 'voice' });
      const out = await (await s.send('book it')).settled;
      const results = server.requests.slice(1).map((r: any) => r.body.messages.at(-1).content.filter((b: any) => b.type === 'tool_result'));
      expect(results[0]).toMatchObject([{ is_error: true, content: expect.stringContaining('/text twice') }]);
      expect(JSON.parse(results[0]![0].content)).toMatchObject({ success: false });
      expect(results[1]![1]).toMatchObject({ is_error: true, content: expect.stringContaining('mark_work_complete were not valid JSON') });
      expect(out).toMatchObject({ finalizedBy: 'complete', userResponse: 'Booked.', finalContent: 'booked' });
      expect(server.requests).toHaveLength(3);
      await rt.close();
    } finally {
      await server.close();
    }
  });

  it('compat:error:no-userResponse — a turn that fails delivers its error part, not a draft', async () => {
    const { out, events } = await run({
      rules: [
        { when: { call: 0 }, respond: { blocks: [rtu('Draft.')] } },
        { respond: { blocks: [], fail: { code: 'model.authentication', message: 'bad key' } } },
      ],
    });
    expect(out.finalizedBy).toBe('error');
    expect(out.userResponse).toBeUndefined();
    expect(settledOf(events)).not.toHaveProperty('userResponse');
    expect(partsOf(events).map((p) => p.part.metadata.partType)).toEqual(['error']);
  });
});

describe('spec 003 drafts across a restart', () => {
  it('compat:replay:restart — a draft made before the runtime stopped is still the userResponse after recover()', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-compat-'));
    try {
      const path = join(dir, 's.db');
      const script: ModelScript = {
        rules: [
          { when: { on: 'user' }, respond: { blocks: [rtu('Your flight leaves at nine.'), { type: 'tool_use', name: 'notify', input: {} }] } },
          // After the restart the model sees notify's unknown outcome, then completes without a summary.
          { respond: { blocks: [{ type: 'tool_use', name: 'mark_work_complete', input: {} }] } },
        ],
      };
      const build = (handler: () => Promise<unknown>) => {
        const rt = createRuntime({ model: createScriptedModel(script), store: createSqliteStore({ path }) });
        rt.registries.tools.register({ name: 'notify', description: 'Notify', inputSchema: { type: 'object' }, scope: 'generalist', handler });
        rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user', tools: ['notify'] });
        return rt;
      };
      const first = build(() => new Promise(() => undefined)); // never answers: the runtime stops mid-call
      const s = await first.createSession({ actor: 'voice' });
      const called = new Promise<void>((r) => s.events().subscribe((e) => e.type === 'tool.called' && r()));
      await s.send('when do I leave?');
      await called;
      await first.close();

      const second = build(async () => ({ ok: true }));
      expect((await second.recover()).resumed).toEqual([s.id]);
      await (await second.session(s.id))!.idle();
      const events = await second.store.readEvents(s.id, 0);
      expect(partsOf(events).map((p) => p.part.text)).toEqual(['Your flight leaves at nine.']);
      expect(settledOf(events)).toMatchObject({ finalizedBy: 'complete', userResponse: 'Your flight leaves at nine.' });
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('spec 003 userResponse on the wire', () => {
  let srv: Served | undefined;
  let aap: Harness | undefined;
  afterEach(async () => {
    await srv?.close();
    await aap?.close();
    srv = aap = undefined;
  });

  it('compat:sse:last-only — over SSE the three-draft turn carries one response part and turn.settled with userResponse', async () => {
    const rt = createRuntime({ model: createScriptedModel(THREE_DRAFTS) });
    rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user' });
    srv = await serve(rt);
    const s = await rt.createSession({ actor: 'voice', tenantId: 'acme' });
    // The stream replays from seq 0, then goes live: the reader sees the whole turn whenever it connects.
    const reading = readSse(`${srv.base}/sessions/${s.id}/events?token=acme:ann`, { until: (m) => m.some((x) => x.event === 'turn.settled') });
    await (await s.send('read me it', { principal: { tenantId: 'acme', userId: 'ann' } })).settled;
    const got = eventsOf((await reading).messages);
    expect(partsOf(got).map((p) => p.part.text)).toEqual([LAST]);
    expect(settledOf(got)).toMatchObject({ userResponse: LAST, finalContent: 'Work was already marked complete.' });
  });

  it('compat:aap:last-only — over AAP (delta, message, none) the turn\'s text is the last draft and turn_stop / the body carry userResponse', async () => {
    aap = await startHarness({
      script: THREE_DRAFTS,
      setup: (rt) => rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user' }),
    });
    for (const mode of MODES) {
      const id = await createAapSession(aap.url, { name: 'voice' });
      const r = await aapTurn(aap.url, id, user('read me it', mode));
      expect(r.status).toBe(200);
      expect(textOf(r)).toBe(LAST);
      const stop = mode === 'none' ? r.json : r.events.at(-1)!.data;
      expect(stop).toMatchObject({ stopReason: 'end_turn', userResponse: LAST, finalContent: 'Work was already marked complete.' });
      if (mode === 'message') expect(r.events.filter((e) => e.event === 'text').map((e) => e.data.text)).toEqual([LAST]);
    }
  });
});
