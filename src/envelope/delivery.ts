/**
 * Delivery: the part-type registry's rules applied once, for every transport (spec 001
 * "Transport independence", spec 000 "Part types"). Transports consume these views and keep
 * no rules of their own.
 *
 * Contract:
 * - The rules of a part type are read from its registered metadata (canonical or consumer) the
 *   first time it is asked for, then cached: a registered part type never changes.
 * - A part type the registry does not know is delivered as it is: the respond() parser rejects
 *   unregistered part types before anything is published.
 * - `render-as-text` replaces a part by `{ text, metadata }` (see `renderPartText`); `attach`
 *   and `deliver` pass it unchanged on envelope-shaped views (streaming, buffered, webhook).
 * - Every view is pure: the same input gives the same output, and no input is mutated.
 * - Buffered consumers get a turn once it settled, and what was decided, never an open question:
 *   a held outcome gives an empty view marked `held`, and a turn without an envelope whose
 *   approval-request has no known decision is refused (`delivery.held`).
 * - A turn without an envelope is held to the envelope's own filters: the actor's llm-context
 *   only when an originator consumes it (`consumes`), and no citation that points at nothing in
 *   the domain-data the view carries.
 * - `buffered` refuses what is not a settled turn (not an object, parts that are not an array of
 *   parts with a `metadata.partType`, an envelope without one) with TurnstateError
 *   `delivery.invalid`, saying what to pass; it never throws a TypeError.
 */
import { TurnstateError } from '../errors.js';
import { CHANNEL_KINDS } from '../registries/part-types.js';
import type { ChannelKind, DeliveryRule, PartTypeRegistryApi } from '../registries/types.js';
import { assertNever, type Envelope, type Part, type SessionEvent } from '../types.js';
import { citationProblem, decidedKinds, isDecidedSurface, mergeDomainData, resolutionOf, withResolution, type ApprovalAnswer } from './assemble.js';
import { renderPartText } from './render.js';

export type { ApprovalAnswer } from './assemble.js';

/** When a streaming transport sends a part: as soon as it exists, or once it is complete. */
export type Flush = 'at-once' | 'when-complete';

/** How a text-only conversational transport (AAP) shows a part: text, thinking, or not at all. */
export type TranscriptClass = 'text' | 'thinking' | undefined;

/** Everything a transport needs to know about one part type. */
export interface PartDelivery {
  readonly partType: string;
  readonly streaming: DeliveryRule;
  readonly buffered: DeliveryRule;
  readonly channels: Readonly<Record<ChannelKind, DeliveryRule>>;
  /**
   * `at-once` (streamingPreferred): its deltas and the part go out the moment they exist, and under
   * backpressure a later part of the type supersedes it. `when-complete`: the part is delivered
   * whole by its `part.received`; text deltas before it are previews a slow consumer may lose.
   */
  readonly flush: Flush;
  /** Under backpressure the part may be dropped for a later one of its type (streaming-only parts). */
  readonly supersedable: boolean;
  readonly transcript: TranscriptClass;
  readonly inEnvelope: boolean;
  readonly serialisation: 'json' | 'text' | 'base64';
}

/** The part types that stand for a turn that settled without an envelope (clarifying, error). */
const STANDS_IN: ReadonlySet<string> = new Set(['clarify', 'error']);

/** What buffered transports (A2A message/send, MCP, webhooks) receive at settlement. */
export interface BufferedView {
  /** The parts the buffered rules deliver, in order (a turn without an envelope: see `Delivery.buffered`). */
  parts: Part[];
  /** The assembled envelope with those parts, when the turn settled with one; absent for clarifying, error and other turns without one. */
  envelope?: Envelope;
  /**
   * What the channels choose from, each part by its own channel rule, when that is not `parts`: a
   * part type whose channel rule keeps what its buffered rule drops (an in-envelope `voice-note`
   * attached on email), or one outside the envelope that a channel keeps (spec 000's `audio` on
   * WhatsApp). renderForChannel reads it; absent when the channels choose from `parts`.
   */
  channelParts?: Part[];
  /**
   * The outcome stopped to wait (`TurnOutcome.held`): the turn has not settled and nothing is
   * delivered (`parts` is empty; renderForChannel refuses it). Deliver at its `turn.settled` event.
   */
  held?: { resumeOn: string };
}

