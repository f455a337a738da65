/**
 * A2UI surfaces (docs/concepts/surfaces.md): the template registry, validation with
 * @a2ui/web_core (schema + basic catalog), surfaces built for data-bearing tool results and
 * pending approvals, and an actor's own a2ui-surface parts checked inside respond().
 */
import { A2uiMessageListSchema, MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { checkA2uiMessages, checkSurfaceData } from '../../src/envelope/a2ui.js';
import { surfacePartCheck } from '../../src/envelope/surface-check.js';
import { routeSurfaceAction } from '../../src/registries/surface-actions.js';
import { buildSurfaces, SurfaceTemplateError } from '../../src/envelope/surfaces.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { A2UI_BASIC_CATALOG_ID, SurfaceTemplateRegistry } from '../../src/registries/surface-templates.js';
import type { SessionStore } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { replaySession } from '../../src/replay/index.js';
import { createRuntime } from '../../src/runtime.js';
import type { Part, SessionEvent } from '../../src/types.js';
import { answer, dataPart, harness, part, respond } from '../runtime/helpers.js';

const V = 'v0.9';
const create = (surfaceId = 's', catalogId = A2UI_BASIC_CATALOG_ID) => ({ version: V, createSurface: { surfaceId, catalogId } });
const components = (list: unknown[], surfaceId = 's') => ({ version: V, updateComponents: { surfaceId, components: list } });
const model = (value: unknown, surfaceId = 's') => ({ version: V, updateDataModel: { surfaceId, path: '/', value } });
const VALID = [
  create(),
  components([
    { id: 'root', component: 'Column', children: ['t', 'b'] },
    { id: 't', component: 'Text', text: { path: '/title' } },
    { id: 'b', component: 'Button', child: 'bl', action: { event: { name: 'go', context: { id: { path: '/id' } } } } },
    { id: 'bl', component: 'Text', text: 'Go' },
  ]),
  model({ title: 'Hello', id: 7 }),
];

/** What the official library says of a message list: its schema, its catalog, its processor. */
function officialVerdict(messages: unknown[]): void {
  A2uiMessageListSchema.parse(messages);
  for (const m of messages as Record<string, any>[]) {
    for (const c of m.updateComponents?.components ?? []) {
      const { id: _id, component, ...props } = c;
      const api = basicCatalog.components.get(component);
      expect(api, `component ${component}`).toBeDefined();
      api!.schema.parse(props);
    }
  }
  new MessageProcessor([basicCatalog]).processMessages(messages as any);
}

describe('surfaces: A2UI v0.9 validation', () => {
  it('surfaces:a2ui:valid — a list of single-key messages on the basic catalog passes, and the official library agrees', () => {
    expect(checkA2uiMessages(VALID)).toEqual([]);
    officialVerdict(VALID);
  });

  const invalid: [string, unknown, string, RegExp][] = [
    ['spec 001\'s combined object', { messages: [{ version: V, createSurface: create().createSurface, updateComponents: components([]).updateComponents }] }, '/messages/0', /has createSurface and updateComponents: each A2UI message carries exactly one of them/],
    ['spec 001\'s data object without messages (three messages in one)', { version: V, createSurface: create().createSurface, updateDataModel: model({}).updateDataModel, updateComponents: components([]).updateComponents }, '', /^has createSurface and updateComponents and updateDataModel: each A2UI v0.9 message carries exactly one of them; give data \{ messages: \[\.\.\.\] \} with 3 messages/],
    ['spec 001\'s catalog id', { messages: [create('s', 'https://a2ui.org/specification/v0_9/basic_catalog.json'), ...VALID.slice(1)] }, '/messages/0/createSurface/catalogId', /is not a catalog this runtime renders; use the basic catalog/],
    ['a component not in the basic catalog', { messages: [create(), components([{ id: 'root', component: 'Bogus' }])] }, '/messages/1/updateComponents/components/0/component', /"Bogus" is not a component of the A2UI basic catalog; use one of Text, Button/],
    ['a Button with a text property (its label is a child)', { messages: [create(), components([{ id: 'root', component: 'Button', child: 'l', text: 'Go' }, { id: 'l', component: 'Text', text: 'Go' }])] }, '/messages/1/updateComponents/components/0/text', /unknown property "text"/],
    ['a Text without text', { messages: [create(), components([{ id: 'root', component: 'Text' }])] }, '/messages/1/updateComponents/components/0/text', /^is required$/],
    ['no root component', { messages: [create(), components([{ id: 'top', component: 'Text', text: 'x' }])] }, '/messages/1/updateComponents/components', /has no component with id "root"/],
    ['a wrong version', { messages: [{ version: 'v0.8', createSurface: create().createSurface }] }, '/messages/0/version', /Invalid enum value. Expected 'v0.9'/],
    ['an unknown createSurface field', { messages: [{ version: V, createSurface: { ...create().createSurface, colour: 'red' } }] }, '/messages/0/createSurface/colour', /unknown property "colour"/],
    ['a second createSurface of one surface', { messages: [create(), create(), ...VALID.slice(1)] }, '/messages/1/createSurface/surfaceId', /already created by message 0/],
    ['messages that are not a list', { messages: { version: V } }, '/messages', /must be an array of A2UI v0.9 messages/],
  ];
  for (const [what, data, path, message] of invalid) {
    it(`surfaces:a2ui:rejected — ${what} is rejected at ${path || '(the data)'}`, () => {
      const problems = checkSurfaceData(data);
      expect(problems.map((p) => p.path)).toContain(path);
      expect(problems.find((p) => p.path === path)!.message).toMatch(message);
    });
  }
});

describe('surfaces: one A2UI message as the part\'s data (spec 000 "Peer-agent response with envelope")', () => {
  it('surfaces:a2ui:one-message — "data": { "version": "v0.9", "createSurface": { ... } }: one A2UI message is checked as the list [message], paths from the data, and normalised to { messages: [message] }', () => {
    expect(checkSurfaceData(create())).toEqual([]);
    expect(surfacePartCheck.normalize!(create())).toEqual({ messages: [create()] });
    expect(surfacePartCheck.normalize!({ messages: VALID })).toBeUndefined();
    const wrongCatalog = checkSurfaceData(create('s', 'https://a2ui.org/specification/v0_9/basic_catalog.json'));
    expect(wrongCatalog).toEqual([{ path: '/createSurface/catalogId', message: expect.stringMatching(/is not a catalog this runtime renders/) }]);
    // As in a list of one: an update of a surface the message does not create is refused.
    expect(checkSurfaceData(model({ n: 1 })).map((p) => p.path)).toEqual(['/updateDataModel/surfaceId']);
    expect(checkSurfaceData({ ...create(), note: 'x' }).map((p) => p.path)).toEqual(['/note']);
  });

  it('surfaces:a2ui:one-message — an object holding several messages is refused saying so, naming them; an object holding none names the two forms', () => {
    const several = checkSurfaceData({ version: V, createSurface: create().createSurface, updateComponents: components([]).updateComponents });
    expect(several).toEqual([{ path: '', message: expect.stringContaining('has createSurface and updateComponents: each A2UI v0.9 message carries exactly one of them') }]);
    expect(several[0]!.message).toContain('{ messages: [...] }');
    const none = checkSurfaceData({ surfaceId: 's' });
    expect(none).toEqual([{ path: '', message: expect.stringContaining('{ messages: [...] }') }]);
    expect(none[0]!.message).toContain('one A2UI v0.9 message');
    expect(none[0]!.message).not.toContain('holding several');
  });
});

describe('surfaces: message order within a list', () => {
  // The oracle test gives each part's list to a fresh MessageProcessor, so a list must stand on
  // its own: each surface is created in it before it is updated, and nothing follows its delete.
  const remove = (surfaceId = 's') => ({ version: V, deleteSurface: { surfaceId } });
  const refused: [string, unknown[], string, RegExp][] = [
    ['an updateDataModel before the createSurface', [model({ title: 'x', id: 1 }), ...VALID.slice(0, 2)], '/messages/0/updateDataModel/surfaceId', /surface "s" is not created before this message: put its createSurface first/],
    ['an updateComponents before the createSurface', [VALID[1], VALID[0], VALID[2]], '/messages/0/updateComponents/surfaceId', /surface "s" is not created before this message/],
    ['an update of a surface the list never creates', [...VALID, components([{ id: 'root', component: 'Text', text: 'x' }], 'other')], '/messages/3/updateComponents/surfaceId', /surface "other" is not created before this message/],
    ['an update after the deleteSurface', [...VALID, remove(), model({ title: 'late' })], '/messages/4/updateDataModel/surfaceId', /surface "s" is deleted by message 3; no message for it may follow its deleteSurface/],
  ];
  it('surfaces:a2ui:order — "Nothing invalid is ever published": a message for a surface before its createSurface or after its deleteSurface in the same list is rejected at its path, as the MessageProcessor refuses it; a list in order passes and the processor accepts it', () => {
    for (const [what, messages, path, message] of refused) {
      const problems = checkSurfaceData({ messages });
      expect(problems.map((p) => p.path), what).toContain(path);
      expect(problems.find((p) => p.path === path)!.message, what).toMatch(message);
      expect(() => new MessageProcessor([basicCatalog]).processMessages(structuredClone(messages) as any), what).toThrow(/Surface not found/);
    }
    // In order: two surfaces interleaved, one deleted last, and a delete of a surface an earlier
    // part created (a no-op for the processor, so not refused).
    const ok = [...VALID, create('t'), model({ n: 1 }, 't'), components([{ id: 'root', component: 'Text', text: { path: '/n' } }], 't'), remove('s'), remove('earlier')];
    expect(checkA2uiMessages(ok)).toEqual([]);
    officialVerdict(ok);
  });

  it('surfaces:build:invalid-order — "Nothing invalid is ever published": a template whose updateDataModel comes before its createSurface yields no part and an error naming the path', () => {
    const r = new SurfaceTemplateRegistry();
    r.register({ kind: 'flights', build: (data, ctx) => [model(data, ctx.surfaceId), create(ctx.surfaceId, ctx.catalogId), components([{ id: 'root', component: 'Text', text: 'hi' }], ctx.surfaceId)] });
    const { parts, errors } = buildSurfaces(r, [{ kind: 'flights', data: { flights: [] }, sessionId: 'S', turnId: 'T', callId: 'toolu_1' }]);
    expect(parts).toEqual([]);
    expect(errors[0]!.message).toMatch(/^surface template 'flights' built an invalid A2UI surface: \/0\/updateDataModel\/surfaceId: surface "flights:toolu_1" is not created before this message/);
  });
});

describe('surfaces: the template registry and buildSurfaces', () => {
  it('surfaces:registry:rules — a kind is validated, registered once, and needs a build function', () => {
    const r = new SurfaceTemplateRegistry();
    r.register({ kind: 'flights', build: () => VALID });
    expect(() => r.register({ kind: 'flights', build: () => VALID })).toThrow(/a surface template for data kind 'flights' is already registered/);
    expect(() => r.register({ kind: '9 lives', build: () => VALID })).toThrow(/surface template kind "9 lives" is invalid/);
    expect(() => r.register({ kind: 'x', build: 'no' as never })).toThrow(/surface template 'x': build must be a function/);
    expect(r.list().map((t) => t.kind)).toEqual(['flights']);
  });

  it('surfaces:build:template — a template gets a surface id per call and the basic catalog id; its messages become one a2ui-surface part', () => {
    const r = new SurfaceTemplateRegistry();
    r.register({ kind: 'greeting', build: (data, ctx) => [create(ctx.surfaceId, ctx.catalogId), components([{ id: 'root', component: 'Text', text: { path: '/hi' } }], ctx.surfaceId), model(data, ctx.surfaceId)] });
    const { parts, errors } = buildSurfaces(r, [
      { kind: 'greeting', data: { hi: 'hello' }, sessionId: 'S', turnId: 'T', callId: 'c1' },
      { kind: 'no-template', data: {}, sessionId: 'S', turnId: 'T', callId: 'c2' },
    ]);
    expect(errors).toEqual([]);
    expect(parts).toHaveLength(1);
    expect(parts[0]!.metadata).toEqual({ partType: 'a2ui-surface', mimeType: 'application/a2ui+json', surfaceId: 'greeting:c1', kind: 'greeting', callId: 'c1', source: 'template' });
    expect(checkSurfaceData(parts[0]!.data)).toEqual([]);
  });

  it('surfaces:build:invalid — a template that builds invalid A2UI, or throws, yields no part and an error naming the template and the path', () => {
    const r = new SurfaceTemplateRegistry();
    r.register({ kind: 'broken', build: (_d, ctx) => [create(ctx.surfaceId), components([{ id: 'root', component: 'Carousel' }], ctx.surfaceId)] });
    r.register({ kind: 'throws', build: () => { throw new Error('no flights'); } });
    const src = { data: {}, sessionId: 'S', turnId: 'T', callId: 'c' };
    const { parts, errors } = buildSurfaces(r, [{ kind: 'broken', ...src }, { kind: 'throws', ...src }]);
    expect(parts).toEqual([]);
    expect(errors.map((e) => e instanceof SurfaceTemplateError && e.kind)).toEqual(['broken', 'throws']);
    expect(errors[0]!.message).toMatch(/^surface template 'broken' built an invalid A2UI surface: \/1\/updateComponents\/components\/0\/component: "Carousel" is not a component/);
    expect(errors[1]!.message).toContain("surface template 'throws' built an invalid A2UI surface: (the list): build threw: no flights");
  });
});

describe('surfaces: actions', () => {
  it('surfaces:action:route — approve/deny with a context approvalId answer that approval; any other action is a follow-up message naming the action, its surface and its context', () => {
    const base = { surfaceId: 'x:c1', sourceComponentId: 'b' };
    expect(routeSurfaceAction({ ...base, name: 'deny', context: { approvalId: 'appr_1', reason: 'too dear' } })).toEqual({ kind: 'approval', approvalId: 'appr_1', approved: false, reason: 'too dear' });
    expect(routeSurfaceAction({ ...base, name: 'pick', context: { flightId: 'TS205' } })).toEqual({ kind: 'message', text: '[surface action] pick on x:c1 (b)\n{"flightId":"TS205"}' });
  });

  it('surfaces:action:approval-id — "an action named approve or deny … MUST answer that approval": without a non-empty string approvalId (42, null, {}, "", missing) it is invalid at /action/context/approvalId, never a follow-up message telling the model "approve"', () => {
    const base = { surfaceId: 'x:c1', sourceComponentId: 'b' };
    for (const name of ['approve', 'deny']) {
      for (const context of [{ approvalId: 42 }, { approvalId: null }, { approvalId: {} }, { approvalId: '' }, {}]) {
        const route = routeSurfaceAction({ ...base, name, context });
        expect(route, `${name} ${JSON.stringify(context)}`).toEqual({ kind: 'invalid', path: '/action/context/approvalId', message: expect.stringMatching(/^\/action\/context\/approvalId must be a non-empty string, the id of the approval/) });
      }
    }
  });
});

describe('surfaces: an actor\'s a2ui-surface parts are checked by respond()', () => {
  const setup = (surface: unknown) => {
    const h = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(respond([part('response', 'Look:'), dataPart('a2ui-surface', surface as Record<string, unknown>)], 'complete')) },
        { when: { on: 'rejection' }, respond: answer(respond([part('response', 'No surface this time.')], 'complete')) },
      ],
    });
    h.rt.registries.actors.register({ name: 'ui', system: 'x' });
    return h;
  };

  it('surfaces:respond:valid — a valid surface part is delivered as the actor wrote it', async () => {
    const { rt } = setup({ messages: VALID });
    const s = await rt.createSession({ actor: 'ui' });
    const out = await (await s.send('show me')).settled;
    expect(out.parts.find((p) => p.metadata.partType === 'a2ui-surface')?.data).toEqual({ messages: VALID });
    await rt.close();
  });

  it('surfaces:respond:one-message — spec 000\'s a2ui-surface part (one A2UI message as its data) is accepted and delivered as { messages: [message] }, the form every consumer reads', async () => {
    const msg = create('flights');
    const { rt, model: m } = setup(msg);
    const s = await rt.createSession({ actor: 'ui' });
    const rec: SessionEvent[] = [];
    s.events().subscribe((e) => rec.push(e));
    const out = await (await s.send('show me')).settled;
    expect(m.requests).toHaveLength(1);
    expect(out.finalizedBy).toBe('complete');
    const delivered = out.parts.find((p) => p.metadata.partType === 'a2ui-surface');
    expect(delivered?.data).toEqual({ messages: [msg] });
    expect(out.envelope?.parts.find((p) => p.metadata.partType === 'a2ui-surface')?.data).toEqual({ messages: [msg] });
    const published = rec.find((e): e is Extract<SessionEvent, { type: 'part.received' }> => e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface');
    expect(published?.part.data).toEqual({ messages: [msg] });
    officialVerdict(delivered!.data!.messages as unknown[]);
    await rt.close();
  });

  it('surfaces:respond:rejected — an invalid surface is a respond() rule violation (respond:a2ui-surface:valid) naming the path; nothing of the call is delivered and the model retries', async () => {
    const { rt } = setup({ messages: [create(), components([{ id: 'root', component: 'Bogus' }])] });
    const s = await rt.createSession({ actor: 'ui' });
    const out = await (await s.send('show me')).settled;
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['response']);
    expect(out.parts[0]!.text).toBe('No surface this time.');
    const rejection = (await s.mailbox()).find((m) => m.kind === 'tool_result' && m.isError);
    const content = rejection?.kind === 'tool_result' ? rejection.content : '';
    expect(content).toContain('/parts/1/data/messages/1/updateComponents/components/0/component: "Bogus" is not a component of the A2UI basic catalog');
    expect(content).toContain('[respond:a2ui-surface:valid]');
    await rt.close();
  });
});

