/**
 * The respond() tool given to the model, generated from the registries of one runtime.
 *
 * `partType` is an `enum` of the registered part types a model may emit (`meta.modelEmittable`),
 * `turnState` an `enum` of every registered turn state; descriptions are spec 000's, with the
 * consumer-registered values appended. In each part, `metadata` comes before `text` and `data`
 * so a streaming model writes the part type first.
 *
 * Built once per registry state and cached: registries are append-only, so the number of
 * registered part types and turn states is the version. The returned objects are frozen and
 * shared between callers; copy before changing them.
 */
import type { ModelTool } from '../types.js';
import type { PartTypeDefinition, Registries, TurnStateDefinition } from '../registries/types.js';
import { RESPOND_TOOL_NAME } from './types.js';

export const RESPOND_TOOL_DESCRIPTION =
  'Emit a structured response. This is the ONLY way you produce output. Always call this tool to produce any user-facing or peer-facing text. Never emit free-form text outside this tool. Pass all your output as parts, and set turnState to indicate whether you are done or still working.';

export const PARTS_DESCRIPTION =
  'One or more A2A-style message parts. Each part carries text or data plus a partType metadata tag.';

export const PASS_TO_DESCRIPTION =
  "Optional. When present and turnState is 'passed', names the actor to which this turn is handed off. The session manager begins the next invocation with the named actor, inheriting the mailbox. The receiving actor's tool scope applies. Only valid with turnState: 'passed'.";

export const NOTE_DESCRIPTION = 'Optional free-form note for logs. Not delivered to any consumer.';

const PART_TYPE_DESCRIPTION_HEAD =
  "Registered part type. Validated against turnstate's PartTypeRegistry (canonical core set plus consumer-registered extensions).";

const TURN_STATE_DESCRIPTION_HEAD =
  "Declare the lifecycle state of this turn. Validated against turnstate's TurnStateRegistry (canonical core set plus consumer-registered extensions).";

/** Spec 000's gloss of each canonical turn state, as the turnState description gives it. */
const CANONICAL_TURN_STATE_GLOSS: Readonly<Record<string, string>> = {
  awaiting: 'more respond() calls or injections expected',
  complete: 'turn settled, envelope emitted if data-bearing',
  clarifying: 'terminal; question to user, no envelope',
  error: 'terminal failure',
  suspended: 'HITL approval pending',
  delegated: 'peer-agent call in flight',
  passed: 'handed off to another actor — see passTo',
};

/** The part types a model may name in `metadata.partType`, in registration order. */
export function modelEmittablePartTypes(registries: Registries): PartTypeDefinition[] {
  return registries.partTypes.list().filter((d) => d.meta.modelEmittable);
}

function gloss(def: TurnStateDefinition): string {
  const canonical = def.isCanonical ? CANONICAL_TURN_STATE_GLOSS[def.id] : undefined;
  return `'${def.id}' (${canonical ?? stripPeriod(def.meta.description)})`;
}

function stripPeriod(s: string): string {
  return s.endsWith('.') ? s.slice(0, -1) : s;
}

function turnStateDescription(states: readonly TurnStateDefinition[]): string {
  const canonical = states.filter((d) => d.isCanonical);
  const consumer = states.filter((d) => !d.isCanonical);
  let s = TURN_STATE_DESCRIPTION_HEAD;
  if (canonical.length > 0) s += ` Canonical values: ${canonical.map(gloss).join(', ')}.`;
  if (consumer.length > 0) s += ` Consumer-registered values: ${consumer.map(gloss).join(', ')}.`;
  return s;
}

function partTypeDescription(emittable: readonly PartTypeDefinition[]): string {
  const consumer = emittable.filter((d) => !d.isCanonical).map((d) => `'${d.id}'`);
  let s = PART_TYPE_DESCRIPTION_HEAD;
  if (consumer.length > 0) s += ` Consumer-registered values: ${consumer.join(', ')}.`;
  return `${s} The system prompt describes each value.`;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The raw JSON schema of respond()'s input for the given registries (not cached; see respondJsonSchema). */
export function generateRespondSchema(registries: Registries): Record<string, unknown> {
  const emittable = modelEmittablePartTypes(registries);
  const states = registries.turnStates.list();
  return {
    type: 'object',
    required: ['parts', 'turnState'],
    additionalProperties: false,
    properties: {
      parts: {
        type: 'array',
        description: PARTS_DESCRIPTION,
        minItems: 1,
        items: {
          type: 'object',
          required: ['metadata'],
          additionalProperties: false,
          properties: {
            metadata: {
              type: 'object',
              required: ['partType'],
              properties: {
                partType: {
                  type: 'string',
                  description: partTypeDescription(emittable),
                  enum: emittable.map((d) => d.id),
                },
              },
            },
            text: { type: 'string', description: 'The text of a text-carrying part. Give text or data, never both.' },
            data: { type: 'object', description: 'The structured data of a data-carrying part. Give text or data, never both.' },
          },
        },
      },
      turnState: {
        type: 'string',
        description: turnStateDescription(states),
        enum: states.map((d) => d.id),
      },
      passTo: { type: 'string', description: PASS_TO_DESCRIPTION },
      note: { type: 'string', description: NOTE_DESCRIPTION },
    },
  };
}

/* ------------------------------------------------------------------ cache */

/** A value derived from the registries, valid while no part type or turn state is added. */
export interface RegistryStamp {
  partTypes: readonly string[];
  turnStates: readonly string[];
}

/** Cheap check (two calls and four comparisons): registries only grow, so equal lengths mean unchanged. */
export function isStampCurrent(registries: Registries, stamp: RegistryStamp): boolean {
  const pt = registries.partTypes.ids();
  const ts = registries.turnStates.ids();
  return (pt === stamp.partTypes || pt.length === stamp.partTypes.length) && (ts === stamp.turnStates || ts.length === stamp.turnStates.length);
}

export function stampOf(registries: Registries): RegistryStamp {
  return { partTypes: registries.partTypes.ids(), turnStates: registries.turnStates.ids() };
}

/**
 * A per-registries memo: `get(registries)` returns `build(registries)`, rebuilt only when a part
 * type or turn state was registered since the last build.
 */
export function memoByRegistryState<T>(build: (registries: Registries) => T): (registries: Registries) => T {
  const cache = new WeakMap<object, { stamp: RegistryStamp; turnStates: object; value: T }>();
  return (registries) => {
    const hit = cache.get(registries.partTypes);
    if (hit !== undefined && hit.turnStates === registries.turnStates && isStampCurrent(registries, hit.stamp)) return hit.value;
    const stamp = stampOf(registries);
    const value = build(registries);
    cache.set(registries.partTypes, { stamp, turnStates: registries.turnStates, value });
    return value;
  };
}

const cachedSchema = memoByRegistryState((r) => deepFreeze(generateRespondSchema(r)));
const cachedTool = memoByRegistryState<ModelTool>((r) =>
  Object.freeze({
    name: RESPOND_TOOL_NAME,
    description: RESPOND_TOOL_DESCRIPTION,
    input_schema: cachedSchema(r),
    eager_input_streaming: true,
  }),
);

/** The JSON schema of respond()'s input (frozen, cached per registry state). */
export function respondJsonSchema(registries: Registries): Record<string, unknown> {
  return cachedSchema(registries);
}

/** The respond() tool in Anthropic's tool format, with fine-grained input streaming (frozen, cached). */
export function buildRespondTool(registries: Registries): ModelTool {
  return cachedTool(registries);
}