/** What `Delivery.buffered` takes: a turn's settlement (a `TurnOutcome` is one), or what its events carried. */
export interface SettledTurn {
  /** The settled envelope (`TurnOutcome.envelope`, the `envelope.settled` event's). */
  envelope?: Envelope | undefined;
  /** The turn's parts (`TurnOutcome.parts`, its `part.received` events' parts). */
  parts: readonly Part[];
  /** Set on an outcome that stopped to wait (`TurnOutcome.held`): nothing to deliver yet. */
  held?: { resumeOn: string } | undefined;
  /**
   * The turn's `approval.resolved` events: the decisions a turn without an envelope gives its
   * approval-request parts (its `part.received` events carry the question as asked).
   */
  approvals?: readonly ApprovalAnswer[] | undefined;
  /**
   * The part types the turn's originators consume (their SendOptions `consumes`, a caller card's):
   * a turn without an envelope delivers the actor's own llm-context part only when this lists
   * `llm-context`, as the envelope keeps it only then. A TurnOutcome of such a turn carries it when
   * an originator consumes llm-context; absent, none does. A turn with an envelope needs none (its envelope is
   * already filtered).
   */
  consumes?: readonly string[] | undefined;
}

export interface Delivery {
  /** The rules of one part type; undefined for an unregistered one. */
  of(partType: string): PartDelivery | undefined;
  /** A part as the rule shows it: undefined when dropped, rendered when `render-as-text`. */
  apply(part: Part, rule: DeliveryRule): Part | undefined;

  /** The event as streaming transports (SSE, WebSocket) send it, or undefined when the rules drop it. */
  streaming(event: SessionEvent): SessionEvent | undefined;
  /** Whether the streaming rules drop this part type. */
  streamingDrops(partType: string): boolean;
  /** Whether any registered part type is dropped on streaming (untyped deltas must then wait for their type). */
  streamingDropsAny(): boolean;

  /** The transcript class of a part type: its registered `transcript`, or text for a streaming `render-as-text`. */
  transcript(partType: string): TranscriptClass;

  /**
   * What buffered transports get at settlement: the envelope's parts by their buffered rule. For a
   * turn that settled without an envelope: with a clarify or error part, its parts that belong to
   * no envelope (the clarify or error part); otherwise (a consumer terminal state that emits no
   * envelope) all its parts by their buffered rule, each approval-request with its decision (its
   * own `data.resolution`, else the matching `approvals` answer) and without the template surface
   * that asked it; the envelope's filters apply there too: the actor's llm-context only when
   * `consumes` lists it, and no citation whose pointer resolves to nothing in the turn's
   * domain-data parts (merged as the envelope merges them). Render it on a channel with renderForChannel.
   * What is not a settled turn is refused with TurnstateError `delivery.invalid`.
   * A held outcome gives `{ parts: [], held }`. An approval-request of a turn without an envelope
   * whose decision is unknown is refused with TurnstateError `delivery.held`: the turn is held, or
   * its `approval.resolved` events were not passed as `approvals`.
   */
  buffered(settled: SettledTurn): BufferedView;
}

