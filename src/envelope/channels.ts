/**
 * Per-channel delivery (spec 001 "Transport independence": email, SMS, WhatsApp, webhook): pure
 * decisions and renderings from what a turn settled into, by each part type's channel rule. The
 * channel transports that send them are separate; this is what they send.
 *
 * Contract:
 * - The input is the buffered view (`delivery.buffered(...)`): its `channelParts` when it has
 *   them (parts a channel's own rule keeps that its buffered rule drops, or that are outside the
 *   envelope), else its envelope's parts, else its parts (a clarifying or error turn, a consumer
 *   terminal state that emits no envelope); or the settled envelope itself, whose parts are the
 *   envelope's only. Anything else (no envelope at all, a part without a `metadata.partType`, an
 *   unknown channel, an object with members a view does not have, such as a TurnOutcome's
 *   `turnId`, `finalizedBy` and `usage` or a settled turn's `approvals`) is refused with a
 *   TurnstateError `delivery.invalid`; a held view (a turn that stopped to wait, not settled)
 *   with `delivery.held`.
 * - Every part of the input lands in exactly one of `text`, `attachments`, `parts` (webhook) or
 *   `dropped`, as its rule for the channel says (a channel without its own rule uses the buffered
 *   rule), so a view and its envelope give the same message for the envelope's parts. A part a
 *   human channel's rule puts in the body whose plain-text rendering is empty (blank text, markup
 *   without words) is dropped, and `droppedReasons` says why.
 * - The body is plain text: a text part's markdown is rendered to plain text (`renderBodyText`).
 * - Human channels (email, SMS, WhatsApp): `render-as-text` and `deliver` text parts join the
 *   plain-text body in order, separated by a blank line; `attach` (and `deliver` of a data part)
 *   become attachments carrying the part and its serialisation, and the part's own MIME type when
 *   its data is a file (an artifact's or base64 media's `data.mimeType`); any other part's data is
 *   written by its serialisation (JSON: `application/json`), whatever its members say (a
 *   domain-data member named `mimeType` is data, not the attachment's type). An attached `artifact` part is
 *   the artifact's file, described by `artifact` (its bytes are the store's, never the part's
 *   JSON); an artifact rendered as text (SMS) is `name: <signed link>` with `artifactLinks`, else
 *   `name: artifact:<id>`.
 * - Webhook: the body is the envelope with the parts its rules keep (rendered where the rule
 *   is `render-as-text`), or those parts alone for a turn without an envelope; nothing is attached.
 */
import { TurnstateError } from '../errors.js';
import { CHANNEL_KINDS } from '../registries/part-types.js';
import type { ChannelKind } from '../registries/types.js';
import type { Envelope, Part } from '../types.js';
import type { ArtifactLinks } from './artifact-links.js';
import { untypedPart, type BufferedView, type Delivery } from './delivery.js';
import { renderBodyText } from './render.js';

/**
 * The file an `artifact` part stands for, as a sender attaches it: the bytes are read from the
 * artifact store (`artifacts.open(artifactId)` or `artifacts.read(artifactId)`) and sent as
 * `name` with `mimeType`; `url` is a signed link to them (with `artifactLinks`).
 */
export interface ArtifactAttachment {
  artifactId: string;
  name?: string;
  mimeType: string;
  sizeBytes: number;
  url?: string;
}

export interface ChannelAttachment {
  partType: string;
  part: Part;
  /** How the part's data is written when it is the attachment: JSON, plain text, or base64 (the part type's serialisation). */
  serialisation: 'json' | 'text' | 'base64';
  /**
   * The part's own MIME type when its data is a file: an artifact's, or base64 media's
   * `data.mimeType`. Absent for any other part, whose attachment is its data written by
   * `serialisation` (`json`: application/json): a domain-data member named `mimeType` is data.
   */
  mimeType?: string;
  /** An artifact part: the file to attach in its place (its bytes come from the artifact store). */
  artifact?: ArtifactAttachment;
}

export interface ChannelOptions {
  /** Signs the links artifacts carry (`createArtifactLinks`); without it an SMS names `artifact:<id>`. */
  artifactLinks?: Pick<ArtifactLinks, 'url'> | undefined;
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
  /**
   * Why a part in `dropped` is there although its rule keeps it, by its index in `dropped`: a part
   * for the body whose plain-text rendering is empty. Absent when every drop is its rule's.
   */
  droppedReasons?: { index: number; reason: string }[];
}

/**
 * What `channel` sends for a settled turn: pass `delivery.buffered(...)` of it (which also covers a
 * turn that settled without an envelope, and parts outside the envelope a channel's own rule
 * keeps), or its envelope (its parts only). A held view is refused (`delivery.held`).
 */
