/**
 * Each channel by its own rule (docs/concepts/delivery.md "per channel"), and what a human
 * channel's body says: plain text from markdown, a text citation's source.
 */
import { describe, expect, it } from 'vitest';
import { renderForChannel, type ChannelMessage } from '../../src/envelope/channels.js';
import { markdownToPlainText } from '../../src/envelope/plain-text.js';
import { renderPartText } from '../../src/envelope/render.js';
import { CHANNEL_KINDS } from '../../src/registries/part-types.js';
import type { PartTypeMeta } from '../../src/registries/types.js';
import { createRegistries } from '../../src/create-registries.js';
import { createDelivery } from '../../src/envelope/delivery.js';
import type { Envelope, Part } from '../../src/types.js';
import { AUDIO, settleOnce } from './turn.fixture.js';

const text = (partType: string, t: string, meta: Record<string, unknown> = {}): Part => ({ text: t, metadata: { partType, ...meta } });
const data = (partType: string, d: Record<string, unknown>): Part => ({ data: d, metadata: { partType } });

/** In the envelope, dropped by buffered delivery, attached on email and WhatsApp by their own rules. */
const VOICE_NOTE: { id: string; meta: PartTypeMeta } = {
  id: 'voice-note',
  meta: {
    description: 'A recorded note for email only.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    channels: { email: 'attach', whatsapp: 'attach' },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'data',
    serialisation: 'base64',
  },
};


/** How many parts a message placed: body pieces, attachments, webhook parts, dropped. */
const placed = (m: ChannelMessage): number => m.dropped.length + m.attachments.length + (m.parts?.length ?? 0) + (m.text === '' ? 0 : m.text.split('\n\n').length);

