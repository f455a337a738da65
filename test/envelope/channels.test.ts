/** Channel renderers, text renderings and the buffered view (docs/concepts/delivery.md). */
import { describe, expect, it } from 'vitest';
import { renderForChannel } from '../../src/envelope/channels.js';
import { createDelivery } from '../../src/envelope/delivery.js';
import { renderPartText } from '../../src/envelope/render.js';
import { CHANNEL_KINDS } from '../../src/registries/part-types.js';
import { createRegistries } from '../../src/create-registries.js';
import type { Envelope, Part, SessionEvent } from '../../src/types.js';

const text = (partType: string, t: string): Part => ({ text: t, metadata: { partType } });
const data = (partType: string, d: Record<string, unknown>): Part => ({ data: d, metadata: { partType } });
const meta = { sessionId: 's', turnId: 't', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' };

function registries() {
  const r = createRegistries();
  r.partTypes.register({
    id: 'voucher',
    meta: {
      description: 'A voucher file; buffered transports attach it.',
      streamingPreferred: false,
      dataBearing: true,
      delivery: { streaming: 'render-as-text', buffered: 'attach' },
      inEnvelope: true,
      modelEmittable: true,
      carries: 'data',
      serialisation: 'base64',
    },
  });
  return r;
}

describe('delivery: text renderings', () => {
  it('delivery:render:artifact — an artifact renders as name: link from the link maker, never a url of the part, or as an artifact: reference without one', () => {
    expect(renderPartText(data('artifact', { artifactId: 'a1', mimeType: 'image/png', sizeBytes: 9, name: 'map.png', url: 'https://cdn.example/a1' }))).toBe('map.png: artifact:a1');
    expect(renderPartText(data('artifact', { artifactId: 'a1', mimeType: 'image/png', sizeBytes: 9, name: 'map.png' }), { artifactUrl: (id) => `https://desk.example/artifacts/${id}?sig=x` })).toBe('map.png: https://desk.example/artifacts/a1?sig=x');
    expect(renderPartText(data('artifact', { artifactId: 'a1', mimeType: 'image/png', sizeBytes: 9 }))).toBe('a1: artifact:a1');
  });

  it('delivery:render:approval-request — the question a human channel asks, with the arguments', () => {
    expect(renderPartText(data('approval-request', { tool: 'book_flight', args: { flightId: 'TS205' } }))).toBe('Approval needed: book_flight {"flightId":"TS205"}');
  });

  it('delivery:render:citation — title and URL; a text citation its text as the source ("a citation is `Source: title (url)`")', () => {
    expect(renderPartText(data('citation', { path: '/x', title: 'Fares', url: 'https://f.example' }))).toBe('Source: Fares (https://f.example)');
    expect(renderPartText({ text: 'The fare sheet', metadata: { partType: 'citation', path: '/x' } })).toBe('Source: The fare sheet');
  });
});

describe('delivery: channels and the buffered view', () => {
  const r = registries();
  const delivery = createDelivery(r.partTypes);
  const envelope: Envelope = {
    role: 'agent',
    parts: [
      text('response', 'Booked.'),
      data('domain-data', { booking: 'BK1' }),
      data('voucher', { base64: 'AAAA', mimeType: 'application/pdf' }),
      data('approval-request', { tool: 'book_flight', args: {} }),
    ],
    meta,
  };

  it('delivery:channels:fallback — a consumer type with no channel rules uses its buffered rule on every channel (voucher: attach, base64)', () => {
    for (const kind of ['email', 'sms', 'whatsapp'] as const) {
      const m = renderForChannel(delivery, kind, envelope);
      expect(m.attachments.find((a) => a.partType === 'voucher')).toEqual({ partType: 'voucher', part: envelope.parts[2], serialisation: 'base64', mimeType: 'application/pdf' });
    }
  });

  it('delivery:channels:every-part-once — on every channel each envelope part lands in exactly one of body text, attachments, webhook body or dropped', () => {
    for (const kind of CHANNEL_KINDS) {
      const m = renderForChannel(delivery, kind, envelope);
      const placed = m.dropped.length + m.attachments.length + (m.envelope?.parts.length ?? 0) + (m.text === '' ? 0 : m.text.split('\n\n').length);
      expect(placed, kind).toBe(envelope.parts.length);
    }
  });

  it('delivery:buffered:no-envelope — a turn settled without an envelope (clarifying) gives buffered transports its clarify part only', () => {
    const parts = [text('ack', 'Checking.'), text('reasoning-trace', 'hmm'), text('clarify', 'Gatwick or Heathrow?')];
    expect(delivery.buffered({ parts })).toEqual({ parts: [text('clarify', 'Gatwick or Heathrow?')] });
  });

  it('delivery:buffered:envelope — the buffered view is the envelope with the parts its buffered rules keep', () => {
    const withAck: Envelope = { ...envelope, parts: [text('ack', 'x'), ...envelope.parts] };
    const view = delivery.buffered({ envelope: withAck, parts: [] });
    expect(view.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data', 'voucher', 'approval-request']);
    expect(view.envelope!.meta).toEqual(meta);
  });

  it('delivery:streaming:render-as-text — a part whose streaming rule is render-as-text reaches SSE/WebSocket as { text, metadata }, and AAP shows it as text', () => {
    const ev = { seq: 3, sessionId: 's', turnId: 't', at: meta.producedAt, type: 'part.received', callId: 'c', index: 0, part: envelope.parts[2]!, turnState: 'complete', actor: 'a' } as SessionEvent;
    const shown = delivery.streaming(ev);
    expect(shown).toMatchObject({ type: 'part.received', part: { text: '{"base64":"AAAA","mimeType":"application/pdf"}', metadata: { partType: 'voucher' } } });
    expect(delivery.streaming(ev)).toBe(shown);
    expect(delivery.transcript('voucher')).toBe('text');
  });

  it('delivery:unknown-type — a part type the registry does not know is passed as it is (the parser rejects those before publication)', () => {
    const ev = { seq: 1, sessionId: 's', turnId: 't', at: meta.producedAt, type: 'part.received', callId: 'c', index: 0, part: text('mystery', 'x'), turnState: 'complete', actor: 'a' } as SessionEvent;
    expect(delivery.streaming(ev)).toBe(ev);
    expect(delivery.of('mystery')).toBeUndefined();
  });
});
