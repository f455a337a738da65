/**
 * The part-type registry: the canonical set of spec 000 plus consumer registrations.
 * Canonical entries cannot be replaced; a duplicate id is an error. Lookups (`get`, `has`,
 * `deliveryFor`) read precomputed Maps and allocate nothing.
 */
import { RegistrationError, TurnstateError } from '../errors.js';
import { closestName, Registry, topLevelFields } from './registry.js';
import type {
  ChannelKind,
  DeliveryClass,
  DeliveryRule,
  PartTypeDefinition,
  PartTypeMeta,
  PartTypeRegistryApi,
} from './types.js';

export const DELIVERY_RULES: readonly DeliveryRule[] = ['deliver', 'drop', 'attach', 'render-as-text'];
export const DELIVERY_CLASSES: readonly DeliveryClass[] = ['streaming', 'buffered'];
export const CHANNEL_KINDS: readonly ChannelKind[] = ['email', 'sms', 'whatsapp', 'webhook'];
const CARRIES: readonly PartTypeMeta['carries'][] = ['text', 'data', 'either'];
const SERIALISATIONS: readonly NonNullable<PartTypeMeta['serialisation']>[] = ['json', 'text', 'base64'];
const TRANSCRIPTS: readonly NonNullable<PartTypeMeta['transcript']>[] = ['text', 'thinking'];

/** Part type ids: lower-case, starting with a letter; `-`, `_`, `.` allowed inside; at most 64 characters. */
export const PART_TYPE_ID = /^[a-z][a-z0-9._-]{0,63}$/;

type Targets = Record<DeliveryClass | ChannelKind, DeliveryRule>;

/** Human channels (email, SMS, WhatsApp) share most rules; webhooks carry the envelope as-is. */
const HUMAN_TEXT = { email: 'render-as-text', sms: 'render-as-text', whatsapp: 'render-as-text', webhook: 'deliver' } as const;
const HUMAN_DROP = { email: 'drop', sms: 'drop', whatsapp: 'drop', webhook: 'deliver' } as const;
const ALL_DROP = { email: 'drop', sms: 'drop', whatsapp: 'drop', webhook: 'drop' } as const;

/** The canonical part types (spec 000 "Part types", spec 001 "Transport independence"). */
export const CANONICAL_PART_TYPES: Readonly<Record<string, PartTypeMeta>> = {
  ack: {
    description: 'Immediate, specific acknowledgement: what was understood and what the actor is doing.',
    streamingPreferred: true,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    channels: { ...ALL_DROP },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'text',
    serialisation: 'text',
    transcript: 'text',
  },
  thinking: {
    description: 'Progress update during a long tool-use loop; streaming transports only.',
    streamingPreferred: true,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    channels: { ...ALL_DROP },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'text',
    serialisation: 'text',
    transcript: 'thinking',
  },
  response: {
    description: 'The substantive answer; becomes the response text of the envelope.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_TEXT },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'text',
    serialisation: 'text',
    transcript: 'text',
  },
  clarify: {
    description: 'A single question the user must answer before the actor can proceed; replaces response.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_TEXT },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'text',
    serialisation: 'text',
    transcript: 'text',
  },
  error: {
    description: 'A failure the user needs to know about.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_TEXT },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'text',
    serialisation: 'text',
    transcript: 'text',
  },
  'domain-data': {
    description: 'Structured domain data (an A2A data part) a peer reads programmatically.',
    streamingPreferred: false,
    dataBearing: true,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { email: 'attach', sms: 'drop', whatsapp: 'drop', webhook: 'deliver' },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'data',
    serialisation: 'json',
  },
  'llm-context': {
    description: 'Natural-language analysis of the data for a peer LLM.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_DROP },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'text',
    serialisation: 'text',
  },
  'a2ui-surface': {
    description:
      'A2UI v0.9 UI for a client: data { messages: [...] }, each message { version: "v0.9" } plus exactly one of createSurface / updateComponents / updateDataModel, components from the basic catalog bound to the data model by JSON Pointer.',
    streamingPreferred: false,
    dataBearing: true,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_DROP },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'data',
    serialisation: 'json',
  },
  artifact: {
    description: 'Reference to a binary asset a tool stored: data { artifactId, mimeType, sizeBytes } exactly as the tool returned them.',
    streamingPreferred: false,
    dataBearing: true,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { email: 'attach', sms: 'render-as-text', whatsapp: 'attach', webhook: 'deliver' },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'data',
    serialisation: 'json',
  },
  'reasoning-trace': {
    description: 'Captured model-native reasoning (e.g. thinking blocks).',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_DROP },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'either',
    serialisation: 'json',
    transcript: 'thinking',
  },
  citation: {
    description: 'Source reference bound to a path in domain-data.',
    streamingPreferred: false,
    dataBearing: true,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { email: 'render-as-text', sms: 'drop', whatsapp: 'drop', webhook: 'deliver' },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'either',
    serialisation: 'json',
  },
  'approval-request': {
    description: 'Emitted by the runtime when a tool call that requires approval is intercepted (tool, args, actor, turn).',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'deliver' },
    channels: { ...HUMAN_TEXT },
    inEnvelope: true,
    modelEmittable: false,
    carries: 'data',
    serialisation: 'json',
  },
  'approval-response': {
    description: "Inbound only: the human's or policy's decision that resumes a suspended turn.",
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    channels: { ...ALL_DROP },
    inEnvelope: false,
    modelEmittable: false,
    carries: 'data',
    serialisation: 'json',
  },
  progress: {
    description: 'Structured progress update for a long-running operation.',
    streamingPreferred: true,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    channels: { ...ALL_DROP },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'either',
    serialisation: 'json',
  },
};

