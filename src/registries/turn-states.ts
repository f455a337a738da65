/**
 * The turn-state registry: the seven canonical states of spec 000 plus consumer states.
 * A consumer state becomes a real node of the session machine, so it must be terminal, hold the
 * actor until a named injection resumes it, or hand the turn off; its name must not collide
 * with a node the machine already uses.
 */
import { RegistrationError } from '../errors.js';
import { CANONICAL_PART_TYPES } from './part-types.js';
import { closestName, Registry, topLevelFields } from './registry.js';
import type { PartTypeMeta, TurnStateDefinition, TurnStateMeta, TurnStateRegistryApi } from './types.js';

/** Turn-state ids: lower-case, starting with a letter, '-' allowed, at most 63 characters. */
export const TURN_STATE_ID = /^[a-z][a-z0-9-]{0,62}$/;
/** Names the session and actor machines use for their own nodes. */
export const RESERVED_TURN_STATE_NAMES: readonly string[] = Object.freeze([
  'idle',
  'turn',
  'acting',
  'settling',
  'settled',
  'running',
  'queued',
]);
/** Injection kinds: same shape as ids. */
const RESUME_ON = /^[a-z][a-z0-9-]{0,62}$/;

/**
 * The canonical states. Spec 000's clarify part "Replaces response when used ... Terminal for this
 * turn; no envelope is built", so every state but `clarifying` forbids one (sent with `complete` it
 * would settle with an empty envelope; with `awaiting` the turn would carry on).
 */
export const CANONICAL_TURN_STATES: Readonly<Record<string, TurnStateMeta>> = {
  awaiting: {
    description: 'The actor keeps working: more respond() calls or injections are expected.',
    isTerminal: false,
    emitsEnvelope: false,
    holdsActor: false,
    requires: { forbidsPartTypes: ['clarify'] },
  },
  complete: {
    description: 'The turn is settled; the envelope is built from the data-bearing records and the parts.',
    isTerminal: true,
    emitsEnvelope: true,
    holdsActor: false,
    requires: { forbidsPartTypes: ['clarify'] },
  },
  clarifying: {
    description: 'The actor needs the user to answer a question (one clarify part); no envelope.',
    isTerminal: true,
    emitsEnvelope: false,
    holdsActor: false,
    requires: { partTypes: ['clarify'], forbidsPartTypes: ['response'] },
  },
  error: {
    description: 'Terminal failure of this turn; an error part tells the user.',
    isTerminal: true,
    emitsEnvelope: false,
    holdsActor: false,
    requires: { forbidsPartTypes: ['clarify'] },
  },
  suspended: {
    description: 'A tool call awaits human approval; the turn resumes on an approval-response injection.',
    isTerminal: false,
    emitsEnvelope: false,
    holdsActor: true,
    resumeOn: 'approval-response',
    requires: { forbidsPartTypes: ['clarify'] },
  },
  delegated: {
    description: "A peer-agent call is in flight; the turn resumes on the peer's envelope.",
    isTerminal: false,
    emitsEnvelope: false,
    holdsActor: true,
    resumeOn: 'peer-envelope',
    requires: { forbidsPartTypes: ['clarify'] },
  },
  passed: {
    description: 'The turn is handed to the actor named by passTo, which inherits the mailbox.',
    isTerminal: false,
    emitsEnvelope: false,
    holdsActor: false,
    handsOff: true,
    requires: { passTo: true, forbidsPartTypes: ['clarify'] },
  },
};

function fail(rule: string, id: string, message: string): never {
  throw new RegistrationError(rule, `turn state '${id}': ${message}`, { id });
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string' && x.length > 0);
}

/** Checks consumer metadata; throws a RegistrationError naming the id, the rule and the fix. */
const TURN_STATE_META_FIELDS = ['description', 'isTerminal', 'emitsEnvelope', 'holdsActor', 'handsOff', 'resumeOn', 'requires'];

/**
 * @param knownPartType when given, part types named in `requires` must be registered.
 * @param modelEmittable whether a part type may be emitted through respond() (undefined when
 * unknown); default: the canonical part types' own flags.
 */
