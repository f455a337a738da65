/**
 * The respond() parser: one call in, either its ordered events or a rejection listing every
 * violation.
 *
 * A call is checked by ajv against the schema generated from the registries (compiled once per
 * registry state, allErrors), then by the semantic rules of docs/concepts/respond.md. Both run on
 * every call so a rejection names every problem at once, each with its JSON path; the rejection
 * `message` is written for the model (one line per violation, then what to do).
 *
 * `parse` never throws, whatever it is given. On success the call and its parts are the input's
 * own objects (not copied): the events are `part.received` for each part in order, each carrying
 * the declared turn state, then one `turnState.changed`. The success path allocates only the
 * events; error text is built only for invalid calls.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { clipForEcho } from '../text.js';
import type { Part } from '../types.js';
import type { PartCheck, PartTypeDefinition, Registries, TurnStateDefinition, Violation } from '../registries/types.js';
import type { RespondCall, RespondContext, RespondEvent, RespondResult } from './types.js';
import { generateRespondSchema, isStampCurrent, stampOf, type RegistryStamp } from './schema.js';

/** Rule ids of the semantic checks (see docs/concepts/respond.md). */
export const RespondRule = {
  partsNonEmpty: 'respond:parts:non-empty',
  partTypeRegistered: 'respond:partType:registered',
  turnStateRegistered: 'respond:turnState:registered',
  approvalPartsNotFromModel: 'respond:approval-parts:not-from-model',
  textXorData: 'respond:part:text-xor-data',
  carries: 'respond:part:carries',
  textNonEmpty: 'respond:text:non-empty',
  requiresPart: 'respond:turnState:requires-part',
  forbidsPart: 'respond:turnState:forbids-part',
  passToRequiresPassed: 'respond:passTo:requires-passed',
  passToDeclaredTarget: 'respond:passTo:declared-target',
  passToRegisteredTarget: 'respond:passTo:registered-target',
  /** Ordering rules over one model response (respond/ordering.ts). */
  stateChangeLastCall: 'respond:state-change:last-call',
  stateChangeOnce: 'respond:state-change:once',
  suspendedRuntimeOnly: 'respond:suspended:runtime-only',
  jsonInvalid: 'respond:json:invalid',
  jsonDuplicateKey: 'respond:json:duplicate-key',
  /** Structural problems found by the schema: `schema:required`, `schema:type`, `schema:additional-property`, ... */
  schemaPrefix: 'schema:',
  internal: 'respond:internal',
} as const;

export interface RespondParser {
  /** Never throws. */
  parse(input: unknown, ctx: RespondContext): RespondResult;
}

export interface RespondParserOptions {
  /** At most this many violations are spelled out in the rejection message (all are in `violations`). Default 50. */
  maxMessageLines?: number | undefined;
  /**
   * Content checks by part type, run on each well-formed data part of that type (see PartCheck).
   * A check's `normalize` gives an accepted part its data in the form consumers read.
   */
  partChecks?: Readonly<Record<string, PartCheck>> | undefined;
}

/**
 * The actors `passTo` may name: the declared `handoffs` but the actor itself and, when the actor
 * is one of the registries' actors (always so in a runtime), only registered actors. A parser used
 * for a caller its registries do not hold checks the declared targets only.
 */
export function handoffTargets(registries: Registries, actor: string, handoffs: readonly string[]): string[] {
  const registeredOnly = registries.actors.has(actor);
  return handoffs.filter((h) => h !== actor && (!registeredOnly || registries.actors.has(h)));
}

interface Compiled {
  stamp: RegistryStamp;
  schema: Record<string, unknown>;
  validate: ValidateFunction;
  /** Built on the first rejection that needs them. */
  emittableList?: string;
  turnStateList?: string;
}

