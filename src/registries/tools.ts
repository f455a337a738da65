/**
 * The tool registry of spec 002: the two-axis (scope x routing) definition, validated at
 * registration; schemas compiled once with ajv; approval policies compiled once by the
 * ApprovalCompiler the registry is given (approvals/ provides it: policies are data here).
 * `respond()` and the spec 003 tools are never in it. Every registration error is a
 * RegistrationError whose `rule` is the requirement id and whose message says how to fix it.
 */
import type { ErrorObject } from 'ajv';
import { RegistrationError, TurnstateError } from '../errors.js';
import { MAX_TIMER_MS, formatValue } from '../limits.js';
import type { Routing, Scope } from '../types.js';
import { type CompiledSchema, frozenCopy, SchemaCompiler, SchemaDeclarationError } from './json-schema.js';
import { Registry } from './registry.js';
import type { ApprovalCompiler, RegisteredTool, RetryPolicy, ToolDefinition, ToolHandler, ToolRegistryApi, Violation } from './types.js';

/** Tool names as the model APIs accept them. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** TOOL_NAME in words, for refusals. */
export const TOOL_NAME_RULE = '1-64 letters, digits, "_" or "-"';
/** Names the runtime provides itself (respond() of spec 000, the spec 003 pair). */
export const RESERVED_TOOL_NAMES: readonly string[] = Object.freeze(['respond', 'respond_to_user', 'mark_work_complete']);

/**
 * The key a peer's domain-data takes in the envelope's merged domain-data (a delegated turn's
 * peer envelope), beside each tool's under its name: no tool may be named so.
 */
export const PEER_DATA_KEY = 'peer';

const KNOWN_FIELDS = new Set([
  'name',
  'description',
  'inputSchema',
  'outputSchema',
  'handler',
  'scope',
  'routing',
  'bypassRouting',
  'justification',
  'requiresApproval',
  'allowStandingApproval',
  'tags',
  'peerExposed',
  'idempotent',
  'timeoutMs',
  'retry',
]);

/** The most attempts a retry policy may ask for (the first included). */
export const MAX_RETRY_ATTEMPTS = 10;
const RETRY_FIELDS = new Set(['attempts', 'backoffMs', 'backoffFactor']);

const PLACEHOLDERS = new Set(['todo', 'tbd', 'fixme', 'xxx', 'n/a', 'na', '...', '…', 'placeholder', 'none', 'null', 'undefined', 'reason', 'justification', '-', '?']);
/** The shortest explanation accepted for a justification or a bypass reason. */
export const MIN_EXPLANATION_LENGTH = 10;

/** Why a justification or bypass reason is not a real explanation, or undefined when it is one. */
export function placeholderProblem(text: unknown): string | undefined {
  if (typeof text !== 'string') return 'it is missing';
  const t = text.trim();
  if (t === '') return 'it is empty';
  const lower = t.toLowerCase();
  if (PLACEHOLDERS.has(lower) || /^(todo|tbd|fixme|xxx+|placeholder)\b/.test(lower)) return `${JSON.stringify(t)} is a placeholder`;
  if (/^[\p{P}\p{S}\s]*$/u.test(t)) return `${JSON.stringify(t)} has no words`;
  if (t.length < MIN_EXPLANATION_LENGTH) return `${JSON.stringify(t)} is shorter than ${MIN_EXPLANATION_LENGTH} characters`;
  return undefined;
}

const NO_VIOLATIONS: Violation[] = Object.freeze([]) as unknown as Violation[];