export function validateTurnStateMeta(
  id: string,
  meta: unknown,
  knownPartType?: (id: string) => boolean,
  modelEmittable: (id: string) => boolean | undefined = canonicalEmittable,
): TurnStateMeta {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) {
    fail('turn-states:meta:required', id, 'meta must be an object with description, isTerminal, emitsEnvelope and holdsActor');
  }
  const m = meta as Record<string, unknown>;
  // A misspelt field is refused, not ignored (a requirement under a typo would silently not apply).
  for (const key of Object.keys(m)) {
    if (TURN_STATE_META_FIELDS.includes(key)) continue;
    const near = closestName(key, TURN_STATE_META_FIELDS);
    fail('turn-states:meta:field-unknown', id, `meta.${key} is not a turn-state field; the fields are ${TURN_STATE_META_FIELDS.join(', ')}${near === undefined ? '' : ` (did you mean ${near}?)`}`);
  }
  if (typeof m.description !== 'string' || m.description.trim() === '') {
    fail('turn-states:meta:description', id, 'meta.description must be a non-empty string (it is shown to the model)');
  }
  for (const field of ['isTerminal', 'emitsEnvelope', 'holdsActor'] as const) {
    if (typeof m[field] !== 'boolean') fail(`turn-states:meta:${field}`, id, `meta.${field} must be a boolean`);
  }
  if (m.handsOff !== undefined && typeof m.handsOff !== 'boolean') {
    fail('turn-states:meta:handsOff', id, 'meta.handsOff must be a boolean when present');
  }
  if (m.resumeOn !== undefined && (typeof m.resumeOn !== 'string' || !RESUME_ON.test(m.resumeOn))) {
    fail('turn-states:meta:resumeOn', id, "meta.resumeOn must name an injection kind such as 'approval-response' (lower-case, '-' allowed)");
  }
  const isTerminal = m.isTerminal as boolean;
  const holdsActor = m.holdsActor as boolean;
  const handsOff = m.handsOff === true;
  const resumeOn = m.resumeOn as string | undefined;

  if (Number(isTerminal) + Number(holdsActor) + Number(handsOff) > 1) {
    fail(
      'turn-states:consumer:one-behaviour',
      id,
      'isTerminal, holdsActor and handsOff exclude each other: a state either ends the turn, holds the actor, or hands off',
    );
  }
  if (holdsActor && resumeOn === undefined) {
    fail('turn-states:consumer:hold-requires-resumeOn', id, "holdsActor: true needs resumeOn naming the injection that resumes the turn, e.g. 'approval-response'");
  }
  if (!holdsActor && resumeOn !== undefined) {
    fail('turn-states:consumer:resumeOn-requires-hold', id, 'resumeOn only applies to a state with holdsActor: true');
  }
  if (!isTerminal && !(holdsActor && resumeOn !== undefined) && !handsOff) {
    fail(
      'turn-states:consumer:must-be-terminal-hold-or-handoff',
      id,
      "a consumer state must end the turn (isTerminal: true), hold the actor until an injection resumes it (holdsActor: true with resumeOn), or hand off (handsOff: true with requires.passTo); otherwise the turn would never settle",
    );
  }
  if (m.emitsEnvelope === true && !isTerminal) {
    fail('turn-states:consumer:envelope-requires-terminal', id, 'emitsEnvelope: true is only allowed on a terminal state (the envelope settles the turn)');
  }

  let requires: TurnStateMeta['requires'];
  if (m.requires !== undefined) {
    const r = m.requires;
    if (r === null || typeof r !== 'object' || Array.isArray(r)) {
      fail('turn-states:meta:requires', id, 'meta.requires must be an object { passTo?, partTypes?, forbidsPartTypes? }');
    }
    const req = r as Record<string, unknown>;
    for (const key of Object.keys(req)) {
      if (key !== 'passTo' && key !== 'partTypes' && key !== 'forbidsPartTypes') {
        fail('turn-states:meta:requires', id, `meta.requires.${key} is not a known requirement; use passTo, partTypes or forbidsPartTypes`);
      }
    }
    if (req.passTo !== undefined && typeof req.passTo !== 'boolean') {
      fail('turn-states:meta:requires', id, 'meta.requires.passTo must be a boolean');
    }
    for (const key of ['partTypes', 'forbidsPartTypes'] as const) {
      const list = req[key];
      if (list === undefined) continue;
      if (!isStringArray(list)) fail('turn-states:meta:requires', id, `meta.requires.${key} must be an array of part type ids`);
      if (knownPartType) {
        for (const pt of list) {
          if (!knownPartType(pt)) {
            fail('turn-states:requires:unknown-part-type', id, `meta.requires.${key} names '${pt}', which is not a registered part type; register it first`);
          }
        }
      }
    }
    // A required part the model cannot emit (approval-request, a runtime-only type) would make
    // the state impossible to declare through respond(): refused now, not at every turn.
    for (const pt of (req.partTypes as string[] | undefined) ?? []) {
      if (modelEmittable(pt) === false) {
        fail(
          'turn-states:requires:not-model-emittable',
          id,
          `meta.requires.partTypes names '${pt}', which a model cannot emit (modelEmittable: false): no respond() could ever declare this state; require a part type the model emits, or forbid '${pt}' instead`,
        );
      }
    }
    const need = (req.partTypes as string[] | undefined) ?? [];
    const forbid = (req.forbidsPartTypes as string[] | undefined) ?? [];
    const clash = need.find((p) => forbid.includes(p));
    if (clash !== undefined) fail('turn-states:meta:requires', id, `part type '${clash}' is both required and forbidden`);
    requires = {};
    if (req.passTo !== undefined) requires.passTo = req.passTo as boolean;
    if (req.partTypes !== undefined) requires.partTypes = [...need];
    if (req.forbidsPartTypes !== undefined) requires.forbidsPartTypes = [...forbid];
  }
  if (handsOff && requires?.passTo !== true) {
    fail('turn-states:consumer:handoff-requires-passTo', id, 'handsOff: true needs requires: { passTo: true } so the turn names the actor it goes to');
  }
  if (requires?.passTo === true && !handsOff) {
    fail('turn-states:consumer:passTo-requires-handoff', id, 'requires.passTo is only meaningful on a state with handsOff: true');
  }

  const out: TurnStateMeta = {
    description: m.description as string,
    isTerminal,
    emitsEnvelope: m.emitsEnvelope as boolean,
    holdsActor,
  };
  if (m.handsOff !== undefined) out.handsOff = handsOff;
  if (resumeOn !== undefined) out.resumeOn = resumeOn;
  if (requires !== undefined) out.requires = requires;
  return out;
}

