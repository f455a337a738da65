/**
 * The actor registry. Actors register in any order, so tool names and handoff targets are
 * checked when the runtime resolves an actor, not here; what one definition can get wrong on
 * its own (names, shapes, self-handoff, duplicates) is rejected at registration.
 */
import { RegistrationError } from '../errors.js';
import { integerProblem } from '../limits.js';
import { RESERVED_TOOL_NAMES, TOOL_NAME } from './tools.js';
import { Registry } from './registry.js';
import type { ActorDefinition, ActorRegistryApi } from './types.js';

/** The smallest thinking budget the Messages API takes (`budget_tokens` "must be ≥1024"). */
export const MIN_THINKING_BUDGET = 1024;

/** Actor names: a letter, then letters, digits, '_' or '-', at most 64 characters. */
export const ACTOR_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

const KNOWN_FIELDS = new Set([
  'name',
  'description',
  'system',
  'model',
  'maxTokens',
  'thinking',
  'tools',
  'handoffs',
  'compat',
  'card',
  'maxModelCalls',
  'maxRespondRetries',
]);

const CARD_FIELDS = new Set([
  'description',
  'version',
  'skills',
  'produces',
  'consumes',
  'defaultInputModes',
  'defaultOutputModes',
  'provider',
  'documentationUrl',
  'iconUrl',
]);

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string' && x !== '');

/** The card overrides' shapes (part type names are checked when the card is built: they may register later). */
function checkCard(card: unknown, fail: (rule: string, message: string) => never): void {
  if (card === null || typeof card !== 'object' || Array.isArray(card)) fail('actors:card:object', 'card must be an object of Agent Card overrides');
  const c = card as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!CARD_FIELDS.has(key)) fail('actors:card:field', `card.${key} is not a card field; the fields are ${[...CARD_FIELDS].join(', ')}`);
  }
  for (const key of ['description', 'version', 'documentationUrl', 'iconUrl'] as const) {
    if (c[key] !== undefined && (typeof c[key] !== 'string' || c[key] === '')) fail('actors:card:string', `card.${key} must be a non-empty string`);
  }
  for (const key of ['produces', 'consumes', 'defaultInputModes', 'defaultOutputModes'] as const) {
    if (c[key] !== undefined && !isStringArray(c[key])) fail('actors:card:strings', `card.${key} must be an array of non-empty strings`);
  }
  if (c.provider !== undefined) {
    const p = c.provider as Record<string, unknown> | null;
    if (p === null || typeof p !== 'object' || typeof p.organization !== 'string' || typeof p.url !== 'string') {
      fail('actors:card:provider', 'card.provider must be { organization: string, url: string }');
    }
  }
  if (c.skills !== undefined) {
    if (!Array.isArray(c.skills) || c.skills.length === 0) fail('actors:card:skills', 'card.skills must be a non-empty array of { id, name, description, tags }');
    (c.skills as unknown[]).forEach((s, i) => {
      const k = s as Record<string, unknown> | null;
      if (k === null || typeof k !== 'object') fail('actors:card:skills', `card.skills[${i}] must be an object { id, name, description, tags }`);
      for (const f of ['id', 'name', 'description'] as const) {
        if (typeof k[f] !== 'string' || k[f] === '') fail('actors:card:skills', `card.skills[${i}].${f} must be a non-empty string`);
      }
      if (!isStringArray(k.tags) || k.tags.length === 0) fail('actors:card:skills', `card.skills[${i}].tags must be a non-empty array of strings`);
      for (const f of ['examples', 'inputModes', 'outputModes'] as const) {
        if (k[f] !== undefined && !isStringArray(k[f])) fail('actors:card:skills', `card.skills[${i}].${f} must be an array of strings`);
      }
    });
  }
}

