/**
 * What callers hand the session API, checked at its edge before anything is accepted: each
 * refusal is a TurnstateError naming the field. Values a store keeps (session metadata, a
 * message's metadata and principal, client tool schemas) must be JSON as they are: every store
 * then keeps the same thing, and a write never fails later, on a store that serialises, for
 * something the caller was told was accepted.
 */
import type { CreateSessionOptions, SendOptions } from '../api.js';
import { TurnstateError } from '../errors.js';
import { DEFAULT_LIMITS, TIMER_LIMITS, formatValue, integerProblem, timerMsProblem, type RuntimeLimits } from '../limits.js';
import { argumentSchemaProblem } from '../registries/json-schema.js';
import { TOOL_NAME, TOOL_NAME_RULE } from '../registries/tools.js';

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
};

/** Why `value` is not JSON as it is (naming the path of the first value that is not), or undefined. */
export function jsonProblem(value: unknown, path: string, seen: Set<object> = new Set()): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${value}, which JSON cannot hold`;
    case 'bigint':
      return `${path} is a BigInt, which JSON cannot hold (send it as a string)`;
    case 'function':
    case 'symbol':
      return `${path} is a ${typeof value}, which JSON cannot hold`;
  }
  if (value === null) return undefined;
  const o = value as object;
  if (seen.has(o)) return `${path} refers back to an object that contains it (a cycle)`;
  if (!Array.isArray(o) && !isPlainObject(o)) {
    const name = (o as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    return `${path} is a ${name}, which JSON would not keep as it is (use plain objects, arrays, strings, numbers, booleans and null)`;
  }
  seen.add(o);
  if (Array.isArray(o)) {
    for (let i = 0; i < o.length; i++) {
      const p = jsonProblem(o[i], `${path}[${i}]`, seen);
      if (p !== undefined) return p;
    }
  } else {
    for (const k of Object.keys(o)) {
      const p = jsonProblem((o as Record<string, unknown>)[k], `${path}.${k}`, seen);
      if (p !== undefined) return p;
    }
  }
  seen.delete(o);
  return undefined;
}

const invalid = (code: string, what: string, problem: string): TurnstateError => new TurnstateError(code, `${what}: ${problem}; nothing was accepted`);

function stringList(v: unknown): boolean {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

/** A message and its options as `send()` takes them (the text itself is checked by the host). */
export function checkSend(message: unknown, opts: unknown): void {
  const bad = (problem: string) => invalid('message.invalid', 'send()', problem);
  if (message !== null && typeof message === 'object') {
    const m = message as { metadata?: unknown; principal?: unknown };
    if (m.metadata !== undefined && !isPlainObject(m.metadata)) throw bad('message.metadata must be a plain object');
    const p = (m.metadata !== undefined && jsonProblem(m.metadata, 'message.metadata')) || (m.principal !== undefined && (isPlainObject(m.principal) ? jsonProblem(m.principal, 'message.principal') : 'message.principal must be a plain object'));
    if (p) throw bad(p);
  }
  if (opts === undefined) return;
  if (!isPlainObject(opts)) throw bad(`options must be an object, got ${opts === null ? 'null' : typeof opts}`);
  const o = opts as SendOptions & Record<string, unknown>;
  if (o.principal !== undefined) {
    const p = isPlainObject(o.principal) ? jsonProblem(o.principal, 'opts.principal') : 'opts.principal must be a plain object';
    if (p) throw bad(p);
  }
  for (const key of ['standingApprovals', 'enabledTools'] as const) {
    if (o[key] !== undefined && !stringList(o[key])) throw bad(`opts.${key} must be an array of tool names, got ${Array.isArray(o[key]) ? 'an array with a non-string' : typeof o[key]}`);
  }
  if (o.howToEnableTools !== undefined && typeof o.howToEnableTools !== 'string') throw bad(`opts.howToEnableTools must be a string, got ${typeof o.howToEnableTools}`);
  if (o.clientTools !== undefined) {
    if (!Array.isArray(o.clientTools)) throw bad(`opts.clientTools must be an array, got ${typeof o.clientTools}`);
    o.clientTools.forEach((t: unknown, i) => {
      const at = `opts.clientTools[${i}]`;
      if (!isPlainObject(t)) throw bad(`${at} must be an object { name, description, parameters }`);
      if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) throw bad(`${at}.name must be ${TOOL_NAME_RULE}, got ${formatValue(t.name)}`);
      if (typeof t.description !== 'string') throw bad(`${at}.description must be a string`);
      if (!isPlainObject(t.parameters)) throw bad(`${at}.parameters must be a JSON Schema object`);
      const p = jsonProblem(t.parameters, `${at}.parameters`);
      if (p) throw bad(p);
      // The rules of a registered tool's inputSchema (tools:schema:object-type, a valid schema).
      const s = argumentSchemaProblem(t.parameters);
      if (s) throw bad(`${at}.parameters (client tool "${t.name}") ${s}`);
    });
  }
}

/** createSession's options (the actor is checked against the registry by the runtime). */
export function checkCreateSession(opts: CreateSessionOptions): void {
  const bad = (problem: string) => invalid('session.invalid', 'createSession()', problem);
  if (!isPlainObject(opts)) throw bad('options must be an object { actor, id?, tenantId?, metadata? }');
  if (opts.id !== undefined && (typeof opts.id !== 'string' || opts.id === '')) throw bad(`id must be a non-empty string, got ${JSON.stringify(opts.id) ?? typeof opts.id}`);
  if (opts.tenantId !== undefined && typeof opts.tenantId !== 'string') throw bad(`tenantId must be a string, got ${typeof opts.tenantId}`);
  if (opts.metadata !== undefined) {
    const p = isPlainObject(opts.metadata) ? jsonProblem(opts.metadata, 'metadata') : 'metadata must be a plain object';
    if (p) throw bad(p);
  }
}

/** listSessions' filter: only `tenantId`, a string (a mistyped key must not list every tenant). */
export function checkSessionFilter(filter: unknown): void {
  if (filter === undefined) return;
  const bad = (problem: string) => new TurnstateError('session.invalid_filter', `listSessions(): ${problem}`);
  if (!isPlainObject(filter)) throw bad('the filter must be an object { tenantId? }');
  for (const k of Object.keys(filter)) if (k !== 'tenantId') throw bad(`unknown filter "${k}" (filters: tenantId)`);
  if (filter.tenantId !== undefined && typeof filter.tenantId !== 'string') throw bad(`tenantId must be a string, got ${typeof filter.tenantId}`);
}

/** Lower bounds of the runtime limits (0 is meaningful for all but these). */
const LIMIT_MIN: Partial<Record<keyof RuntimeLimits, number>> = { maxModelCallsPerTurn: 1, maxQueuedMessages: 1, executionResultMaxChars: 1, toolResultMaxChars: 1, llmContextTimeoutMs: 1 };

/** The runtime's limits: the defaults with `given` over them (keys given as undefined keep theirs), each checked. */
export function runtimeLimits(given: unknown): RuntimeLimits {
  const limits: RuntimeLimits = { ...DEFAULT_LIMITS };
  if (given === undefined) return limits;
  if (!isPlainObject(given)) throw new TurnstateError('options.invalid', 'limits must be an object of runtime limits');
  for (const [k, v] of Object.entries(given)) {
    if (!Object.hasOwn(DEFAULT_LIMITS, k)) throw new TurnstateError('options.invalid', `limits.${k} is not a runtime limit (limits: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    if (v === undefined) continue;
    const min = LIMIT_MIN[k as keyof RuntimeLimits] ?? 0;
    // A timer-backed limit above setTimeout's maximum would fire after 1 ms, not later.
    const problem = TIMER_LIMITS.includes(k as keyof RuntimeLimits) ? timerMsProblem(`limits.${k}`, v, min) : integerProblem(`limits.${k}`, v, min);
    if (problem !== undefined) throw new TurnstateError('options.invalid', problem);
    limits[k as keyof RuntimeLimits] = v as number;
  }
  return limits;
}
