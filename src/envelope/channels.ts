/**
 * Per-channel delivery (spec 001 "Transport independence": email, SMS, WhatsApp, webhook): pure
 * decisions and renderings from a settled envelope, by each part type's channel rule. The
 * channel transports that send them are separate; this is what they send.
 *
 * Contract:
 * - Every part of the envelope lands in exactly one of `text`, `attachments`, `envelope.parts`
 *   (webhook) or `dropped`, as its rule for the channel says.
 * - Human channels (email, SMS, WhatsApp): `render-as-text` and `deliver` text parts join the
 *   plain-text body in envelope order, separated by a blank line; `attach` (and `deliver` of a
 *   data part) become attachments carrying the part and its serialisation.
 * - Webhook: the body is the envelope with the parts its rules keep (rendered where the rule
 *   is `render-as-text`); nothing is attached.
 */
import type { ChannelKind } from '../registries/types.js';
import type { Envelope, Part } from '../types.js';
import type { Delivery } from './delivery.js';
import { renderPartText } from './render.js';

export interface ChannelAttachment {
  partType: string;
  part: Part;
  /** How the attachment's bytes are written: JSON, plain text, or base64 (the part type's serialisation). */
  serialisation: 'json' | 'text' | 'base64';
  /** The part's own `mimeType` (artifact, consumer media) when it names one. */
  mimeType?: string;
}

export interface ChannelMessage {
  channel: ChannelKind;
  /** The plain-text body (empty when nothing renders as text). */
  text: string;
  attachments: ChannelAttachment[];
  /** Webhook only: the envelope the POST carries. */
  envelope?: Envelope;
  /** The part types left out, in envelope order (for the delivery log). */
  dropped: string[];
}

export function renderForChannel(delivery: Delivery, channel: ChannelKind, envelope: Envelope): ChannelMessage {
  const texts: string[] = [];
  const attachments: ChannelAttachment[] = [];
  const kept: Part[] = [];
  const dropped: string[] = [];
  for (const part of envelope.parts) {
    const pt = part.metadata.partType;
    const d = delivery.of(pt);
    const rule = d?.channels[channel] ?? 'deliver';
    if (rule === 'drop') {
      dropped.push(pt);
      continue;
    }
    if (channel === 'webhook') {
      kept.push(delivery.apply(part, rule)!);
      continue;
    }
    if (rule === 'render-as-text' || (rule === 'deliver' && part.data === undefined)) {
      const text = renderPartText(part);
      if (text !== '') texts.push(text);
      continue;
    }
    const a: ChannelAttachment = { partType: pt, part, serialisation: d?.serialisation ?? 'json' };
    const mime = part.data?.mimeType;
    if (typeof mime === 'string') a.mimeType = mime;
    attachments.push(a);
  }
  const out: ChannelMessage = { channel, text: texts.join('\n\n'), attachments, dropped };
  if (channel === 'webhook') out.envelope = { ...envelope, parts: kept };
  return out;
}
