/**
 * The delivery table, driven by the registry (docs/concepts/delivery.md): one recorded turn with
 * every kind of part, projected onto SSE, WebSocket, AAP (delta, message, none), the buffered
 * view and the four channels. Each row is a registry entry and a target; what the view must hold
 * is computed from that entry's rule, never listed by hand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivery } from '../../src/envelope/delivery.js';
import { renderForChannel, type ChannelMessage } from '../../src/envelope/channels.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { respondNotes } from '../../src/respond/notes.js';
import { CHANNEL_KINDS } from '../../src/registries/part-types.js';
import type { ChannelKind } from '../../src/registries/types.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { PART_BOUNDARY } from '../../src/transports/aap/projector.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import type { Envelope, Part, SessionEvent } from '../../src/types.js';
import { WsClient, eventsOf, readSse } from '../transports/streams/clients.js';
import { api, createSession, turn, user, type TurnResult } from '../transports/aap/helpers.js';
import { TURN_SCRIPT, registerDesk, turnRegistries } from './turn.fixture.js';

const registries = turnRegistries();
const delivery = createDelivery(registries.partTypes);
const TARGETS = ['streaming', 'buffered', ...CHANNEL_KINDS] as const;
const ROWS = registries.partTypes.list().flatMap((def) => TARGETS.map((target) => ({ partType: def.id, target, rule: registries.partTypes.deliveryFor(def.id, target) })));

let rt: TurnstateRuntime;
let server: RunningServer;
let sessionId: string;
let log: SessionEvent[];
let envelope: Envelope;
let sse: SessionEvent[];
let ws: SessionEvent[];
const aap: Partial<Record<'delta' | 'message' | 'none', TurnResult>> = {};
const channels: Partial<Record<ChannelKind, ChannelMessage>> = {};

/** The id of the itinerary the turn's tool stored (artifact ids are random). */
function artifactIdOf(env: Envelope): string {
  const part = env.parts.find((p) => p.metadata.partType === 'artifact');
  return String((part?.data as { artifactId?: unknown } | undefined)?.artifactId);
}

beforeAll(async () => {
  rt = createRuntime({ model: createScriptedModel(TURN_SCRIPT), registries });
  registerDesk(rt);
  server = await startServer({
    runtime: rt,
    port: 0,
    transports: [createAapTransport({ runtime: rt, basePath: '/aap' }), createStreamsTransport({ runtime: rt })],
  });
  // The same scripted turn through each AAP stream mode, each in its own session.
  for (const mode of ['none', 'message', 'delta'] as const) {
    const sid = await createSession(`${server.url}/aap`, { name: 'desk' });
    aap[mode] = await turn(`${server.url}/aap`, sid, user('flights to Corfu', mode));
    expect(aap[mode]!.status).toBe(200);
    sessionId = sid;
  }
  log = await rt.store.readEvents(sessionId, 0);
  const settled = log.find((e) => e.type === 'envelope.settled');
  if (settled?.type !== 'envelope.settled') throw new Error('the turn settled no envelope');
  envelope = settled.envelope;
  sse = eventsOf((await readSse(`${server.url}/sessions/${sessionId}/events`, { until: (m) => m.some((x) => x.event === 'turn.settled') })).messages);
  const c = await WsClient.connect(server.url.replace('http', 'ws') + '/ws');
  c.send({ type: 'subscribe', sessionId });
  await c.next((f) => f.type === 'event' && f.event.type === 'turn.settled');
  ws = c.events(sessionId);
  c.close();
  for (const kind of CHANNEL_KINDS) channels[kind] = renderForChannel(delivery, kind, envelope);
}, 30_000);
afterAll(async () => server?.close());

const emitted = (): Part[] => log.flatMap((e) => (e.type === 'part.received' ? [e.part] : []));
const typesOf = (parts: readonly Part[]): Set<string> => new Set(parts.map((p) => p.metadata.partType));
const receivedIn = (events: SessionEvent[]): Part[] => events.flatMap((e) => (e.type === 'part.received' ? [e.part] : []));
const envelopeIn = (events: SessionEvent[]): Part[] => {
  const e = events.find((x) => x.type === 'envelope.settled');
  return e?.type === 'envelope.settled' ? e.envelope.parts : [];
};

