/** Shared test helpers for respond(): real registries, a consumer registration, arbitraries. */
import fc from 'fast-check';
import { createRegistries } from '../../src/create-registries.js';
import type { Registries } from '../../src/registries/types.js';
import type { Part } from '../../src/types.js';
import type { RespondContext } from '../../src/respond/types.js';

/** The runtime's real registries (fresh per call). */
export function makeRegistries(): Registries {
  return createRegistries();
}

export const AUDIO_META = {
  description: 'A short audio clip (base64 in data.audio, with data.mimeType).',
  streamingPreferred: true,
  dataBearing: true,
  delivery: { streaming: 'deliver', buffered: 'drop' },
  inEnvelope: true,
  modelEmittable: true,
  carries: 'data',
  serialisation: 'base64',
} as const;

export const ESCALATED_META = {
  description: 'The request is escalated to a human operator; the turn ends here.',
  isTerminal: true,
  emitsEnvelope: false,
  holdsActor: false,
} as const;

/** Real registries plus the consumer part type 'audio' (carries data) and the terminal state 'escalated'. */
export function makeConsumerRegistries(): Registries {
  const r = makeRegistries();
  r.partTypes.register({ id: 'audio', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery } } });
  r.turnStates.register({ id: 'escalated', meta: { ...ESCALATED_META } });
  return r;
}

export const CTX: RespondContext = { actor: 'planner', handoffs: ['drafter', 'checker'] };

/* ------------------------------------------------------------------ arbitraries */

const nonBlank = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => /\S/.test(s));
const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const extraMeta = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 6 }).filter((k) => k !== 'partType'),
  fc.jsonValue({ maxDepth: 1 }),
  { maxKeys: 2 },
);

export interface ValidCall {
  parts: Part[];
  turnState: string;
  passTo?: string;
  note?: string;
}

function partOf(registries: Registries, partType: string): fc.Arbitrary<Part> {
  const carries = registries.partTypes.get(partType)?.meta.carries ?? 'either';
  const body: fc.Arbitrary<{ text: string } | { data: Record<string, unknown> }> =
    carries === 'text'
      ? nonBlank.map((text) => ({ text }))
      : carries === 'data'
        ? jsonObject.map((data) => ({ data }))
        : fc.oneof(nonBlank.map((text) => ({ text })), jsonObject.map((data) => ({ data })));
  return fc.tuple(body, extraMeta).map(([b, extra]) => ({ ...b, metadata: { ...extra, partType } }));
}

/** Calls that satisfy every rule, for the given registries and CTX. */
export function validCallArb(registries: Registries, ctx: RespondContext = CTX): fc.Arbitrary<ValidCall> {
  const emittable = registries.partTypes.list().filter((d) => d.meta.modelEmittable).map((d) => d.id);
  const states = registries.turnStates
    .list()
    .filter((d) => (d.meta.requires?.partTypes ?? []).every((p) => registries.partTypes.get(p)?.meta.modelEmittable === true))
    .filter((d) => !(d.meta.handsOff === true || d.meta.requires?.passTo === true) || ctx.handoffs.some((h) => h !== ctx.actor))
    .map((d) => d.id);
  return fc.constantFrom(...states).chain((turnState) => {
    const meta = registries.turnStates.get(turnState)!.meta;
    const forbids = meta.requires?.forbidsPartTypes ?? [];
    const allowed = emittable.filter((p) => !forbids.includes(p));
    const needed = meta.requires?.partTypes ?? [];
    const handsOff = meta.handsOff === true || meta.requires?.passTo === true;
    const targets = ctx.handoffs.filter((h) => h !== ctx.actor);
    return fc
      .record(
        {
          free: fc.array(fc.constantFrom(...allowed).chain((p) => partOf(registries, p)), { minLength: needed.length > 0 ? 0 : 1, maxLength: 6 }),
          required: fc.tuple(...needed.map((p) => partOf(registries, p))),
          at: fc.nat(),
          passTo: handsOff ? fc.constantFrom(...targets) : fc.constant(undefined),
          note: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
        },
        { requiredKeys: ['free', 'required', 'at', 'passTo', 'note'] },
      )
      .map(({ free, required, at, passTo, note }) => {
        const parts = [...free];
        for (const r of required) parts.splice(at % (parts.length + 1), 0, r);
        const call: ValidCall = { parts, turnState };
        if (passTo !== undefined) call.passTo = passTo;
        if (note !== undefined) call.note = note;
        return call;
      });
  });
}

export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}