const NON_WHITESPACE = /\S/;
const MAX_VALUE_CHARS = 60;

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function escapeSegment(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A short, safe rendering of a value the model sent (never calls the value's own methods). */
function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string': {
      const s = JSON.stringify(clipForEcho(v, MAX_VALUE_CHARS));
      return `the string ${s}`;
    }
    case 'number':
    case 'boolean':
      return `${typeof v} ${String(v)}`;
    case 'object':
      return Array.isArray(v) ? 'an array' : 'an object';
    default:
      return `a ${typeof v}`;
  }
}

/** A property name the model sent, on one line and bounded. */
function quoteName(name: string): string {
  return JSON.stringify(clipForEcho(name, MAX_VALUE_CHARS));
}

function quoteList(ids: readonly string[]): string {
  return ids.map((id) => `'${id}'`).join(', ');
}

function withArticle(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** Builds a parser bound to one runtime's registries; it follows later registrations. */
export function createRespondParser(registries: Registries, options: RespondParserOptions = {}): RespondParser {
  const maxLines = Math.max(1, options.maxMessageLines ?? 50);
  const partChecks = new Map(Object.entries(options.partChecks ?? {}));
  const normalizers = new Map<string, NonNullable<PartCheck['normalize']>>();
  for (const [id, pc] of partChecks) if (pc.normalize !== undefined) normalizers.set(id, pc.normalize.bind(pc));
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: true });
  let compiled: Compiled | undefined;

  function current(): Compiled {
    if (compiled !== undefined && isStampCurrent(registries, compiled.stamp)) return compiled;
    if (compiled !== undefined) ajv.removeSchema(compiled.schema);
    const stamp = stampOf(registries);
    const schema = generateRespondSchema(registries);
    compiled = { stamp, schema, validate: ajv.compile(schema) };
    return compiled;
  }

  function emittableList(c: Compiled): string {
    c.emittableList ??= quoteList(
      registries.partTypes
        .list()
        .filter((d) => d.meta.modelEmittable)
        .map((d) => d.id),
    );
    return c.emittableList;
  }

  function turnStateList(c: Compiled): string {
    c.turnStateList ??= quoteList(registries.turnStates.ids());
    return c.turnStateList;
  }

  function handoffHint(handoffs: readonly string[], actor: string): string {
    const targets = handoffTargets(registries, actor, handoffs);
    if (targets.length > 0) return `you may hand off to: ${quoteList(targets)}`;
    return handoffs.some((h) => h !== actor)
      ? 'none of the actors you declare as handoff targets is registered, so you cannot hand off'
      : 'you declare no handoff targets, so you cannot hand off';
  }

  /** `, or ... use turnState '<s>'` for each state that requires a part of type `pt` (rejections only). */
  function requiringStatesHint(pt: string, ts: unknown): string {
    const homes = registries.turnStates.list().filter((d) => d.id !== ts && d.meta.requires?.partTypes?.includes(pt) === true);
    if (homes.length === 0) return '';
    const states = homes.map((d) => {
      const forbids = d.meta.requires?.forbidsPartTypes ?? [];
      return `'${d.id}'${forbids.length > 0 ? ` (with no ${forbids.map((f) => `'${f}'`).join(' or ')} part)` : ''}`;
    });
    return `, or to send it use turnState ${states.join(' or ')}`;
  }

  /** Maps ajv's errors to violations; enum and parts minItems errors are left to the semantic rules (which name the allowed values). */
  function schemaViolations(c: Compiled, errors: readonly ErrorObject[], out: Violation[]): void {
    for (const e of errors) {
      const at = e.instancePath;
      switch (e.keyword) {
        case 'enum':
          continue;
        case 'minItems':
          if (at === '/parts') continue;
          break;
        case 'required': {
          const name = String((e.params as { missingProperty?: unknown }).missingProperty ?? '');
          const path = `${at}/${escapeSegment(name)}`;
          out.push({ path, rule: 'schema:required', message: requiredMessage(c, at, name) });
          continue;
        }
        case 'additionalProperties': {
          const name = String((e.params as { additionalProperty?: unknown }).additionalProperty ?? '');
          const path = `${at}/${escapeSegment(name)}`;
          const allowed =
            at === ''
              ? 'a respond() call has only parts, turnState, passTo and note'
              : 'a part has only metadata, text and data (put extra tags inside metadata)';
          out.push({ path, rule: 'schema:additional-property', message: `unknown property ${quoteName(name)}: ${allowed}; remove it` });
          continue;
        }
        case 'type': {
          const expected = String((e.params as { type?: unknown }).type ?? '');
          const message =
            at === ''
              ? `the respond() input must be an object { parts, turnState, passTo?, note? } (got ${describe(e.data)})`
              : `must be ${withArticle(expected)} (got ${describe(e.data)})`;
          out.push({ path: at, rule: 'schema:type', message });
          continue;
        }
        default:
          break;
      }
      out.push({ path: at, rule: `schema:${e.keyword}`, message: e.message ?? `fails ${e.keyword}` });
    }
  }

  function requiredMessage(c: Compiled, at: string, name: string): string {
    if (at === '' && name === 'parts') {
      return 'parts is missing: give an array of one or more parts, each { metadata: { partType }, text } or { metadata: { partType }, data }';
    }
    if (at === '' && name === 'turnState') return `turnState is missing: one of ${turnStateList(c)}`;
    if (name === 'metadata') return `metadata is missing: give metadata: { partType } with partType one of ${emittableList(c)}`;
    if (name === 'partType') return `partType is missing: one of ${emittableList(c)}`;
    return `${name} is missing`;
  }

  /**
   * The semantic rules. Robust to any shape (the schema errors already describe wrong shapes);
   * allocates nothing unless a rule is broken.
   */
  function semanticViolations(c: Compiled, root: Obj, ctx: RespondContext, out: Violation[] | undefined): Violation[] | undefined {
    const actor = isObject(ctx) && typeof ctx.actor === 'string' ? ctx.actor : '';
    const handoffs: readonly string[] = isObject(ctx) && Array.isArray(ctx.handoffs) ? ctx.handoffs : [];

    let tsDef: TurnStateDefinition | undefined;
    const ts = root.turnState;
    if (typeof ts === 'string') {
      tsDef = registries.turnStates.get(ts);
      if (tsDef === undefined) {
        out = add(out, '/turnState', RespondRule.turnStateRegistered, `${describe(ts)} is not a registered turn state; use one of ${turnStateList(c)}`);
      }
    }
    const requires = tsDef?.meta.requires;
    const forbids = requires?.forbidsPartTypes;

    const parts = root.parts;
    if (Array.isArray(parts)) {
      if (parts.length === 0) {
        out = add(out, '/parts', RespondRule.partsNonEmpty, 'parts is empty: give at least one part, e.g. { metadata: { partType: \'response\' }, text: \'...\' }');
      }
      for (let i = 0; i < parts.length; i++) {
        const part: unknown = parts[i];
        if (!isObject(part)) continue;
        const meta = part.metadata;
        const pt = isObject(meta) ? meta.partType : undefined;
        let ptDef: PartTypeDefinition | undefined;
        if (typeof pt === 'string') {
          ptDef = registries.partTypes.get(pt);
          if (ptDef === undefined) {
            out = add(out, `/parts/${i}/metadata/partType`, RespondRule.partTypeRegistered, `${describe(pt)} is not a registered part type; use one of ${emittableList(c)}`);
          } else if (!ptDef.meta.modelEmittable) {
            out = add(out,
              `/parts/${i}/metadata/partType`,
              RespondRule.approvalPartsNotFromModel,
              `'${pt}' parts are emitted by the runtime, never through respond(); remove this part (use one of ${emittableList(c)})`,
            );
          }
          if (forbids !== undefined && forbids.includes(pt)) {
            out = add(out,
              `/parts/${i}/metadata/partType`,
              RespondRule.forbidsPart,
              `turnState '${String(ts)}' does not allow a '${pt}' part; remove it${pt === 'response' && ts === 'clarifying' ? ' (a clarify part replaces the response)' : requiringStatesHint(pt, ts)}`,
            );
          }
        }
        const text = part.text;
        const hasText = text !== undefined;
        const hasData = part.data !== undefined;
        if (hasText && hasData) {
          out = add(out, `/parts/${i}`, RespondRule.textXorData, 'a part carries text or data, not both; split it into two parts');
        } else if (!hasText && !hasData) {
          const wants = ptDef?.meta.carries === 'data' ? 'data (an object)' : ptDef?.meta.carries === 'text' ? 'text' : 'text or data';
          out = add(out, `/parts/${i}`, RespondRule.textXorData, `a part carries text or data, and this one has neither; give ${wants}`);
        } else if (ptDef !== undefined && ptDef.meta.modelEmittable) {
          if (ptDef.meta.carries === 'text' && hasData) {
            out = add(out, `/parts/${i}/data`, RespondRule.carries, `'${pt as string}' parts carry text, not data; give the content as text`);
          } else if (ptDef.meta.carries === 'data' && hasText) {
            out = add(out, `/parts/${i}/text`, RespondRule.carries, `'${pt as string}' parts carry data, not text; give the content as data (an object)`);
          } else if (hasData && partChecks.size > 0) {
            const pc = partChecks.get(pt as string);
            if (pc !== undefined) {
              for (const p of pc.check(part.data, ctx)) out = add(out, `/parts/${i}/data${p.path}`, pc.rule, p.message);
            }
          }
        }
        if (typeof text === 'string' && !NON_WHITESPACE.test(text)) {
          out = add(out, `/parts/${i}/text`, RespondRule.textNonEmpty, 'text is empty or only whitespace; write the text, or remove the part');
        }
      }
      const needed = requires?.partTypes;
      if (needed !== undefined) {
        for (const want of needed) {
          if (!hasPartType(parts, want)) {
            const wantDef = registries.partTypes.get(want);
            const message =
              wantDef !== undefined && !wantDef.meta.modelEmittable
                ? `turnState '${String(ts)}' needs a '${want}' part, which only the runtime emits: you cannot declare this state through respond()`
                : `turnState '${String(ts)}' needs a '${want}' part${want === 'clarify' ? ' containing a single clear question' : ''}; add one`;
            out = add(out, '/parts', RespondRule.requiresPart, message);
          }
        }
      }
    }

    const passTo = root.passTo;
    const hasPassTo = passTo !== undefined;
    if (tsDef !== undefined) {
      const needsPassTo = tsDef.meta.handsOff === true || requires?.passTo === true;
      if (needsPassTo && !hasPassTo) {
        out = add(out, '/passTo', RespondRule.passToRequiresPassed, `turnState '${tsDef.id}' hands the turn off and needs passTo naming the actor; ${handoffHint(handoffs, actor)}`);
      } else if (!needsPassTo && hasPassTo) {
        out = add(out,
          '/passTo',
          RespondRule.passToRequiresPassed,
          `passTo is only valid with a handoff turn state (${quoteList(handoffStates())}); remove passTo or set turnState to ${handoffStates()[0] !== undefined ? `'${handoffStates()[0]}'` : 'a handoff state'}`,
        );
      }
    }
    if (typeof passTo === 'string') {
      if (actor !== '' && passTo === actor) {
        out = add(out, '/passTo', RespondRule.passToDeclaredTarget, `you cannot hand off to yourself ('${actor}'); ${handoffHint(handoffs, actor)}`);
      } else if (!handoffs.includes(passTo)) {
        out = add(out, '/passTo', RespondRule.passToDeclaredTarget, `${describe(passTo)} is not one of your handoff targets; ${handoffHint(handoffs, actor)}`);
      } else if (!handoffTargets(registries, actor, [passTo]).includes(passTo)) {
        out = add(out, '/passTo', RespondRule.passToRegisteredTarget, `'${passTo}' is not a registered actor, so the turn cannot be handed to it; ${handoffHint(handoffs, actor)}`);
      }
    }
    return out;
  }

  function handoffStates(): string[] {
    return registries.turnStates
      .list()
      .filter((d) => d.meta.handsOff === true || d.meta.requires?.passTo === true)
      .map((d) => d.id);
  }

  /**
   * The call with each part whose check normalises its data replaced by a copy holding the
   * normal form; the call itself (the input's own object) when nothing changes.
   */
  function normalized(call: RespondCall): RespondCall {
    if (normalizers.size === 0) return call;
    let parts: Part[] | undefined;
    for (let i = 0; i < call.parts.length; i++) {
      const part = call.parts[i] as Part;
      const normalize = part.data === undefined ? undefined : normalizers.get(part.metadata.partType);
      const data = normalize?.(part.data as Record<string, unknown>);
      if (data === undefined) continue;
      parts ??= call.parts.slice();
      parts[i] = { ...part, data };
    }
    return parts === undefined ? call : { ...call, parts };
  }

  function reject(violations: Violation[]): RespondResult {
    return rejection(violations, maxLines);
  }


  function parse(input: unknown, ctx: RespondContext): RespondResult {
    try {
      const c = current();
      const valid = c.validate(input) as boolean;
      let violations: Violation[] | undefined;
      if (!valid) {
        violations = [];
        schemaViolations(c, c.validate.errors ?? [], violations);
      }
      if (isObject(input)) violations = semanticViolations(c, input, ctx, violations);
      if (violations !== undefined && violations.length === 0 && !valid) {
        // Only dropped ajv errors (enum/minItems) and no semantic finding: should not happen; never accept.
        for (const e of c.validate.errors ?? []) violations.push({ path: e.instancePath, rule: `schema:${e.keyword}`, message: e.message ?? e.keyword });
      }
      if (violations !== undefined && violations.length > 0) return reject(violations);

      const call = normalized(input as unknown as RespondCall);
      const parts: Part[] = call.parts;
      const turnState = call.turnState;
      const events: RespondEvent[] = [];
      for (let i = 0; i < parts.length; i++) {
        events.push({ type: 'part.received', index: i, part: parts[i] as Part, turnState });
      }
      events.push({ type: 'turnState.changed', to: turnState });
      return { ok: true, call, events };
    } catch (err) {
      return reject([
        {
          path: '',
          rule: RespondRule.internal,
          message: `the call could not be checked (${err instanceof Error ? err.message : 'unknown error'}); send a plain JSON object { parts, turnState }`,
        },
      ]);
    }
  }

  return { parse };
}