describe('surfaces: the travel desk', () => {
  async function deskRun(): Promise<{ events: SessionEvent[]; desk: ReturnType<typeof createTravelDesk>; store: SessionStore; sessionId: string }> {
    const store = createMemoryStore();
    const rt = createRuntime({ model: createScriptedModel(travelDeskScript()), store });
    const desk = createTravelDesk(rt);
    const s = await rt.createSession({ actor: 'triage' });
    await (await s.send('find flights to Corfu')).settled;
    const booking = await (await s.send('book TS101')).settled;
    expect(booking.finalizedBy).toBe('suspended');
    const events = await rt.store.readEvents(s.id, 0);
    const requested = events.find((e) => e.type === 'approval.requested');
    // The Approve button's action, as the page sends it, answers the approval.
    const surface = events.find((e): e is Extract<SessionEvent, { type: 'part.received' }> => e.type === 'part.received' && e.part.metadata.kind === 'approval:book_flight');
    const approveButton = (surface!.part.data!.messages as any[])[1].updateComponents.components.find((c: any) => c.id === 'approve');
    const model = (surface!.part.data!.messages as any[])[2].updateDataModel.value;
    const route = routeSurfaceAction({ name: approveButton.action.event.name, surfaceId: surface!.part.metadata.surfaceId as string, sourceComponentId: 'approve', context: { approvalId: model.approvalId } });
    expect(route).toEqual({ kind: 'approval', approvalId: requested?.type === 'approval.requested' ? requested.approvalId : '', approved: true });
    await s.answerApproval(route.kind === 'approval' ? route.approvalId : '', { approved: true }, { userId: 'u' }, 'test');
    await s.idle();
    const all = await rt.store.readEvents(s.id, 0);
    return { events: all, desk, store, sessionId: s.id };
  }

  it('surfaces:desk:built — a search result (kind flights) and a pending booking (approval:book_flight) each publish an a2ui-surface part; the booking surface shows the flight with Approve and Deny, and approving runs the booking', async () => {
    const { events, desk } = await deskRun();
    const surfaces = events.filter((e): e is Extract<SessionEvent, { type: 'part.received' }> => e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface');
    expect(surfaces.map((e) => e.part.metadata.kind)).toEqual(['flights', 'approval:book_flight']);
    // The flights surface follows its tool result; the booking surface follows its approval request.
    const idx = (pred: (e: SessionEvent) => boolean) => events.findIndex(pred);
    expect(idx((e) => e === surfaces[0])).toBe(idx((e) => e.type === 'tool.result' && e.tool === 'search_flights') + 1);
    expect(idx((e) => e === surfaces[1])).toBe(idx((e) => e.type === 'part.received' && e.part.metadata.partType === 'approval-request') + 1);
    const booking = surfaces[1]!.part.data!.messages as any[];
    const labels = booking[1].updateComponents.components.filter((c: any) => c.component === 'Text' && typeof c.text === 'string').map((c: any) => c.text);
    expect(labels).toEqual(expect.arrayContaining(['Book flight TS101?', 'Approve', 'Deny']));
    // From the call's arguments and the app's timetable (what a replay has too), not the search's route.
    expect(booking[2].updateDataModel.value.flight).toEqual({ id: 'TS101', departs: '2026-06-12 11:15 UTC', price: 94, currency: 'EUR' });
    expect([...desk.bookings.values()].map((b) => b.flightId)).toEqual(['TS101']);
    // Neither surface carries the audit-only field (the booking surface reads the app's timetable, which holds it).
    expect(JSON.stringify(surfaces[0]!.part.data)).not.toContain('supplierCost');
    expect(JSON.stringify(surfaces[1]!.part.data)).not.toContain('supplierCost');
  });

  it('surfaces:oracle — @a2ui/web_core accepts every surface the runtime emitted (schema, basic catalog, processor), surfaces of the settled envelope included', async () => {
    const { events } = await deskRun();
    const emitted: Part[] = [];
    for (const e of events) {
      if (e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface') emitted.push(e.part);
      if (e.type === 'envelope.settled') emitted.push(...e.envelope.parts.filter((p) => p.metadata.partType === 'a2ui-surface'));
    }
    expect(emitted.length).toBeGreaterThanOrEqual(2);
    for (const p of emitted) officialVerdict(p.data!.messages as unknown[]);
  });

  it('surfaces:replay — a recorded travel desk session replays identically without the app\'s templates: the replay serves each call\'s recorded surface', async () => {
    const { store, sessionId } = await deskRun();
    const r = await replaySession(store, sessionId);
    expect(r.diff.differences).toEqual([]);
    const kinds = (events: readonly SessionEvent[]) => events.flatMap((e) => (e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface' ? [e.part.metadata.kind] : []));
    expect(kinds(r.events)).toEqual(['flights', 'approval:book_flight']);
  });
});
