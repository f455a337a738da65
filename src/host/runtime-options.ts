/**
 * createRuntime's options, checked before anything is built: every key is a known option (a
 * misspelt one is refused naming it and the option it resembles, never ignored), ports can serve,
 * functions are functions. Each refusal is TurnstateError('options.invalid') naming the option.
 * The limits are checked by `runtimeLimits` (input-checks.ts), `reasoningTraces` by the runtime.
 */
import type { ArtifactStore, RuntimeOptions, SessionStore } from '../api.js';
import { TurnstateError } from '../errors.js';
import { integerProblem } from '../limits.js';
import { CANONICAL_PART_TYPES, CANONICAL_TURN_STATES } from '../registries/index.js';
import { unknownOptionProblem } from '../registries/registry.js';
import type { Registries } from '../registries/types.js';

/** Every option of RuntimeOptions (the compiler keeps this list and the interface the same). */
const KNOWN: Readonly<Record<keyof RuntimeOptions, true>> = {
  model: true,
  contextModel: true,
  artifacts: true,
  store: true,
  registries: true,
  inspect: true,
  limits: true,
  canAnswerApproval: true,
  passivateAfterMs: true,
  reasoningTraces: true,
  now: true,
  newId: true,
};
const RUNTIME_OPTION_NAMES: readonly string[] = Object.freeze(Object.keys(KNOWN));

/** Each registry of `Registries` and the methods the runtime calls on it. */
const REGISTRY_METHODS = {
  partTypes: ['get', 'has', 'list', 'ids', 'register', 'deliveryFor'],
  turnStates: ['get', 'has', 'list', 'ids', 'register'],
  tools: ['get', 'has', 'list', 'ids', 'register', 'resolve'],
  actors: ['get', 'has', 'list', 'ids', 'register'],
  surfaceTemplates: ['get', 'has', 'list', 'ids', 'register'],
} as const;

/**
 * Every method of the SessionStore port: all are required (the compiler keeps this list and the
 * interface the same). A store lacking one is refused at createRuntime, not at the first restart
 * or approval that would call it.
 */
const STORE_METHODS: Readonly<Record<Exclude<keyof SessionStore, 'kind' | 'groupCommit'>, true>> = {
  createSession: true,
  getSession: true,
  listSessions: true,
  deleteSession: true,
  commit: true,
  readEvents: true,
  lastSeq: true,
  readMailbox: true,
  readQueue: true,
  readExecutions: true,
  loadSnapshot: true,
  getApproval: true,
  listApprovals: true,
  resolveApproval: true,
  close: true,
};
const STORE_METHOD_NAMES = Object.keys(STORE_METHODS) as readonly (keyof typeof STORE_METHODS)[];

const ARTIFACT_METHODS = ['put', 'head', 'read'] as const;
const ARTIFACT_OPTIONAL_METHODS = ['open', 'delete', 'deleteSession', 'close'] as const;

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

