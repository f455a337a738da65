/**
 * Per-channel delivery (spec 001 "Transport independence": email, SMS, WhatsApp, webhook): pure
 * decisions and renderings from what a turn settled into, by each part type's channel rule. The
 * channel transports that send them are separate; this is what they send.
 *
 * Contract:
 * - The input is the settled envelope, or the buffered view (`delivery.buffered(...)`): its
 *   envelope when it has one, else its parts (a clarifying or error turn, a consumer terminal
 *   state that emits no envelope). Anything else (no envelope at all, a part without a
 *   `metadata.partType`, an unknown channel) is refused with a TurnstateError `delivery.invalid`.
 * - Every part lands in exactly one of `text`, `attachments`, `parts` (webhook) or `dropped`, as
 *   its rule for the channel says.
 * - Human channels (email, SMS, WhatsApp): `render-as-text` and `deliver` text parts join the
 *   plain-text body in order, separated by a blank line; `attach` (and `deliver` of a data part)
 *   become attachments carrying the part and its serialisation.
 * - Webhook: the body is the envelope with the parts its rules keep (rendered where the rule
 *   is `render-as-text`), or those parts alone for a turn without an envelope; nothing is attached.
 */
import { TurnstateError } from '../errors.js';
import { CHANNEL_KINDS } from '../registries/part-types.js';
import type { ChannelKind } from '../registries/types.js';
import type { Envelope, Part } from '../types.js';
import type { BufferedView, Delivery } from './delivery.js';
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
  /** Webhook only: the envelope the POST carries, when the turn settled with one. */
  envelope?: Envelope;
  /** Webhook only: the parts the POST carries (the envelope's, when there is one). */
  parts?: Part[];
  /** The part types left out, in order (for the delivery log). */
  dropped: string[];
}

/**
 * What `channel` sends for a settled turn: pass its envelope, or `delivery.buffered({ envelope,
 * parts })` (which also covers a turn that settled without an envelope).
 */
export function renderForChannel(delivery: Delivery, channel: ChannelKind, settled: Envelope | BufferedView): ChannelMessage {
  if (!(CHANNEL_KINDS as readonly unknown[]).includes(channel)) invalid(`channel must be one of ${CHANNEL_KINDS.join(', ')}, got ${show(channel)}`);
  const { envelope, parts } = toRender(settled);
  const texts: string[] = [];
  const attachments: ChannelAttachment[] = [];
  const kept: Part[] = [];
  const dropped: string[] = [];
  for (const part of parts) {
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
  if (channel === 'webhook') {
    if (envelope !== undefined) out.envelope = { ...envelope, parts: kept };
    out.parts = kept;
  }
  return out;
}

const HOW = 'pass the settled envelope, or delivery.buffered({ envelope: outcome.envelope, parts: outcome.parts }) (a clarifying or error turn has no envelope)';

/** The envelope (when there is one) and the parts to render; refuses anything else, saying what to pass. */
function toRender(settled: unknown): { envelope?: Envelope; parts: readonly Part[] } {
  if (settled === null || typeof settled !== 'object') invalid(`got ${show(settled)}; ${HOW}`);
  const s = settled as Record<string, unknown>;
  // A buffered view with its envelope renders the envelope; one without, its parts; else an envelope itself.
  const envelope = s.envelope !== undefined ? s.envelope : 'role' in s || 'meta' in s ? s : undefined;
  const from = envelope ?? s;
  const parts = from !== null && typeof from === 'object' ? (from as Record<string, unknown>).parts : undefined;
  if (!Array.isArray(parts)) invalid(`${envelope === undefined ? 'the input' : 'the envelope'} has no parts array; ${HOW}`);
  parts.forEach((p: unknown, i) => {
    const pt = p !== null && typeof p === 'object' ? (p as { metadata?: { partType?: unknown } }).metadata?.partType : undefined;
    if (typeof pt !== 'string') invalid(`part ${i} has no metadata.partType; ${HOW}`);
  });
  return envelope === undefined ? { parts: parts as Part[] } : { envelope: envelope as Envelope, parts: parts as Part[] };
}

function invalid(problem: string): never {
  throw new TurnstateError('delivery.invalid', `renderForChannel(): ${problem}`);
}

function show(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return JSON.stringify(v);
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v;
}
