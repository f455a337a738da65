/**
 * Bounded retries for model calls: exponential backoff with full jitter, capped, honouring a
 * server's `retry-after`. The caller decides *whether* an attempt may be retried (only when none
 * of its events reached the consumer); this module decides *when*.
 */
import { ModelError, TurnstateError } from '../errors.js';
import { formatValue, timerMsProblem } from '../limits.js';
import { unknownOptionProblem } from '../registries/registry.js';

/**
 * How a model port retries a failed call (`AnthropicModelOptions.retry`, exported by
 * `turnstate/anthropic`). Not the tool `RetryPolicy` of `turnstate`, which retries a tool call.
 */
export interface ModelRetryPolicy {
  /** Retries after the first attempt (default 3; 0 disables). */
  retries: number;
  /** Base delay of the exponential backoff (default 500 ms; an integer from 0 to MAX_TIMER_MS). */
  baseDelayMs: number;
  /** Cap of one computed backoff delay (default 8 s; an integer from 0 to MAX_TIMER_MS). */
  maxDelayMs: number;
  /**
   * The longest `retry-after` honoured (default 60 s; an integer from 0 to MAX_TIMER_MS). A server
   * asking for longer gets no retry: the error is thrown with its `retryAfterMs` so the caller can
   * reschedule.
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<ModelRetryPolicy> = Object.freeze({
  retries: 3,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
});

/** Every setting of ModelRetryPolicy, in order (a misspelt one is refused naming the one it resembles). */
const RETRY_SETTINGS: readonly string[] = Object.freeze(Object.keys(DEFAULT_RETRY_POLICY));

/**
 * The policy with `p` over the defaults (a setting given as undefined keeps its default),
 * checked: `p` an object of ModelRetryPolicy settings (any other key, such as a tool retry
 * policy's `attempts`, is refused, never ignored), `retries` a finite number >= 0 (rounded down),
 * each delay an integer of milliseconds a timer can wait (a longer one fires after 1 ms: a
 * maxRetryAfterMs past it would hammer a server that asked to wait longer). A refusal is
 * TurnstateError('options.invalid') naming the setting and the value received: "retry policy:
 * baseDelayMs ...", or with `owner` (the factory given the policy as its `retry` option)
 * "createAnthropicModel: retry.baseDelayMs ...".
 */
export function resolveRetryPolicy(p: Partial<ModelRetryPolicy> | undefined, owner?: string): ModelRetryPolicy {
  const head = owner === undefined ? 'retry policy: ' : `${owner}: `;
  const name = (k: string): string => (owner === undefined ? k : `retry.${k}`);
  const bad = (what: string) => new TurnstateError('options.invalid', `${head}${what}`);
  if (p !== undefined && (p === null || typeof p !== 'object' || Array.isArray(p))) {
    throw bad(`${owner === undefined ? 'the policy' : '`retry`'} must be an object { ${RETRY_SETTINGS.join(', ')} }, got ${formatValue(p)}`);
  }
  const unknown = p === undefined ? undefined : unknownOptionProblem(p, RETRY_SETTINGS);
  if (unknown !== undefined) throw bad(owner === undefined ? unknown : `retry: ${unknown}`);
  const r: ModelRetryPolicy = { ...DEFAULT_RETRY_POLICY };
  for (const k of Object.keys(DEFAULT_RETRY_POLICY) as (keyof ModelRetryPolicy)[]) {
    const v = p?.[k];
    if (v !== undefined) r[k] = v;
  }
  if (typeof r.retries !== 'number' || !Number.isFinite(r.retries) || r.retries < 0) {
    throw bad(`${name('retries')} must be a finite number >= 0, got ${formatValue(r.retries)}`);
  }
  for (const k of ['baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const) {
    const problem = timerMsProblem(name(k), r[k], 0);
    if (problem !== undefined) throw bad(problem);
  }
  r.retries = Math.floor(r.retries);
  return r;
}

/**
 * Delay before retry number `attempt` (0 for the first retry), or undefined when the error must
 * not be retried under this policy. A `retryAfterMs` from the server wins over the backoff (it is
 * a floor, not jittered down); full jitter otherwise: uniform in [0, min(cap, base * 2^attempt)].
 */
export function retryDelay(
  attempt: number,
  err: ModelError,
  policy: ModelRetryPolicy,
  random: () => number = Math.random,
): number | undefined {
  if (!err.retryable || err.code === 'model.aborted' || attempt >= policy.retries) return undefined;
  if (err.retryAfterMs !== undefined) {
    return err.retryAfterMs > policy.maxRetryAfterMs ? undefined : err.retryAfterMs;
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.floor(random() * ceiling);
}

/**
 * Parses `retry-after-ms` (milliseconds) or `retry-after` (seconds, or an HTTP date) into
 * milliseconds; undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: { get(name: string): string | null } | undefined | null, now = Date.now()): number | undefined {
  if (headers === undefined || headers === null || typeof headers.get !== 'function') return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null) {
    const n = Number.parseFloat(ms);
    if (Number.isFinite(n) && n >= 0) return Math.ceil(n);
  }
  const s = headers.get('retry-after');
  if (s === null) return undefined;
  const secs = Number.parseFloat(s);
  if (Number.isFinite(secs) && /^\s*\d+(\.\d+)?\s*$/.test(s)) return Math.max(0, Math.ceil(secs * 1000));
  const at = Date.parse(s);
  if (Number.isFinite(at)) return Math.max(0, at - now);
  return undefined;
}

/** Resolves after `ms`, or rejects with ModelError model.aborted as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortedError(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The error an aborted model call ends with. */
export function abortedError(signal?: AbortSignal): ModelError {
  const reason = signal?.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : undefined;
  return new ModelError('model.aborted', why ? `model call aborted: ${why}` : 'model call aborted', { retryable: false });
}