function add(out: Violation[] | undefined, path: string, rule: string, message: string): Violation[] {
  const list = out ?? [];
  list.push({ path, rule, message });
  return list;
}

function hasPartType(parts: readonly unknown[], want: string): boolean {
  for (const p of parts) {
    if (isObject(p) && isObject(p.metadata) && p.metadata.partType === want) return true;
  }
  return false;
}

const collator = new Intl.Collator('en', { numeric: true });
function byPath(a: Violation, b: Violation): number {
  return collator.compare(a.path, b.path);
}

/**
 * A rejection in the one message format the model reads: every violation with its path and rule
 * id, then what to do. At most `maxLines` violations are spelled out (all are in `violations`).
 */
export function rejection(violations: Violation[], maxLines = 50): Extract<RespondResult, { ok: false }> {
  violations.sort(byPath);
  const lines: string[] = [];
  const shown = Math.min(violations.length, maxLines);
  for (let i = 0; i < shown; i++) {
    const v = violations[i] as Violation;
    lines.push(`- ${v.path === '' ? '(the call)' : v.path}: ${v.message} [${v.rule}]`);
  }
  if (violations.length > shown) lines.push(`- ... and ${violations.length - shown} more problems of the kinds above`);
  const n = violations.length;
  const message =
    `respond() call rejected, nothing from it was delivered: ${n} problem${n === 1 ? '' : 's'}.\n` +
    `${lines.join('\n')}\n` +
    'Fix every problem listed and call respond() again with the whole corrected call.';
  return { ok: false, violations, message };
}