function fail(rule: string, id: string, message: string): never {
  throw new RegistrationError(rule, `part type '${id}': ${message}`, { id });
}

function isRule(v: unknown): v is DeliveryRule {
  return typeof v === 'string' && (DELIVERY_RULES as readonly string[]).includes(v);
}

/** Checks a consumer meta completely; throws a RegistrationError naming the id and the field. */
const PART_TYPE_META_FIELDS = ['description', 'streamingPreferred', 'dataBearing', 'delivery', 'channels', 'inEnvelope', 'modelEmittable', 'carries', 'serialisation', 'transcript'];

export function validatePartTypeMeta(id: string, meta: unknown): PartTypeMeta {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) {
    fail('part-types:meta:required', id, 'meta must be an object with description, streamingPreferred, dataBearing, delivery, inEnvelope, modelEmittable and carries');
  }
  const m = meta as Record<string, unknown>;
  // First: a misspelt field is refused naming it, not reported as the field it was meant to be
  // (`inEnvelop` is not "meta.inEnvelope missing"), nor ignored (a rule under a typo would not apply).
  for (const key of Object.keys(m)) {
    if (PART_TYPE_META_FIELDS.includes(key)) continue;
    const near = closestName(key, PART_TYPE_META_FIELDS);
    const hint = (DELIVERY_CLASSES as readonly string[]).includes(key)
      ? ': put the rules under meta.delivery: { streaming, buffered }'
      : near === undefined ? '' : ` (did you mean ${near}?)`;
    fail('part-types:meta:field-unknown', id, `meta.${key} is not a part-type field${hint}; the fields are ${PART_TYPE_META_FIELDS.join(', ')}`);
  }
  if (typeof m.description !== 'string' || m.description.trim() === '') {
    fail('part-types:meta:description', id, 'meta.description must be a non-empty string saying what the part carries');
  }
  for (const field of ['streamingPreferred', 'dataBearing', 'inEnvelope', 'modelEmittable'] as const) {
    if (typeof m[field] !== 'boolean') {
      fail(`part-types:meta:${field}`, id, `meta.${field} must be a boolean (got ${describe(m[field])})`);
    }
  }
  const d = m.delivery;
  if (d === null || typeof d !== 'object' || Array.isArray(d)) {
    fail('part-types:meta:delivery', id, `meta.delivery must be { streaming, buffered }, each one of ${DELIVERY_RULES.join(', ')}`);
  }
  for (const cls of DELIVERY_CLASSES) {
    const rule = (d as Record<string, unknown>)[cls];
    if (!isRule(rule)) {
      fail('part-types:meta:delivery', id, `meta.delivery.${cls} must be one of ${DELIVERY_RULES.join(', ')} (got ${describe(rule)})`);
    }
  }
  for (const key of Object.keys(d)) {
    if (!(DELIVERY_CLASSES as readonly string[]).includes(key)) {
      fail('part-types:meta:delivery', id, `meta.delivery.${key} is not a delivery class; use ${DELIVERY_CLASSES.join(' or ')}`);
    }
  }
  if (m.channels !== undefined) {
    const c = m.channels;
    if (c === null || typeof c !== 'object' || Array.isArray(c)) {
      fail('part-types:meta:channels', id, `meta.channels must be an object keyed by ${CHANNEL_KINDS.join(', ')}`);
    }
    for (const [key, rule] of Object.entries(c)) {
      if (!(CHANNEL_KINDS as readonly string[]).includes(key)) {
        fail('part-types:meta:channels', id, `meta.channels.${key} is not a channel kind; use ${CHANNEL_KINDS.join(', ')}`);
      }
      // A channel given as undefined is one left out: it falls back to delivery.buffered.
      if (rule !== undefined && !isRule(rule)) {
        fail('part-types:meta:channels', id, `meta.channels.${key} must be one of ${DELIVERY_RULES.join(', ')} (got ${describe(rule)})`);
      }
    }
  }
  if (!(CARRIES as readonly unknown[]).includes(m.carries)) {
    fail('part-types:meta:carries', id, `meta.carries must be one of ${CARRIES.join(', ')} (got ${describe(m.carries)})`);
  }
  if (m.serialisation !== undefined && !(SERIALISATIONS as readonly unknown[]).includes(m.serialisation)) {
    fail('part-types:meta:serialisation', id, `meta.serialisation must be one of ${SERIALISATIONS.join(', ')} (got ${describe(m.serialisation)})`);
  }
  if (m.transcript !== undefined && !(TRANSCRIPTS as readonly unknown[]).includes(m.transcript)) {
    fail('part-types:meta:transcript', id, `meta.transcript must be one of ${TRANSCRIPTS.join(', ')}, or absent for parts a transcript does not show (got ${describe(m.transcript)})`);
  }
  return m as unknown as PartTypeMeta;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null) return 'null';
  return Array.isArray(v) ? 'an array' : typeof v;
}