function canonicalEmittable(partType: string): boolean | undefined {
  return Object.hasOwn(CANONICAL_PART_TYPES, partType) ? CANONICAL_PART_TYPES[partType]?.modelEmittable : undefined;
}

function freezeMeta(meta: TurnStateMeta): TurnStateMeta {
  const copy: TurnStateMeta = { ...meta };
  if (meta.requires) {
    const r: NonNullable<TurnStateMeta['requires']> = { ...meta.requires };
    if (r.partTypes) r.partTypes = Object.freeze([...r.partTypes]) as string[];
    if (r.forbidsPartTypes) r.forbidsPartTypes = Object.freeze([...r.forbidsPartTypes]) as string[];
    copy.requires = Object.freeze(r);
  }
  return Object.freeze(copy);
}

export class TurnStateRegistry extends Registry<TurnStateDefinition> implements TurnStateRegistryApi {
  readonly #knownPartType: ((id: string) => boolean) | undefined;
  readonly #modelEmittable: (id: string) => boolean | undefined;

  /**
   * @param partTypes when given, part types named in `requires` must already be registered there
   * (and a required one must be one the model can emit).
   */
  constructor(partTypes?: { has(id: string): boolean; get?(id: string): { meta: Pick<PartTypeMeta, 'modelEmittable'> } | undefined }) {
    super();
    this.#knownPartType = partTypes ? (id) => partTypes.has(id) : undefined;
    const get = partTypes?.get?.bind(partTypes);
    this.#modelEmittable = get ? (id) => get(id)?.meta.modelEmittable ?? canonicalEmittable(id) : canonicalEmittable;
    for (const [id, meta] of Object.entries(CANONICAL_TURN_STATES)) this.#add(id, meta, true);
  }

  register(def: { id: string; meta: TurnStateMeta }): TurnStateDefinition {
    if (def === null || typeof def !== 'object') {
      throw new RegistrationError('turn-states:id:invalid', 'a turn state registration must be an object { id, meta }');
    }
    const id: unknown = def.id;
    if (typeof id !== 'string' || !TURN_STATE_ID.test(id)) {
      throw new RegistrationError(
        'turn-states:id:invalid',
        `turn state id ${typeof id === 'string' ? JSON.stringify(id) : String(id)} is invalid: use lower-case letters, digits and '-', starting with a letter, at most 63 characters`,
        { id },
      );
    }
    if (RESERVED_TURN_STATE_NAMES.includes(id)) {
      fail('turn-states:id:reserved', id, `is a node name the session machine uses (${RESERVED_TURN_STATE_NAMES.join(', ')}); choose another name`);
    }
    topLevelFields('turn-states:field-unknown', `turn state '${id}'`, def, TURN_STATE_META_FIELDS, id);
    const existing = this.get(id);
    if (existing?.isCanonical) {
      fail('turn-states:canonical:not-replaceable', id, 'is canonical and cannot be replaced; register your variant under a new id');
    }
    if (existing) fail('turn-states:duplicate:rejected', id, 'is already registered; each turn state id is registered once');
    return this.#add(id, validateTurnStateMeta(id, def.meta, this.#knownPartType, this.#modelEmittable), false);
  }

  #add(id: string, meta: TurnStateMeta, isCanonical: boolean): TurnStateDefinition {
    return this.add(id, Object.freeze({ id, isCanonical, meta: freezeMeta(meta) }));
  }
}