export function renderForChannel(delivery: Delivery, channel: ChannelKind, settled: Envelope | BufferedView, opts: ChannelOptions = {}): ChannelMessage {
  if (!(CHANNEL_KINDS as readonly unknown[]).includes(channel)) invalid(`channel must be one of ${CHANNEL_KINDS.join(', ')}, got ${show(channel)}`);
  const { envelope, parts } = toRender(settled);
  const texts: string[] = [];
  const attachments: ChannelAttachment[] = [];
  const kept: Part[] = [];
  const dropped: string[] = [];
  const reasons: { index: number; reason: string }[] = [];
  const links = opts.artifactLinks;
  const artifactUrl = links === undefined ? undefined : (id: string) => links.url(id);
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
      const text = renderBodyText(part, artifactUrl === undefined ? {} : { artifactUrl });
      if (text.trim() !== '') {
        texts.push(text);
        continue;
      }
      // Nothing to read: the part is left out, and the log says why (it is not lost without a trace).
      reasons.push({ index: dropped.length, reason: `its ${rule === 'deliver' ? 'text' : 'rendering as text'} is empty in plain text` });
      dropped.push(pt);
      continue;
    }
    const serialisation = d?.serialisation ?? 'json';
    const a: ChannelAttachment = { partType: pt, part, serialisation };
    // Only a part whose data is a file names its type (an artifact, base64 media); other data is JSON or text.
    const own = pt === 'artifact' || serialisation === 'base64' ? part.data?.mimeType : undefined;
    if (typeof own === 'string') a.mimeType = own;
    const file = pt === 'artifact' ? artifactAttachment(part.data, artifactUrl) : undefined;
    if (file !== undefined) a.artifact = file;
    attachments.push(a);
  }
  const out: ChannelMessage = { channel, text: texts.join('\n\n'), attachments, dropped };
  if (reasons.length > 0) out.droppedReasons = reasons;
  if (channel === 'webhook') {
    // A part outside the envelope that the webhook's rule keeps (a view's channelParts) goes in `parts` only.
    if (envelope !== undefined) out.envelope = { ...envelope, parts: kept.filter((p) => delivery.of(p.metadata.partType)?.inEnvelope !== false) };
    out.parts = kept;
  }
  return out;
}

/** The file an artifact part names (its data is the stored record's fields: the respond() check saw to it). */
function artifactAttachment(d: Part['data'], url: ((id: string) => string) | undefined): ArtifactAttachment | undefined {
  if (d === undefined || typeof d.artifactId !== 'string' || typeof d.mimeType !== 'string' || typeof d.sizeBytes !== 'number') return undefined;
  const a: ArtifactAttachment = { artifactId: d.artifactId, mimeType: d.mimeType, sizeBytes: d.sizeBytes };
  if (typeof d.name === 'string') a.name = d.name;
  if (url !== undefined) a.url = url(d.artifactId);
  return a;
}

/** The members of a BufferedView. */
const VIEW_MEMBERS: ReadonlySet<string> = new Set(['parts', 'envelope', 'channelParts', 'held']);

const HOW = 'pass delivery.buffered(...) of the settled turn (its outcome, or its envelope, parts and approval.resolved events at turn.settled), or its settled envelope (a clarifying or error turn has no envelope)';

/** The envelope (when there is one) and the parts to render; refuses anything else, saying what to pass. */
function toRender(settled: unknown): { envelope?: Envelope; parts: readonly Part[] } {
  if (settled === null || typeof settled !== 'object') invalid(`got ${show(settled)}; ${HOW}`);
  const s = settled as Record<string, unknown>;
  if (s.held !== undefined) {
    throw new TurnstateError('delivery.held', `renderForChannel(): the turn is held (waiting for ${show((s.held as { resumeOn?: unknown }).resumeOn)}) and has not settled: nothing is delivered until it does; render it at its turn.settled event`);
  }
  // An envelope has role and meta; a buffered view has only a view's members. A TurnOutcome (turnId,
  // finalizedBy, usage) or a turn's events ({ envelope, parts, approvals }) is what buffered() takes:
  // its parts as emitted hold what the buffered rules leave out.
  const isEnvelope = 'role' in s || 'meta' in s;
  if (!isEnvelope) {
    const other = Object.keys(s).filter((k) => !VIEW_MEMBERS.has(k));
    if (other.length > 0) invalid(`got an object with ${other.slice(0, 4).join(', ')}${other.length > 4 ? ', …' : ''}, which is neither an envelope nor a buffered view (a TurnOutcome or a turn's events are what delivery.buffered() takes); ${HOW}`);
  }
  // A buffered view with its envelope renders the envelope; one without, its parts; else an envelope
  // itself. A view's channelParts, when it has them, are what the channels choose from.
  const envelope = s.envelope !== undefined ? s.envelope : isEnvelope ? s : undefined;
  const from = Array.isArray(s.channelParts) ? { parts: s.channelParts } : (envelope ?? s);
  const parts = from !== null && typeof from === 'object' ? (from as Record<string, unknown>).parts : undefined;
  if (!Array.isArray(parts)) invalid(`${envelope === undefined ? 'the input' : 'the envelope'} has no parts array; ${HOW}`);
  const untyped = untypedPart(parts);
  if (untyped >= 0) invalid(`part ${untyped} has no metadata.partType; ${HOW}`);
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