describe('delivery:table — one recorded turn, every view, rules from the registry', () => {
  it('delivery:turn:whole-envelope — the recorded turn carries every part kind the table needs', () => {
    const types = typesOf(emitted());
    for (const t of ['ack', 'thinking', 'reasoning-trace', 'progress', 'response', 'domain-data', 'llm-context', 'artifact', 'citation', 'a2ui-surface', 'audio', 'ops-note']) {
      expect(types.has(t), t).toBe(true);
    }
    // Two tools' records and the actor's own domain-data, merged into one object.
    const data = envelope.parts.filter((p) => p.metadata.partType === 'domain-data');
    expect(data).toHaveLength(1);
    expect(Object.keys(data[0]!.data!).sort()).toEqual(['check_prices', 'route', 'search_flights']);
    expect(envelope.meta.warnings).toBeUndefined();
  });

  it.each(ROWS)('delivery:rule — $partType on $target is "$rule"', ({ partType, target, rule }) => {
    const inTurn = emitted().some((p) => p.metadata.partType === partType);
    const inEnvelope = envelope.parts.some((p) => p.metadata.partType === partType);
    if (target === 'streaming') {
      // SSE and WebSocket get the part (and its deltas) unless the rule drops it; so does the envelope they relay.
      for (const got of [sse, ws]) {
        expect(typesOf(receivedIn(got)).has(partType)).toBe(inTurn && rule !== 'drop');
        expect(typesOf(envelopeIn(got)).has(partType)).toBe(inEnvelope && rule !== 'drop');
        const ids = new Set(log.flatMap((e) => (e.type === 'part.received' && e.part.metadata.partType === partType ? [`${e.callId}/${e.index}`] : [])));
        const deltas = got.filter((e) => e.type === 'part.delta' && ids.has(`${e.callId}/${e.index}`));
        if (rule === 'drop') expect(deltas).toEqual([]);
      }
      // AAP (every mode) shows the part as text or thinking by its transcript class, which a drop rule clears.
      const cls = delivery.transcript(partType);
      if (rule === 'drop') expect(cls).toBeUndefined();
      return;
    }
    if (target === 'buffered') {
      const view = delivery.buffered({ envelope, parts: emitted() });
      expect(typesOf(view.parts).has(partType)).toBe(inEnvelope && rule !== 'drop');
      return;
    }
    const msg = channels[target as ChannelKind]!;
    const dropped = msg.dropped.includes(partType);
    const attached = msg.attachments.some((a) => a.partType === partType);
    const inBody = msg.envelope?.parts.some((p) => p.metadata.partType === partType) ?? false;
    expect(dropped).toBe(inEnvelope && rule === 'drop');
    if (!inEnvelope) return expect(attached || inBody).toBe(false);
    const part = envelope.parts.find((p) => p.metadata.partType === partType)!;
    if (target === 'webhook') return expect(inBody).toBe(rule !== 'drop');
    expect(attached).toBe(rule === 'attach' || (rule === 'deliver' && part.data !== undefined));
    if (rule === 'render-as-text') expect(msg.text).toContain(delivery.apply(part, 'render-as-text')!.text);
  });

  it('delivery:streaming:unchanged — SSE and WebSocket carry every other event of the log unchanged, in order', () => {
    const streamingDrop = new Set(registries.partTypes.list().filter((d) => d.meta.delivery.streaming === 'drop').map((d) => d.id));
    const droppedIds = new Set(log.flatMap((e) => (e.type === 'part.received' && streamingDrop.has(e.part.metadata.partType) ? [`${e.callId}/${e.index}`] : [])));
    const kept = log.filter(
      (e) =>
        e.type !== 'envelope.settled' &&
        !(e.type === 'part.received' && streamingDrop.has(e.part.metadata.partType)) &&
        !(e.type === 'part.delta' && droppedIds.has(`${e.callId}/${e.index}`)),
    );
    for (const got of [sse, ws]) expect(got.filter((e) => e.type !== 'envelope.settled')).toEqual(kept);
  });

  it('delivery:aap:transcript — each AAP mode shows exactly the parts whose transcript class is text or thinking, in order, with a boundary between parts', () => {
    const shown = (cls: 'text' | 'thinking'): string[] => emitted().filter((p) => delivery.transcript(p.metadata.partType) === cls && (p.text ?? '') !== '').map((p) => p.text!);
    const texts = shown('text');
    const thinking = shown('thinking');
    expect(texts.length).toBeGreaterThan(1);
    expect(thinking.length).toBeGreaterThan(1);
    const m = aap.message!.events;
    expect(m.filter((e) => e.event === 'text').map((e) => e.data.text)).toEqual(texts);
    expect(m.filter((e) => e.event === 'thinking').map((e) => e.data.thinking)).toEqual(thinking);
    const d = aap.delta!.events;
    expect(d.filter((e) => e.event === 'text_delta').map((e) => e.data.delta).join('')).toBe(texts.join(PART_BOUNDARY));
    expect(d.filter((e) => e.event === 'thinking_delta').map((e) => e.data.delta).join('')).toBe(thinking.join(PART_BOUNDARY));
    const blocks = (aap.none!.json.messages as any[]).filter((x) => x.role === 'assistant').flatMap((x) => (typeof x.content === 'string' ? [{ type: 'text', text: x.content }] : x.content));
    expect(blocks.filter((b: any) => b.type === 'text').map((b: any) => b.text)).toEqual(texts);
    expect(blocks.filter((b: any) => b.type === 'thinking').map((b: any) => b.thinking)).toEqual(thinking);
  });

  it('aap:delta:part-boundary — in delta mode the ack and the response stay apart: a boundary delta comes between them, never "Corfu.I found"', () => {
    const text = aap.delta!.events.filter((e) => e.event === 'text_delta').map((e) => e.data.delta).join('');
    expect(text).toBe(`Looking up flights to Corfu.${PART_BOUNDARY}I found 2 direct flights to Corfu; TS205 is cheapest at EUR 42.`);
    expect(aap.delta!.events.some((e) => e.event === 'text_delta' && e.data.delta === PART_BOUNDARY)).toBe(true);
  });

  it('delivery:consumer:own-metadata — the consumer audio part streams (at once) and is dropped by buffered delivery; WhatsApp would attach it by its own rule', () => {
    const audio = delivery.of('audio')!;
    expect(audio).toMatchObject({ streaming: 'deliver', buffered: 'drop', flush: 'at-once', serialisation: 'base64' });
    expect(audio.channels.whatsapp).toBe('attach');
    expect(typesOf(receivedIn(sse)).has('audio')).toBe(true);
    expect(typesOf(delivery.buffered({ envelope, parts: emitted() }).parts).has('audio')).toBe(false);
  });

  it('delivery:channels:sms — the SMS body is the response as plain text and the artifact as a URL-style reference; data parts are left out', () => {
    const sms = channels.sms!;
    expect(sms.text).toBe(`I found 2 direct flights to Corfu; TS205 is cheapest at EUR 42.\n\nitinerary.pdf: artifact:${artifactIdOf(envelope)}`);
    expect(sms.attachments).toEqual([]);
    expect(sms.dropped).toEqual(expect.arrayContaining(['domain-data', 'a2ui-surface', 'reasoning-trace', 'citation', 'ops-note']));
  });

  it('delivery:channels:email — response, citation and the operator note in the body; domain-data and the artifact attached', () => {
    const email = channels.email!;
    expect(email.text.split('\n\n')).toEqual([
      'I found 2 direct flights to Corfu; TS205 is cheapest at EUR 42.',
      'Source: Flight search (https://fares.example/TS205)',
      'Upsell travel insurance next time.',
    ]);
    expect(email.attachments.map((a) => [a.partType, a.serialisation, a.mimeType])).toEqual([
      ['domain-data', 'json', undefined],
      ['artifact', 'json', 'application/pdf'],
    ]);
  });

  it('delivery:channels:webhook — the POST body is the envelope as settled (every part kept, nothing attached)', () => {
    expect(channels.webhook!.envelope).toEqual(envelope);
    expect(channels.webhook!.text).toBe('');
  });

  it('respond:note:audit-only — the note of respond() is in the mailbox for audit and in no event, envelope or AAP response', async () => {
    const session = await rt.session(sessionId);
    const notes = respondNotes(await session!.mailbox());
    expect(notes).toEqual([{ turnId: expect.any(String), actor: 'desk', callId: expect.any(String), at: expect.any(String), note: 'audit: user asked for Corfu' }]);
    for (const got of [log, sse, ws]) expect(JSON.stringify(got)).not.toContain('audit: user asked for Corfu');
    for (const mode of ['delta', 'message', 'none'] as const) expect(aap[mode]!.raw).not.toContain('audit: user asked for Corfu');
    const history = await api(`${server.url}/aap`, `/sessions/${sessionId}/history?type=full`);
    expect(history.raw).not.toContain('audit: user asked for Corfu');
  });
});

/** Rows for a rule that no part of this turn exercises would assert nothing: every target's rules must appear. */
it('delivery:table:coverage — the turn exercises every rule the registry uses, on every target', () => {
  const seen = new Set<string>();
  const inTurn = new Set(['ack', 'thinking', 'reasoning-trace', 'progress', 'response', 'domain-data', 'llm-context', 'artifact', 'citation', 'a2ui-surface', 'audio', 'ops-note']);
  for (const r of ROWS) if (inTurn.has(r.partType)) seen.add(`${r.target}:${r.rule}`);
  const used = new Set(ROWS.map((r) => `${r.target}:${r.rule}`));
  expect([...used].filter((u) => !seen.has(u))).toEqual([]);
});
