/**
 * createAapHandler's options, checked before the handler is built, as createRuntime checks its
 * own: every key is a known option (a misspelt one is refused naming it and the option it
 * resembles, never ignored), and every number is one the handler can use. Each refusal is
 * TurnstateError('options.invalid') naming the option and the value received.
 */
import type { SessionRuntime } from '../../api.js';
import { TurnstateError } from '../../errors.js';
import { MIN_HEARTBEAT_MS, formatValue, integerProblem, timerMsProblem } from '../../limits.js';
import { unknownOptionProblem } from '../../registries/registry.js';
import type { Authenticate } from '../types.js';
import type { AapAgentConfig } from './agents.js';
import { STREAM_MODES, type StreamMode } from './types.js';

export interface AapOptions {
  runtime: SessionRuntime;
  /** Request -> principal, or 401/403. Without it every request is the anonymous principal. */
  authenticate?: Authenticate | undefined;
  /** Request-body limit in bytes (default 1 MiB; an integer of at least 1); larger bodies are 413. */
  maxBodyBytes?: number | undefined;
  /** Agents offered (default: every registered actor, each with its defaults). */
  agents?: AapAgentConfig[] | undefined;
  /** Mount point, e.g. `/aap` (default: the root). */
  basePath?: string | undefined;
  /** Stream modes declared in `/meta` and accepted (default: delta, message, none). */
  streamModes?: StreamMode[] | undefined;
  /** Serve `GET /meta` without authentication (default false). */
  publicMeta?: boolean | undefined;
  /** SSE heartbeat interval in ms (default 15000; 0 disables, else an integer from 100 to MAX_TIMER_MS). */
  heartbeatMs?: number | undefined;
  /** On close, how long running requests may take to finish (default 10000 ms; an integer from 0 to MAX_TIMER_MS). */
  closeGraceMs?: number | undefined;
}

/** Every option of AapOptions (the compiler keeps this list and the interface the same). */
const KNOWN: Readonly<Record<keyof AapOptions, true>> = {
  runtime: true,
  authenticate: true,
  maxBodyBytes: true,
  agents: true,
  basePath: true,
  streamModes: true,
  publicMeta: true,
  heartbeatMs: true,
  closeGraceMs: true,
};
const AAP_OPTION_NAMES: readonly string[] = Object.freeze(Object.keys(KNOWN));

/** Throws TurnstateError('options.invalid') naming the first option of `opts` the handler cannot use. */
export function checkAapOptions(opts: AapOptions): void {
  const bad = (what: string) => new TurnstateError('options.invalid', `createAapHandler: ${what}`);
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw bad(`options must be an object { runtime, ... }, got ${formatValue(opts)}`);
  const unknown = unknownOptionProblem(opts, AAP_OPTION_NAMES);
  if (unknown !== undefined) throw bad(unknown);
  const runtime = opts.runtime as unknown as { session?: unknown } | null | undefined;
  if (runtime === null || typeof runtime !== 'object' || typeof runtime.session !== 'function') throw bad('needs a `runtime` (createRuntime())');
  const problem =
    integerProblem('`maxBodyBytes`', opts.maxBodyBytes, 1) ??
    // 0 turns the heartbeat off (documented); anything else is an interval a timer can keep.
    timerMsProblem('`heartbeatMs`', opts.heartbeatMs, MIN_HEARTBEAT_MS, 'no heartbeat') ??
    // 0: running turns end at once on close.
    timerMsProblem('`closeGraceMs`', opts.closeGraceMs, 0);
  if (problem !== undefined) throw bad(problem);
  if (opts.authenticate !== undefined && typeof opts.authenticate !== 'function') throw bad(`\`authenticate\` must be a function, got ${formatValue(opts.authenticate)}`);
  if (opts.basePath !== undefined && typeof opts.basePath !== 'string') throw bad(`\`basePath\` must be a string, got ${formatValue(opts.basePath)}`);
  if (opts.publicMeta !== undefined && typeof opts.publicMeta !== 'boolean') throw bad(`\`publicMeta\` must be a boolean, got ${formatValue(opts.publicMeta)}`);
  if (opts.agents !== undefined && !Array.isArray(opts.agents)) throw bad(`\`agents\` must be an array of agent configs, got ${formatValue(opts.agents)}`);
  const modes = opts.streamModes as unknown;
  if (modes !== undefined && (!Array.isArray(modes) || modes.some((m) => !(STREAM_MODES as readonly unknown[]).includes(m)))) {
    throw bad(`\`streamModes\` must be an array of ${STREAM_MODES.map((m) => `'${m}'`).join(', ')}, got ${formatValue(modes)}`);
  }
}