describe('delivery: a channel by its own rule', () => {
  const audio = data('audio', { mimeType: 'audio/ogg', base64: 'T2dnUw==' });
  const note = data('voice-note', { mimeType: 'audio/ogg', base64: 'T2dnUw==' });
  const reply = text('response', 'Here is your voice summary.');

  it('delivery:consumer:own-metadata — "a consumer part type is delivered by its own registered metadata (spec 000\'s audio: ... attached on WhatsApp)": the buffered view carries audio to WhatsApp, though buffered delivery and the envelope leave it out', async () => {
    const { outcome, delivery } = await settleOnce([audio, note, reply], 'complete', (rt) => {
      rt.registries.partTypes.register(AUDIO);
      rt.registries.partTypes.register(VOICE_NOTE);
    });
    expect(outcome.envelope!.parts.map((p) => p.metadata.partType)).toEqual(['voice-note', 'response']);
    const view = delivery.buffered({ envelope: outcome.envelope, parts: outcome.parts });
    // What A2A message/send and MCP get is unchanged: the buffered rule drops both.
    expect(view.parts).toEqual([reply]);
    expect(view.envelope!.parts).toEqual([reply]);
    const whatsapp = renderForChannel(delivery, 'whatsapp', view);
    expect(whatsapp.text).toBe(reply.text);
    expect(whatsapp.attachments.map((a) => [a.partType, a.serialisation, a.mimeType])).toEqual([
      ['voice-note', 'base64', 'audio/ogg'],
      ['audio', 'base64', 'audio/ogg'],
    ]);
    expect(whatsapp.attachments[1]!.part).toBe(outcome.parts[0]);
  });

  it('delivery:channels:own-rule — "A channel without its own rule uses the buffered rule", and one with its own rule uses that: both documented inputs give the same message for the envelope\'s parts, and every part lands in exactly one bucket', async () => {
    const { outcome, delivery } = await settleOnce([audio, note, reply], 'complete', (rt) => {
      rt.registries.partTypes.register(AUDIO);
      rt.registries.partTypes.register(VOICE_NOTE);
    });
    const envelope = outcome.envelope!;
    const view = delivery.buffered({ envelope, parts: outcome.parts });
    const expected = {
      email: { text: reply.text, attachments: ['voice-note'], dropped: ['audio'] },
      sms: { text: reply.text, attachments: [], dropped: ['voice-note', 'audio'] },
      whatsapp: { text: reply.text, attachments: ['voice-note', 'audio'], dropped: [] },
      webhook: { text: '', attachments: [], dropped: ['voice-note', 'audio'] },
    } as const;
    for (const ch of CHANNEL_KINDS) {
      const fromView = renderForChannel(delivery, ch, view);
      expect({ text: fromView.text, attachments: fromView.attachments.map((a) => a.partType), dropped: fromView.dropped }, ch).toEqual(expected[ch]);
      expect(placed(fromView), ch).toBe(view.channelParts!.length);
      // The envelope alone holds the envelope's parts: the same message, less what is outside it (audio).
      const fromEnvelope = renderForChannel(delivery, ch, envelope);
      expect(fromEnvelope.text, ch).toBe(fromView.text);
      expect(fromEnvelope.attachments, ch).toEqual(fromView.attachments.filter((a) => a.partType !== 'audio'));
      expect(fromEnvelope.dropped, ch).toEqual(fromView.dropped.filter((t) => t !== 'audio'));
      expect(placed(fromEnvelope), ch).toBe(envelope.parts.length);
    }
    const hook = renderForChannel(delivery, 'webhook', view);
    expect(hook.envelope).toEqual({ ...envelope, parts: [reply] });
    expect(hook.parts).toEqual([reply]);
  });

  it('delivery:channels:own-rule — a turn without envelope-only differences keeps the plain view (no channelParts), and the view stays what buffered transports get', async () => {
    const { outcome, delivery } = await settleOnce([text('ack', 'One moment.'), reply, data('domain-data', { ref: 'R1' })]);
    const view = delivery.buffered(outcome);
    expect(view.channelParts).toBeUndefined();
    expect(view.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data']);
    expect(renderForChannel(delivery, 'email', view).attachments.map((a) => a.partType)).toEqual(['domain-data']);
  });
});

describe('delivery: a human channel\'s body is plain text', () => {
  const MD = '## Your options\n\n* **EJ4521** — £94 ([book](https://fares.example/EJ4521))\n* `BA2043` — £187';
  const PLAIN = 'Your options\n\n* EJ4521 — £94 (book (https://fares.example/EJ4521))\n* BA2043 — £187';

  it('delivery:channels:plain-text — spec 001: the response is "rendered to plain text" on SMS, email and WhatsApp: headings their text, emphasis and code markers gone, a link as text (url), bullets kept; the webhook carries it as written', async () => {
    const reply = text('response', MD);
    const { outcome, delivery } = await settleOnce([reply]);
    const view = delivery.buffered(outcome);
    for (const ch of ['sms', 'email', 'whatsapp'] as const) expect(renderForChannel(delivery, ch, view).text, ch).toBe(PLAIN);
    expect(renderForChannel(delivery, 'webhook', view).parts).toEqual([reply]);
    // The streaming transports and AAP carry the text as written too.
    expect(delivery.apply(reply, 'deliver')).toBe(reply);
  });

  it('delivery:channels:plain-text — each markdown form as plain text, nothing shortened', () => {
    const cases: [string, string][] = [
      ['# Title\n\nBody.', 'Title\n\nBody.'],
      ['Setext\n======\n\ntext', 'Setext\n\ntext'],
      ['**bold**, __strong__, *em*, _em_, ~~gone~~, `code`', 'bold, strong, em, em, gone, code'],
      ['[book](https://fares.example/EJ4521 "Fares")', 'book (https://fares.example/EJ4521)'],
      ['see https://fares.example and <https://x.example>', 'see https://fares.example and https://x.example'],
      ['![map](https://m.example/p.png)', 'map (https://m.example/p.png)'],
      ['- one\n- two', '* one\n* two'],
      ['3. three\n4. four', '3. three\n4. four'],
      ['1. one\n   - nested *a*\n   - nested b\n2. two', '1. one\n  * nested a\n  * nested b\n2. two'],
      ['- [ ] open\n- [x] done', '* [ ] open\n* [x] done'],
      ['```js\nconst a = 1 < 2;\n// **not bold**\n```', 'const a = 1 < 2;\n// **not bold**'],
      ['    indented code', 'indented code'],
      ['> quoted **bold**\n\nafter', 'quoted bold\n\nafter'],
      ['| a | b |\n|---|---|\n| 1 | 2 |', 'a | b\n1 | 2'],
      ['\\*not emphasis\\* AT&amp;T &#8364;5', '*not emphasis* AT&T €5'],
      ['line one\nline two  \nline three', 'line one\nline two\nline three'],
      ['Plain text, my_file_name.csv, 5 * 3 = 15 & <b>kept</b>.', 'Plain text, my_file_name.csv, 5 * 3 = 15 & <b>kept</b>.'],
      ['', ''],
    ];
    for (const [md, plain] of cases) expect(markdownToPlainText(md), md).toBe(plain);
    const long = `${'word '.repeat(400)}end`;
    expect(markdownToPlainText(long)).toBe(long);
  });
});

describe('delivery: a text citation on a channel', () => {
  it('delivery:render:citation-text — "a citation is `Source: title (url)`": a text-only citation (metadata.path) is its source in an email body, with the URL when metadata names one', async () => {
    expect(renderPartText(text('citation', 'easyJet fare page', { path: '/x' }))).toBe('Source: easyJet fare page');
    expect(renderPartText(text('citation', 'easyJet fare page', { path: '/x', url: 'https://fares.example/EJ4521' }))).toBe('Source: easyJet fare page (https://fares.example/EJ4521)');
    const { outcome, delivery } = await settleOnce([
      text('response', 'EJ4521 is cheapest.'),
      data('domain-data', { flights: [{ id: 'EJ4521' }] }),
      text('citation', 'easyJet fare page', { path: '/flights/0' }),
      data('citation', { title: 'easyJet fare page', url: 'https://fares.example/EJ4521', path: '/flights/0' }),
    ]);
    expect(outcome.envelope!.meta.warnings).toBeUndefined();
    const email = renderForChannel(delivery, 'email', delivery.buffered(outcome));
    expect(email.text.split('\n\n')).toEqual(['EJ4521 is cheapest.', 'Source: easyJet fare page', 'Source: easyJet fare page (https://fares.example/EJ4521)']);
  });
});

describe('delivery: nothing of a text part is lost on a human channel (review findings)', () => {
  const meta = { sessionId: 's', turnId: 't', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' };
  const envelopeOf = (...parts: Part[]): Envelope => ({ role: 'agent', parts, meta });
  const HUMAN = ['sms', 'email', 'whatsapp'] as const;

  it('delivery:channels:plain-text — "nothing is shortened or split": a link reference definition no link uses stays as `label: url` (a ticket link, a phone number), one a link uses is that link\'s URL', () => {
    const delivery = createDelivery(createRegistries().partTypes);
    const cases: [string, string][] = [
      ['Your ticket:\n\n[ticket]: https://desk.example/t/42', 'Your ticket:\n\nticket: https://desk.example/t/42'],
      ['[ticket]: https://desk.example/t/42', 'ticket: https://desk.example/t/42'],
      ['Call us\n\n[Support]: +44-20-7946-0000', 'Call us\n\nSupport: +44-20-7946-0000'],
      ['Sources:\n\n[BA]: https://ba.com/fares\n[EZ]: https://easyjet.com\n\nSafe travels.', 'Sources:\n\nBA: https://ba.com/fares\nEZ: https://easyjet.com\n\nSafe travels.'],
      ['> [desk]: https://desk.example?a=1&amp;b=2', 'desk: https://desk.example?a=1&b=2'],
      ['See [BA].\n\n[BA]: https://ba.com "British Airways"\n[EZ]: https://easyjet.com', 'See BA (https://ba.com).\n\nEZ: https://easyjet.com'],
    ];
    for (const [md, plain] of cases) {
      expect(markdownToPlainText(md), md).toBe(plain);
      const env = envelopeOf(text('response', md));
      for (const ch of HUMAN) expect(renderForChannel(delivery, ch, delivery.buffered({ envelope: env, parts: env.parts })).text, `${ch}: ${md}`).toBe(plain);
    }
  });

  it('delivery:channels:plain-text — "a bare or autolinked URL (link text equal to the URL) stays the URL"; "a link `text (url)`": character references in a URL are resolved, a GFM www. link and an autolink with an entity show once, an image\'s alt is plain text', () => {
    const delivery = createDelivery(createRegistries().partTypes);
    const cases: [string, string][] = [
      ['Check in at www.britishairways.com/checkin before 6pm.', 'Check in at www.britishairways.com/checkin before 6pm.'],
      ['Pay here: <https://pay.example/checkout?ref=ABC&amp;amount=564>', 'Pay here: https://pay.example/checkout?ref=ABC&amount=564'],
      ['Pay [here](https://pay.example/checkout?ref=ABC&amp;amount=564).', 'Pay here (https://pay.example/checkout?ref=ABC&amount=564).'],
      ['![Seat map &amp; exits](https://x.example/seat.png)', 'Seat map & exits (https://x.example/seat.png)'],
      ['![a *b* `c`](https://x.example/p.png?w=1&amp;h=2)', 'a b c (https://x.example/p.png?w=1&h=2)'],
      // A link whose text merely lacks a scheme is still text (url); only a www. autolink is its own URL.
      ['[example](http://example)', 'example (http://example)'],
    ];
    for (const [md, plain] of cases) {
      expect(markdownToPlainText(md), md).toBe(plain);
      expect(renderForChannel(delivery, 'sms', envelopeOf(text('response', md))).text, md).toBe(plain);
    }
  });

  it('delivery:channels:own-rule — "every part of the view lands in exactly one of text, attachments, parts or dropped": a text part whose plain text is empty (a rule, an empty code block, blank text) is dropped, with a reason', () => {
    const delivery = createDelivery(createRegistries().partTypes);
    for (const blank of ['---', '```\n```', '   ']) {
      const env = envelopeOf(text('response', 'Booked.'), text('response', blank));
      for (const ch of HUMAN) {
        const m = renderForChannel(delivery, ch, env);
        expect(m.text, `${ch}: ${JSON.stringify(blank)}`).toBe('Booked.');
        expect(m.dropped, ch).toEqual(['response']);
        expect(m.droppedReasons, ch).toEqual([{ index: 0, reason: 'its rendering as text is empty in plain text' }]);
        expect(placed(m), ch).toBe(env.parts.length);
      }
    }
    // A part dropped by its rule has no reason: the rule is the reason.
    expect(renderForChannel(delivery, 'sms', envelopeOf(text('response', 'Hi.'), data('domain-data', { a: 1 }))).droppedReasons).toBeUndefined();
  });

  it('delivery:channels:email — "email … attaches domain-data and artifacts": an attachment\'s mimeType is the part\'s own (an artifact, base64 media), never a domain-data member named mimeType', () => {
    const r = createRegistries();
    r.partTypes.register(AUDIO);
    r.partTypes.register(VOICE_NOTE);
    const delivery = createDelivery(r.partTypes);
    const env = envelopeOf(
      text('response', 'Here is the page.'),
      data('domain-data', { mimeType: 'text/html', html: '<script>alert(1)</script>' }),
      data('artifact', { artifactId: 'art_1', mimeType: 'application/pdf', sizeBytes: 10, name: 'itinerary.pdf' }),
      data('voice-note', { mimeType: 'audio/ogg', base64: 'T2dnUw==' }),
    );
    const email = renderForChannel(delivery, 'email', env);
    expect(email.attachments.map((a) => [a.partType, a.serialisation, a.mimeType])).toEqual([
      ['domain-data', 'json', undefined],
      ['artifact', 'json', 'application/pdf'],
      ['voice-note', 'base64', 'audio/ogg'],
    ]);
    expect(renderForChannel(delivery, 'email', envelopeOf(data('domain-data', { mimeType: 42 }))).attachments[0]!.mimeType).toBeUndefined();
  });
});