function toViolations(errors: readonly ErrorObject[] | null | undefined): Violation[] {
  if (!errors || errors.length === 0) return [{ path: '', rule: 'schema:invalid', message: 'does not match the schema' }];
  return errors.map((e) => {
    let path = e.instancePath;
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required' && typeof params.missingProperty === 'string') path = `${path}/${escapePointer(params.missingProperty)}`;
    else if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') path = `${path}/${escapePointer(params.additionalProperty)}`;
    return { path, rule: `schema:${e.keyword}`, message: `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message ?? 'is invalid'}` };
  });
}

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The execution fields (`idempotent`, `timeoutMs`, `retry`), checked and normalised. */
function checkExecution(
  d: Record<string, unknown>,
  routing: Routing,
  fail: (rule: string, message: string) => never,
): { idempotent: boolean; timeoutMs: number | undefined; retry: Readonly<Required<RetryPolicy>> | undefined } {
  if (d.idempotent !== undefined && typeof d.idempotent !== 'boolean') fail('tools:idempotent:boolean', 'idempotent must be a boolean');
  const idempotent = d.idempotent === true;
  let timeoutMs: number | undefined;
  if (d.timeoutMs !== undefined) {
    if (routing === 'bypass') {
      fail('tools:timeoutMs:routed-only', "timeoutMs applies to routed calls; a bypass tool runs inline in the actor's invocation, outside the router — remove timeoutMs or route the tool");
    }
    const t = d.timeoutMs;
    if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0 || t > MAX_TIMER_MS) {
      fail('tools:timeoutMs:positive', `timeoutMs must be a number of milliseconds above 0 and at most ${MAX_TIMER_MS}; got ${formatValue(t)}`);
    }
    timeoutMs = t;
  }
  if (d.retry === undefined) return { idempotent, timeoutMs, retry: undefined };
  if (routing === 'bypass') {
    fail('tools:retry:routed-only', "retry applies to routed calls; a bypass tool runs inline in the actor's invocation, outside the router — remove retry or route the tool");
  }
  if (!idempotent) {
    fail(
      'tools:retry:requires-idempotent',
      'retry is only allowed on a tool declared idempotent: true (one that may safely run twice for one call); a non-idempotent tool is never retried — remove retry, or declare idempotent: true if running it again is harmless',
    );
  }
  const r = d.retry;
  if (!isPlainObject(r)) fail('tools:retry:object', 'retry must be an object { attempts, backoffMs?, backoffFactor? }');
  for (const key of Object.keys(r)) {
    if (!RETRY_FIELDS.has(key)) fail('tools:retry:field-unknown', `'retry.${key}' is not a retry field; the fields are ${[...RETRY_FIELDS].join(', ')}`);
  }
  const { attempts, backoffMs = 0, backoffFactor = 2 } = r as Record<string, unknown>;
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 2 || attempts > MAX_RETRY_ATTEMPTS) {
    fail('tools:retry:attempts', `retry.attempts is the number of attempts in all, the first included: an integer from 2 to ${MAX_RETRY_ATTEMPTS}; got ${formatValue(attempts)}`);
  }
  if (typeof backoffMs !== 'number' || !Number.isFinite(backoffMs) || backoffMs < 0 || backoffMs > MAX_TIMER_MS) {
    fail('tools:retry:backoffMs', `retry.backoffMs must be a number of milliseconds from 0 to ${MAX_TIMER_MS}; got ${formatValue(backoffMs)}`);
  }
  if (typeof backoffFactor !== 'number' || !Number.isFinite(backoffFactor) || backoffFactor < 1 || backoffFactor > 10) {
    fail('tools:retry:backoffFactor', `retry.backoffFactor must be a number from 1 to 10; got ${formatValue(backoffFactor)}`);
  }
  // Each field is in range, their product need not be: the wait before the last attempt is the
  // longest, and a timer over 2^31-1 ms fires after 1 ms in Node (the retries would not wait at all).
  const longest = backoffMs * backoffFactor ** (attempts - 2);
  if (longest > MAX_TIMER_MS) {
    fail(
      'tools:retry:longest-wait',
      `the wait before attempt ${attempts} is backoffMs * backoffFactor^(attempts-2) = ${backoffMs} * ${backoffFactor}^${attempts - 2} = ${longest} ms, over the longest a timer can wait (${MAX_TIMER_MS} ms, about 24.8 days); lower backoffMs, backoffFactor or attempts`,
    );
  }
  return { idempotent, timeoutMs, retry: Object.freeze({ attempts, backoffMs, backoffFactor }) };
}

export class ToolRegistry extends Registry<RegisteredTool> implements ToolRegistryApi {
  /** This registry's own ajv instances (`tools:schema:per-registry`). */
  readonly #schemas = new SchemaCompiler();
  readonly #compileApproval: ApprovalCompiler;

  /** `compileApproval` compiles each tool's `requiresApproval` at registration (approvals/ `compileApprovalPolicy`). */
  constructor(compileApproval: ApprovalCompiler) {
    super();
    this.#compileApproval = compileApproval;
  }