export function createDelivery(partTypes: PartTypeRegistryApi): Delivery {
  const cache = new Map<string, PartDelivery>();
  const filtered = new WeakMap<SessionEvent, SessionEvent>();
  let dropsAnyFor = -1;
  let dropsAnyValue = false;

  const of = (partType: string): PartDelivery | undefined => {
    let d = cache.get(partType);
    if (d !== undefined) return d;
    const def = partTypes.get(partType);
    if (def === undefined) return undefined;
    const m = def.meta;
    const streaming = m.delivery.streaming;
    d = Object.freeze({
      partType,
      streaming,
      buffered: m.delivery.buffered,
      channels: Object.freeze({
        email: partTypes.deliveryFor(partType, 'email'),
        sms: partTypes.deliveryFor(partType, 'sms'),
        whatsapp: partTypes.deliveryFor(partType, 'whatsapp'),
        webhook: partTypes.deliveryFor(partType, 'webhook'),
      }),
      flush: m.streamingPreferred ? 'at-once' : 'when-complete',
      supersedable: !m.inEnvelope && m.delivery.buffered === 'drop' && streaming !== 'drop',
      transcript: streaming === 'drop' ? undefined : (m.transcript ?? (streaming === 'render-as-text' ? 'text' : undefined)),
      inEnvelope: m.inEnvelope,
      serialisation: m.serialisation ?? (m.carries === 'text' ? 'text' : 'json'),
    } satisfies PartDelivery);
    cache.set(partType, d);
    return d;
  };

  const apply = (part: Part, rule: DeliveryRule): Part | undefined => {
    switch (rule) {
      case 'drop':
        return undefined;
      case 'deliver':
      case 'attach':
        return part;
      case 'render-as-text': {
        const text = renderPartText(part);
        return part.data === undefined && part.text === text ? part : { text, metadata: part.metadata };
      }
      default:
        return assertNever(rule, 'delivery rule');
    }
  };

  const streamingDrops = (partType: string): boolean => of(partType)?.streaming === 'drop';
  const streamingPart = (part: Part): Part | undefined => {
    const d = of(part.metadata.partType);
    return d === undefined ? part : apply(part, d.streaming);
  };
  const applyAll = (parts: readonly Part[], target: 'streaming' | 'buffered'): Part[] => {
    const out: Part[] = [];
    for (const p of parts) {
      const d = of(p.metadata.partType);
      const shown = d === undefined ? p : apply(p, d[target]);
      if (shown !== undefined) out.push(shown);
    }
    return out;
  };

  return {
    of,
    apply,
    streamingDrops,
    streamingDropsAny() {
      const ids = partTypes.ids();
      if (ids.length !== dropsAnyFor) {
        dropsAnyFor = ids.length;
        dropsAnyValue = ids.some(streamingDrops);
      }
      return dropsAnyValue;
    },

    streaming(event) {
      switch (event.type) {
        case 'part.received': {
          const shown = streamingPart(event.part);
          if (shown === event.part) return event;
          if (shown === undefined) return undefined;
          let f = filtered.get(event);
          if (f === undefined) {
            f = { ...event, part: shown };
            filtered.set(event, f);
          }
          return f;
        }
        case 'part.delta':
          return event.partType !== undefined && streamingDrops(event.partType) ? undefined : event;
        case 'envelope.settled': {
          const parts = event.envelope.parts;
          let changed = false;
          for (const p of parts) if (streamingPart(p) !== p) changed = true;
          if (!changed) return event;
          let f = filtered.get(event);
          if (f === undefined) {
            f = { ...event, envelope: { ...event.envelope, parts: applyAll(parts, 'streaming') } };
            filtered.set(event, f);
          }
          return f;
        }
        case 'part.retracted':
        case 'turn.started':
        case 'message.joined':
        case 'turnTools.changed':
        case 'turnState.changed':
        case 'tool.called':
        case 'tool.result':
        case 'approval.requested':
        case 'approval.resolved':
        case 'actor.passed':
        case 'model.usage':
        case 'turn.settled':
          return event;
        default:
          return assertNever(event, 'session event');
      }
    },

    transcript(partType) {
      return of(partType)?.transcript;
    },

    buffered(settled) {
      checkSettled(settled);
      // Not settled: buffered consumers get the turn when it settles, with what was decided.
      if (settled.held !== undefined) return { parts: [], held: settled.held };
      let view: BufferedView;
      let candidates: Part[];
      if (settled.envelope === undefined) {
        // A clarify or error part stands for a turn without an envelope (clarify replaces the
        // response; an error ends the turn): its parts outside envelopes, as spec 001 delivers a
        // clarification. Any other turn without one (a consumer terminal state with emitsEnvelope:
        // false): every part by its buffered rule, so its response is not lost.
        const standsIn = settled.parts.some((p) => STANDS_IN.has(p.metadata.partType));
        const parts = standsIn ? settled.parts.filter((p) => of(p.metadata.partType)?.inEnvelope !== true) : envelopeFilters(decided(settled.parts, settled.approvals), settled.consumes);
        view = { parts: applyAll(parts, 'buffered') };
        candidates = parts.filter((p) => keptBy(p, true));
      } else {
        const parts = applyAll(settled.envelope.parts, 'buffered');
        view = { parts, envelope: { ...settled.envelope, parts } };
        // The envelope's parts, then the turn's parts that belong to no envelope and a channel keeps.
        candidates = [...settled.envelope.parts];
        for (const p of settled.parts) if (of(p.metadata.partType)?.inEnvelope === false && keptBy(p, false)) candidates.push(p);
      }
      if (candidates.length !== view.parts.length || candidates.some((p, i) => p !== view.parts[i])) view.channelParts = candidates;
      return view;
    },
  };

  /** Whether some channel's rule keeps the part (or, with `buffered`, the buffered rule does). */
  function keptBy(part: Part, buffered: boolean): boolean {
    const d = of(part.metadata.partType);
    if (d === undefined || (buffered && d.buffered !== 'drop')) return true;
    for (const ch of CHANNEL_KINDS) if (d.channels[ch] !== 'drop') return true;
    return false;
  }
}