/** The options a runtime is made with: ports that can serve, functions where functions go (options.invalid naming the option). */
export function checkRuntimeOptions(options: RuntimeOptions): void {
  const bad = (what: string) => new TurnstateError('options.invalid', `createRuntime: ${what}`);
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw bad(`options must be an object { model, ... }, got ${typeName(options)}`);
  const unknown = unknownOptionProblem(options, RUNTIME_OPTION_NAMES);
  if (unknown !== undefined) throw bad(unknown);
  if (typeof options.model?.stream !== 'function') throw bad('needs a `model` (a ModelPort, with a stream() method)');
  if (options.contextModel !== undefined && typeof options.contextModel?.stream !== 'function') throw bad('`contextModel` must be a ModelPort (with a stream() method)');
  if (options.store !== undefined) {
    const why = storeProblem(options.store);
    if (why !== undefined) throw bad(why);
  }
  if (options.artifacts !== undefined) {
    const why = artifactsProblem(options.artifacts);
    if (why !== undefined) throw bad(why);
  }
  const inspect = options.inspect as unknown;
  if (inspect !== undefined && typeof inspect !== 'function') {
    if (inspect === null || typeof inspect !== 'object' || Array.isArray(inspect)) {
      throw bad(`\`inspect\` must be a function (event) => void or an observer { next(event) }, got ${typeName(inspect)}`);
    }
    const next = (inspect as { next?: unknown }).next;
    if (next !== undefined && typeof next !== 'function') throw bad(`\`inspect.next\` must be a function (event) => void, got ${typeName(next)}`);
  }
  for (const name of ['now', 'newId', 'canAnswerApproval'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw bad(`\`${name}\` must be a function, got ${typeName(options[name])}`);
  }
  // As the CLI's --passivate-after: a whole number of milliseconds (0: never). Not a timer (an idle
  // time is compared with it; the sweep runs at most every minute), so no timer bound: 30 days is fine.
  const passivate = integerProblem('`passivateAfterMs`', options.passivateAfterMs, 0);
  if (passivate !== undefined) throw bad(passivate);
  if (options.registries !== undefined) {
    const why = registriesProblem(options.registries);
    if (why !== undefined) throw bad(why);
  }
}

/** What keeps `s` from being a SessionStore, or undefined: the methods it lacks, by name. */
function storeProblem(s: unknown): string | undefined {
  const what = '`store` must be a SessionStore (every method of the port: see docs/stores.md)';
  if (s === null || typeof s !== 'object') return `${what}, got ${typeName(s)}`;
  const store = s as Partial<Record<string, unknown>>;
  const missing = STORE_METHOD_NAMES.filter((m) => typeof store[m] !== 'function');
  if (missing.length > 0) return `${what}; it lacks ${missing.map((m) => `${m}()`).join(', ')}`;
  return undefined;
}

/** What keeps `a` from being an ArtifactStore, or undefined. */
function artifactsProblem(a: unknown): string | undefined {
  if (a === null || typeof a !== 'object') return `\`artifacts\` must be an ArtifactStore (put, head, read: see docs/concepts/artifacts.md), got ${typeName(a)}`;
  const store = a as Partial<Record<keyof ArtifactStore, unknown>>;
  const missing = ARTIFACT_METHODS.filter((m) => typeof store[m] !== 'function');
  if (missing.length > 0) return `\`artifacts\` must be an ArtifactStore (put, head, read: see docs/concepts/artifacts.md); it lacks ${missing.map((m) => `${m}()`).join(', ')}`;
  const notFn = ARTIFACT_OPTIONAL_METHODS.find((m) => store[m] !== undefined && typeof store[m] !== 'function');
  if (notFn !== undefined) return `\`artifacts.${notFn}\` must be a function when given, got ${typeName(store[notFn])}`;
  return undefined;
}

/** What keeps `r` from being the runtime's registries (createRegistries() makes them), or undefined. */
function registriesProblem(r: unknown): string | undefined {
  if (r === null || typeof r !== 'object') return `\`registries\` must be the runtime's registries (createRegistries()), got ${r === null ? 'null' : typeof r}`;
  const regs = r as Record<string, Record<string, unknown> | null | undefined>;
  for (const [name, methods] of Object.entries(REGISTRY_METHODS)) {
    const reg = regs[name];
    if (reg === null || typeof reg !== 'object') return `\`registries.${name}\` is missing (registries: ${Object.keys(REGISTRY_METHODS).join(', ')}; see createRegistries())`;
    const method = methods.find((m) => typeof reg[m] !== 'function');
    if (method !== undefined) return `\`registries.${name}\` is missing its ${method}() method`;
  }
  // The machine and the respond() parser rely on every canonical entry being there.
  const { turnStates, partTypes } = r as Registries;
  const state = Object.keys(CANONICAL_TURN_STATES).find((id) => !turnStates.has(id));
  if (state !== undefined) return `\`registries.turnStates\` lacks the canonical turn state "${state}" (a TurnStateRegistry has every one)`;
  const partType = Object.keys(CANONICAL_PART_TYPES).find((id) => !partTypes.has(id));
  if (partType !== undefined) return `\`registries.partTypes\` lacks the canonical part type "${partType}" (a PartTypeRegistry has every one)`;
  return undefined;
}