function freezeMeta(meta: PartTypeMeta): PartTypeMeta {
  const copy: PartTypeMeta = {
    description: meta.description,
    streamingPreferred: meta.streamingPreferred,
    dataBearing: meta.dataBearing,
    delivery: Object.freeze({ streaming: meta.delivery.streaming, buffered: meta.delivery.buffered }),
    inEnvelope: meta.inEnvelope,
    modelEmittable: meta.modelEmittable,
    carries: meta.carries,
  };
  if (meta.channels !== undefined) copy.channels = Object.freeze({ ...meta.channels });
  if (meta.serialisation !== undefined) copy.serialisation = meta.serialisation;
  if (meta.transcript !== undefined) copy.transcript = meta.transcript;
  return Object.freeze(copy);
}

function targetsOf(meta: PartTypeMeta): Targets {
  const buffered = meta.delivery.buffered;
  const ch = meta.channels ?? {};
  // One shape for every part type (fast property reads); deliveryFor rejects non-string reads
  // such as 'toString' that come from Object.prototype.
  return Object.freeze({
    streaming: meta.delivery.streaming,
    buffered,
    email: ch.email ?? buffered,
    sms: ch.sms ?? buffered,
    whatsapp: ch.whatsapp ?? buffered,
    webhook: ch.webhook ?? buffered,
  });
}

export class PartTypeRegistry extends Registry<PartTypeDefinition> implements PartTypeRegistryApi {
  readonly #targets = new Map<string, Targets>();

  constructor() {
    super();
    for (const [id, meta] of Object.entries(CANONICAL_PART_TYPES)) this.#add(id, meta, true);
  }

  register(def: { id: string; meta: PartTypeMeta }): PartTypeDefinition {
    if (def === null || typeof def !== 'object') {
      throw new RegistrationError('part-types:id:invalid', 'a part type registration must be an object { id, meta }');
    }
    const id: unknown = def.id;
    if (typeof id !== 'string' || !PART_TYPE_ID.test(id)) {
      throw new RegistrationError(
        'part-types:id:invalid',
        `part type id ${describe(id)} is invalid: use lower-case letters, digits, '-', '_' or '.', starting with a letter, at most 64 characters`,
        { id },
      );
    }
    topLevelFields('part-types:field-unknown', `part type '${id}'`, def, PART_TYPE_META_FIELDS, id);
    const existing = this.get(id);
    if (existing?.isCanonical) {
      fail('part-types:canonical:not-replaceable', id, 'is canonical and cannot be replaced; register your variant under a new id');
    }
    if (existing) fail('part-types:duplicate:rejected', id, 'is already registered; each part type id is registered once');
    const meta = validatePartTypeMeta(id, def.meta);
    return this.#add(id, meta, false);
  }

  #add(id: string, meta: PartTypeMeta, isCanonical: boolean): PartTypeDefinition {
    const frozen = freezeMeta(meta);
    const def: PartTypeDefinition = Object.freeze({ id, isCanonical, meta: frozen });
    this.#targets.set(id, targetsOf(frozen));
    return this.add(id, def);
  }

  /** The rule for a part type on a delivery class or channel kind. Throws on an unknown id or target. */
  deliveryFor(id: string, target: DeliveryClass | ChannelKind): DeliveryRule {
    const t = this.#targets.get(id);
    if (t === undefined) {
      throw new TurnstateError('part_type.unknown', `unknown part type '${id}': register it with partTypes.register({ id, meta }) first`, {
        details: { id },
      });
    }
    const rule: unknown = t[target];
    if (typeof rule !== 'string') {
      throw new TurnstateError(
        'part_type.unknown_target',
        `unknown delivery target '${String(target)}' for part type '${id}': use ${[...DELIVERY_CLASSES, ...CHANNEL_KINDS].join(', ')}`,
        { details: { id, target } },
      );
    }
    return rule as DeliveryRule;
  }
}