/**
 * The envelope's own filters (assemble.ts), for a turn that settled without one: the actor's
 * llm-context only when an originator consumes it, and a citation only when its pointer resolves
 * in the domain-data the view carries (the turn's domain-data parts, merged as the envelope
 * merges them: a turn without an envelope delivers no tool records).
 */
function envelopeFilters(parts: Part[], consumes: readonly string[] | undefined): Part[] {
  const keepContext = consumes?.includes('llm-context') === true;
  const hasCitation = parts.some((p) => p.metadata.partType === 'citation');
  if (keepContext && !hasCitation) return parts;
  let data: Record<string, unknown> | undefined;
  if (hasCitation) {
    const own = parts.flatMap((part, index) => (part.metadata.partType === 'domain-data' ? [{ part, index }] : []));
    if (own.length > 0) data = mergeDomainData([], own).data;
  }
  return parts.filter((p) => {
    const type = p.metadata.partType;
    if (type === 'llm-context') return keepContext;
    return type !== 'citation' || citationProblem(p, data) === undefined;
  });
}

/** The index of the first of `parts` that is not a part with a string `metadata.partType`, or -1. */
export function untypedPart(parts: readonly unknown[]): number {
  return parts.findIndex((p) => {
    const meta = p !== null && typeof p === 'object' ? (p as { metadata?: unknown }).metadata : undefined;
    return typeof (meta !== null && typeof meta === 'object' ? (meta as { partType?: unknown }).partType : undefined) !== 'string';
  });
}

const HOW = "pass a settled TurnOutcome as it is (send()'s settled), or { envelope, parts, approvals } from the turn's events at turn.settled";

/** Refuses what is not a settled turn, naming what is wrong, before anything reads it. */
function checkSettled(settled: unknown): asserts settled is SettledTurn {
  const invalid = (problem: string): never => {
    throw new TurnstateError('delivery.invalid', `delivery.buffered(): ${problem}; ${HOW}`);
  };
  if (settled === null || typeof settled !== 'object' || Array.isArray(settled)) invalid(`got ${settled === null ? 'null' : Array.isArray(settled) ? 'an array' : typeof settled}, not a settled turn`);
  const s = settled as Record<string, unknown>;
  if (s.held !== undefined) return;
  const checkParts = (parts: unknown, where: string): void => {
    if (!Array.isArray(parts)) invalid(`${where} is ${parts === undefined ? 'missing' : 'not an array'}`);
    const i = untypedPart(parts as unknown[]);
    if (i >= 0) invalid(`${where}[${i}] has no metadata.partType`);
  };
  checkParts(s.parts, 'parts');
  if (s.envelope !== undefined) {
    if (s.envelope === null || typeof s.envelope !== 'object') invalid('envelope is not an envelope');
    checkParts((s.envelope as { parts?: unknown }).parts, 'envelope.parts');
  }
  if (s.approvals !== undefined && !Array.isArray(s.approvals)) invalid('approvals is not an array of approval.resolved events');
  if (s.consumes !== undefined && (!Array.isArray(s.consumes) || s.consumes.some((t) => typeof t !== 'string'))) invalid('consumes is not an array of part type names');
}

/**
 * A settled turn's parts with each approval-request saying what was decided (its own resolution,
 * else the matching answer) and without the template surfaces that asked them. A request whose
 * decision is unknown is an open question, which a buffered consumer never gets: refused.
 */
function decided(parts: readonly Part[], answers: readonly ApprovalAnswer[] | undefined): Part[] {
  if (!parts.some((p) => p.metadata.partType === 'approval-request')) return parts as Part[];
  const out = parts.map((p) => {
    if (p.metadata.partType !== 'approval-request' || resolutionOf(p) !== undefined) return p;
    const id = p.data?.approvalId;
    const answered = withResolution(p, answers?.find((a) => a.approvalId === id));
    if (answered === p) {
      throw new TurnstateError(
        'delivery.held',
        `delivery.buffered(): approval ${String(id)} (${String(p.data?.tool)}) has no decision, so the turn is held (suspended until it is answered) or its approval.resolved events were not passed; ` +
          `deliver a turn at its turn.settled event, with its approval.resolved events as approvals ({ envelope, parts, approvals }), or pass a TurnOutcome as it is (a held one gives an empty view marked held)`,
        { details: { approvalId: id } },
      );
    }
    return answered;
  });
  const kinds = decidedKinds(out);
  return kinds.size === 0 ? out : out.filter((p) => !isDecidedSurface(p, kinds));
}