  register<A, R>(def: ToolDefinition<A, R>): RegisteredTool {
    if (!isPlainObject(def)) {
      throw new RegistrationError('tools:definition:object', 'a tool definition must be an object { name, description, inputSchema, handler, scope, ... }');
    }
    const d = def as unknown as Record<string, unknown>;
    const name = d.name;
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw new RegistrationError(
        'tools:name:invalid',
        `tool name ${typeof name === 'string' ? JSON.stringify(name) : String(name)} is invalid: use 1-64 letters, digits, '_' or '-' (the model APIs accept nothing else)`,
        { tool: name },
      );
    }
    const fail: (rule: string, message: string) => never = (rule, message) => {
      throw new RegistrationError(rule, `tool '${name}' breaks ${rule}: ${message}`, { tool: name });
    };
    if (RESERVED_TOOL_NAMES.includes(name)) {
      fail('tools:name:reserved', `'${name}' is provided by the runtime to every actor and cannot be registered; choose another name`);
    }
    if (name === PEER_DATA_KEY) {
      fail('tools:name:reserved', `'${name}' is where the envelope's domain-data keeps a peer agent's data (a tool's data goes under its name); choose another name`);
    }
    if (this.has(name)) fail('tools:duplicate:rejected', `a tool named '${name}' is already registered; tool names are unique`);
    for (const key of Object.keys(d)) {
      if (!KNOWN_FIELDS.has(key)) fail('tools:field:unknown', `'${key}' is not a tool field; the fields are ${[...KNOWN_FIELDS].join(', ')}`);
    }
    if (typeof d.description !== 'string' || d.description.trim() === '') {
      fail('tools:description:required', 'description must be a non-empty string; the model reads it to decide when to call the tool');
    }
    if (typeof d.handler !== 'function') fail('tools:handler:required', 'handler must be a function (args, ctx) => result');

    const scope = d.scope;
    if (scope !== 'generalist' && scope !== 'specialist') {
      fail('tools:scope:invalid', `scope must be 'generalist' (shared domain, always routed) or 'specialist' (private to one actor); got ${JSON.stringify(scope) ?? 'nothing'}`);
    }
    const routingIn = d.routing;
    if (routingIn !== undefined && routingIn !== 'routed' && routingIn !== 'bypass') {
      fail('tools:routing:invalid', `routing must be 'routed' or 'bypass'; got ${JSON.stringify(routingIn)}`);
    }
    const routing: Routing = (routingIn as Routing | undefined) ?? 'routed';
    if (scope === 'generalist' && routing === 'bypass') {
      fail(
        'tools:generalist-bypass:rejected',
        "a generalist tool touches shared domain data and always routes through the router (audit, gating, reactions); remove routing: 'bypass', or make it scope: 'specialist' with bypassRouting.reason and a justification",
      );
    }
    let bypassReason: string | undefined;
    if (routing === 'bypass') {
      const br = d.bypassRouting;
      if (!isPlainObject(br) || br.reason === undefined) {
        fail('tools:bypass:requires-reason', "routing: 'bypass' needs bypassRouting: { reason } saying why the call must not pass through the router (latency, coupling, framework-internal)");
      }
      const why = placeholderProblem((br as Record<string, unknown>).reason);
      if (why !== undefined) fail('tools:bypass:reason-placeholder-rejected', `bypassRouting.reason must explain why the tool bypasses the router, but ${why}`);
      bypassReason = ((br as Record<string, unknown>).reason as string).trim();
    } else if (d.bypassRouting !== undefined) {
      fail('tools:bypassRouting:only-with-bypass', "bypassRouting is only meaningful with routing: 'bypass'; remove it or set routing: 'bypass'");
    }
    let justification: string | undefined;
    if (scope === 'specialist') {
      if (d.justification === undefined) {
        fail('tools:specialist:requires-justification', 'a specialist tool needs a justification explaining why this work is private to one actor and not shared domain');
      }
      const why = placeholderProblem(d.justification);
      if (why !== undefined) fail('tools:justification:placeholder-rejected', `justification must explain why the work is private to one actor, but ${why}`);
      justification = (d.justification as string).trim();
    } else if (d.justification !== undefined) {
      if (typeof d.justification !== 'string') fail('tools:justification:string', 'justification must be a string');
      justification = d.justification.trim();
    }
    if (d.peerExposed !== undefined && typeof d.peerExposed !== 'boolean') fail('tools:peerExposed:boolean', 'peerExposed must be a boolean');
    if (d.peerExposed === true && scope !== 'generalist') {
      fail('tools:peerExposed:generalist-only', 'peerExposed: true is only allowed on generalist tools; a specialist tool is private to its actor and cannot be offered to A2A peers');
    }
    let tags: readonly string[] = Object.freeze([]);
    if (d.tags !== undefined) {
      if (!Array.isArray(d.tags) || !d.tags.every((t) => typeof t === 'string' && t.length > 0)) {
        fail('tools:tags:strings', 'tags must be an array of non-empty strings');
      }
      tags = Object.freeze([...(d.tags as string[])]);
    }

    const { idempotent, timeoutMs, retry } = checkExecution(d, routing, fail);