function isPositiveInt(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

export class ActorRegistry extends Registry<ActorDefinition> implements ActorRegistryApi {
  register(def: ActorDefinition): ActorDefinition {
    if (def === null || typeof def !== 'object' || Array.isArray(def)) {
      throw new RegistrationError('actors:definition:object', 'an actor definition must be an object { name, system?, tools?, handoffs?, ... }');
    }
    const d = def as unknown as Record<string, unknown>;
    const name = d.name;
    if (typeof name !== 'string' || !ACTOR_NAME.test(name)) {
      throw new RegistrationError(
        'actors:name:invalid',
        `actor name ${typeof name === 'string' ? JSON.stringify(name) : String(name)} is invalid: start with a letter, then letters, digits, '_' or '-', at most 64 characters`,
        { actor: name },
      );
    }
    const fail: (rule: string, message: string) => never = (rule, message) => {
      throw new RegistrationError(rule, `actor '${name}' breaks ${rule}: ${message}`, { actor: name });
    };
    if (this.has(name)) fail('actors:duplicate:rejected', `an actor named '${name}' is already registered; actor names are unique`);
    for (const key of Object.keys(d)) {
      if (!KNOWN_FIELDS.has(key)) fail('actors:field:unknown', `'${key}' is not an actor field; the fields are ${[...KNOWN_FIELDS].join(', ')}`);
    }
    for (const key of ['description', 'system', 'model'] as const) {
      if (d[key] !== undefined && typeof d[key] !== 'string') fail(`actors:${key}:string`, `${key} must be a string`);
    }
    // Safe integers, as the runtime's limits (maxModelCallsPerTurn, maxRespondRetries) they stand in for.
    for (const key of ['maxTokens', 'maxModelCalls'] as const) {
      const problem = integerProblem(key, d[key], 1);
      if (problem !== undefined) fail(`actors:${key}:positive-integer`, problem);
    }
    const retries = integerProblem('maxRespondRetries', d.maxRespondRetries, 0);
    if (retries !== undefined) fail('actors:maxRespondRetries:non-negative-integer', retries);
    if (d.thinking !== undefined) {
      const t = d.thinking as Record<string, unknown> | null;
      if (t === null || typeof t !== 'object' || !isPositiveInt(t.budgetTokens) || (t.budgetTokens as number) < MIN_THINKING_BUDGET) {
        const got = t !== null && typeof t === 'object' ? `, got ${JSON.stringify(t.budgetTokens) ?? 'undefined'}` : '';
        fail('actors:thinking:budget', `thinking must be { budgetTokens: <integer of at least ${MIN_THINKING_BUDGET}> } (the Messages API refuses a smaller budget)${got}`);
      }
    }
    if (d.compat !== undefined && d.compat !== 'respond_to_user') {
      const c = d.compat as Record<string, unknown> | null;
      const shape = "compat must be 'respond_to_user' or { mode: 'respond_to_user', deliverDrafts?: boolean }";
      if (c === null || typeof c !== 'object' || Array.isArray(c)) fail('actors:compat:invalid', `${shape}; got ${JSON.stringify(d.compat)}`);
      if (c.mode !== 'respond_to_user') fail('actors:compat:invalid', `${shape}; got mode ${JSON.stringify(c.mode)}`);
      for (const key of Object.keys(c)) if (key !== 'mode' && key !== 'deliverDrafts') fail('actors:compat:invalid', `${shape}; '${key}' is not a compat field`);
      if (c.deliverDrafts !== undefined && typeof c.deliverDrafts !== 'boolean') fail('actors:compat:invalid', `${shape}; deliverDrafts must be a boolean`);
    }
    // A compatibility actor speaks respond_to_user and mark_work_complete only: nothing it says can
    // pass the turn, so hand-off targets would only be advertised (AAP /meta, its card), never reached.
    if (d.compat !== undefined && Array.isArray(d.handoffs) && d.handoffs.length > 0) {
      fail('actors:compat:no-handoffs', "a compatibility actor (compat: 'respond_to_user') answers with respond_to_user and mark_work_complete and cannot hand off; remove handoffs, or drop compat so the actor hands off with respond() (passTo)");
    }

    if (d.card !== undefined) checkCard(d.card, fail);

    const tools = this.#names(d.tools, 'tools', fail);
    for (const t of tools) {
      if (!TOOL_NAME.test(t)) fail('actors:tools:invalid-name', `tools lists ${JSON.stringify(t)}, which is not a valid tool name`);
      if (RESERVED_TOOL_NAMES.includes(t)) fail('actors:tools:reserved', `'${t}' is provided by the runtime to every actor; remove it from tools`);
    }
    const handoffs = this.#names(d.handoffs, 'handoffs', fail);
    for (const h of handoffs) {
      if (!ACTOR_NAME.test(h)) fail('actors:handoffs:invalid-name', `handoffs lists ${JSON.stringify(h)}, which is not a valid actor name`);
      if (h === name) fail('actors:handoffs:not-self', 'an actor cannot hand off to itself; remove it from handoffs');
    }

    const copy: ActorDefinition = { ...(def as ActorDefinition) };
    if (d.tools !== undefined) copy.tools = Object.freeze([...tools]) as string[];
    if (d.handoffs !== undefined) copy.handoffs = Object.freeze([...handoffs]) as string[];
    if (copy.thinking) copy.thinking = Object.freeze({ budgetTokens: copy.thinking.budgetTokens });
    if (typeof copy.compat === 'object') copy.compat = Object.freeze({ ...copy.compat });
    if (copy.card) copy.card = structuredClone(copy.card);
    return this.add(name, Object.freeze(copy));
  }

  #names(v: unknown, field: 'tools' | 'handoffs', fail: (rule: string, message: string) => never): string[] {
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) fail(`actors:${field}:strings`, `${field} must be an array of names`);
    const seen = new Set<string>();
    for (const n of v as string[]) {
      if (seen.has(n)) fail(`actors:${field}:duplicate`, `${field} lists '${n}' more than once`);
      seen.add(n);
    }
    return v as string[];
  }
}