    // Everything that can refuse without compiling a schema first; then the schemas, each copied
    // (the tool keeps its own, frozen) and compiled, and released if a later one fails: a refused
    // registration leaves nothing behind in this registry's ajv (an $id stays free for the fix).
    const approval = this.#compileApproval(name, d.requiresApproval as ToolDefinition['requiresApproval'], d.allowStandingApproval as boolean | undefined);
    const inputSchema = this.#copy(name, 'inputSchema', d.inputSchema, fail);
    const outputSchema = d.outputSchema === undefined ? undefined : this.#copy(name, 'outputSchema', d.outputSchema, fail);
    const compiledIn = this.#compile(name, 'inputSchema', inputSchema, fail);
    let compiledOut: CompiledSchema | undefined;
    try {
      compiledOut = outputSchema === undefined ? undefined : this.#compile(name, 'outputSchema', outputSchema, fail);
    } catch (e) {
      compiledIn.release();
      throw e;
    }
    const validateIn = compiledIn.validate;
    const validateOut = compiledOut?.validate;

    const tool: RegisteredTool = Object.freeze({
      name,
      description: d.description as string,
      scope: scope as Scope,
      routing,
      bypassReason,
      justification,
      peerExposed: d.peerExposed === true,
      tags,
      idempotent,
      timeoutMs,
      retry,
      inputSchema,
      outputSchema,
      handler: d.handler as ToolHandler,
      approval,
      validateInput: (args: unknown): Violation[] => (validateIn(args) ? NO_VIOLATIONS : toViolations(validateIn.errors)),
      validateOutput: (result: unknown): Violation[] =>
        validateOut === undefined || validateOut(result) ? NO_VIOLATIONS : toViolations(validateOut.errors),
    });
    return this.add(name, tool);
  }

  /** A checked, deep-frozen copy of a schema field (`tools:registered:frozen`). */
  #copy(name: string, field: 'inputSchema' | 'outputSchema', schema: unknown, fail: (rule: string, message: string) => never): Record<string, unknown> {
    const isInput = field === 'inputSchema';
    const rulePrefix = isInput ? 'tools:schema' : 'tools:output-schema';
    if (!isPlainObject(schema)) {
      fail(`${rulePrefix}:required`, `${field} must be a JSON Schema object${isInput ? ", e.g. { type: 'object', properties: {} }" : ''}`);
    }
    if (isInput && schema.type !== 'object') {
      fail('tools:schema:object-type', "inputSchema must have type: 'object' (tool arguments are always an object)");
    }
    try {
      return frozenCopy(schema);
    } catch (e) {
      return fail(`${rulePrefix}:invalid-fails-registration`, `${field} must be plain data (it is copied at registration): ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  #compile(name: string, field: 'inputSchema' | 'outputSchema', schema: Record<string, unknown>, fail: (rule: string, message: string) => never): CompiledSchema {
    const rulePrefix = field === 'inputSchema' ? 'tools:schema' : 'tools:output-schema';
    try {
      return this.#schemas.compile(schema, `tool '${name}' (${field})`);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      return fail(`${rulePrefix}:invalid-fails-registration`, e instanceof SchemaDeclarationError ? `${field}: ${message}` : `${field} is not a valid JSON Schema: ${message}`);
    }
  }

  /** Resolves tool names in order; throws one TurnstateError ('tool.unknown') listing every unknown name. */
  resolve(names: readonly string[], forActor?: string): RegisteredTool[] {
    const out: RegisteredTool[] = new Array<RegisteredTool>(names.length);
    let unknown: string[] | undefined;
    for (let i = 0; i < names.length; i++) {
      const n = names[i] as string;
      const t = this.get(n);
      if (t === undefined) (unknown ??= []).push(n);
      else out[i] = t;
    }
    if (unknown !== undefined) {
      const who = forActor === undefined ? '' : ` for actor '${forActor}'`;
      const reserved = unknown.filter((n) => RESERVED_TOOL_NAMES.includes(n));
      const hint = reserved.length > 0 ? ` (${reserved.join(', ')} ${reserved.length === 1 ? 'is' : 'are'} provided by the runtime: remove from the actor's tools)` : '';
      const known = this.ids().length === 0 ? 'none' : this.ids().join(', ');
      throw new TurnstateError(
        'tool.unknown',
        `unknown tool${unknown.length === 1 ? '' : 's'}${who}: ${unknown.join(', ')}${hint}. Registered tools: ${known}`,
        { details: { actor: forActor, unknown } },
      );
    }
    return out;
  }
}
