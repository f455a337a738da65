/**
 * The runtime's bounds and their defaults: the single source every layer reads (the runtime
 * merges `RuntimeOptions.limits` over `DEFAULT_LIMITS`; the machines default to the same values
 * when created without them), and the checks every layer's options share (millisecond options,
 * counts, resume cursors), each returning the problem as text for the caller to throw in its own
 * error. Leaf module: imports only the text leaf.
 */
import { pairSafeEnd } from './text.js';

export interface RuntimeLimits {
  /** Model calls one actor may make in one turn before the turn settles as `error`. */
  maxModelCallsPerTurn: number;
  /** Rejected respond() calls sent back to the model before the turn settles as `error`. */
  maxRespondRetries: number;
  /** Free-text replies answered with a nudge to call respond() before the turn settles as `error`. */
  maxFreeTextNudges: number;
  /** Hand-offs (passTo) in one turn before the turn settles as `error`. */
  maxHandoffsPerTurn: number;
  /** Characters of a tool result kept in the execution log. */
  executionResultMaxChars: number;
  /**
   * Characters of a tool result the model is shown (every later request of the session carries
   * it again): a longer one is cut, with a note saying how long it was. Default 100,000.
   */
  toolResultMaxChars: number;
  /**
   * Messages that may wait behind a session's running turn (queued, or joined to it under
   * `interrupt`); one more is refused with TurnstateError('session.queue_full') (HTTP 429).
   * Default 100.
   */
  maxQueuedMessages: number;
  /**
   * Mailbox entries kept in memory, over all sessions between turns, so a session that wakes
   * reads only what is new (least recently used sessions go first; 0 keeps none). Default 100,000.
   */
  historyCacheEntries: number;
  /**
   * Milliseconds the llm-context translation at settlement may take; past it the envelope settles
   * without the part (it is an enrichment). Default 30,000.
   */
  llmContextTimeoutMs: number;
}

export const DEFAULT_LIMITS: Readonly<RuntimeLimits> = Object.freeze({
  maxModelCallsPerTurn: 16,
  maxRespondRetries: 2,
  maxFreeTextNudges: 2,
  maxHandoffsPerTurn: 4,
  executionResultMaxChars: 8192,
  toolResultMaxChars: 100_000,
  maxQueuedMessages: 100,
  historyCacheEntries: 100_000,
  llmContextTimeoutMs: 30_000,
});

/**
 * setTimeout's longest delay (2^31-1 ms, about 24.8 days): Node fires a longer timer after 1 ms
 * (TimeoutOverflowWarning), so every millisecond setting that becomes a timer is refused above it.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The shortest heartbeat interval a transport takes (ms): a shorter one is a flood, not a
 * keep-alive (1 ms writes a thousand frames a second per connection), and a WebSocket peer would
 * have to answer each ping within it.
 */
export const MIN_HEARTBEAT_MS = 100;

/**
 * A value as an option error shows it after "got": a string quoted (`"1000"`, not `1000`), -0 as
 * -0, NaN and Infinity by name, anything else by its JSON text or its kind; at most 60 characters.
 */
export function formatValue(v: unknown): string {
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'symbol' || typeof v === 'boolean' || v === undefined || v === null) return String(v);
  let text: string | undefined;
  try {
    text = JSON.stringify(v);
  } catch {
    text = undefined;
  }
  if (text === undefined) return Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : typeof v;
  return text.length <= 60 ? text : `${text.slice(0, pairSafeEnd(text, 59))}…`;
}

/**
 * The accepted range of a millisecond option, as its refusal states it. `zero`: what 0 means
 * when 0 is accepted below `min` (or as the low end of the range).
 */
function timerMsRange(min: number, zero?: string): string {
  const span = `from ${min} to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;
  if (zero === undefined) return `an integer ${span}`;
  return min > 0 ? `0 (${zero}) or an integer ${span}` : `an integer ${span.slice(0, -1)}; 0: ${zero})`;
}

/**
 * Whether `v` is a millisecond option a timer can take: an integer from `min` to MAX_TIMER_MS,
 * or 0 when `zero` says what 0 means (e.g. "never").
 */
export function isTimerMs(v: unknown, min = 0, zero?: string): v is number {
  if (typeof v !== 'number' || !Number.isInteger(v)) return false;
  return (v >= min && v <= MAX_TIMER_MS) || (v === 0 && zero !== undefined);
}

/**
 * The refusal of millisecond option `name` (as the caller spells it), or undefined when `v` is
 * undefined (the default applies) or fits `isTimerMs(v, min, zero)`. Every option that becomes a
 * timer is checked with this: NaN, a string, a fraction or a negative never silently means
 * "off", and nothing above MAX_TIMER_MS fires after 1 ms.
 */
export function timerMsProblem(name: string, v: unknown, min = 0, zero?: string): string | undefined {
  if (v === undefined || isTimerMs(v, min, zero)) return undefined;
  return `${name} must be ${timerMsRange(min, zero)}, got ${formatValue(v)}`;
}

/** The refusal of count option `name` (bytes, calls, retries), or undefined when `v` is undefined or a safe integer of at least `min`. */
export function integerProblem(name: string, v: unknown, min: number): string | undefined {
  if (v === undefined || (typeof v === 'number' && Number.isSafeInteger(v) && v >= min)) return undefined;
  return `${name} must be an integer of at least ${min}, got ${formatValue(v)}`;
}

/**
 * The refusal of a resume cursor past the end of a session's log (`cursor.ahead`), or undefined.
 * Such a cursor was never sent by this session: following from it would silently skip every
 * event up to it. One rule for `session.events(afterSeq)`, SSE `Last-Event-ID` / `?after` and
 * WebSocket `resumeFrom` (`source` names which).
 */
export function cursorAheadProblem(source: string, after: number, sessionId: string, lastSeq: number): string | undefined {
  if (after <= lastSeq) return undefined;
  return `${source} ${after} is past the end of session "${sessionId}" (its last seq is ${lastSeq}); resume from a seq this session sent, or from 0`;
}

/** The limits that become timers (milliseconds): each is at most MAX_TIMER_MS. */
export const TIMER_LIMITS: readonly (keyof RuntimeLimits)[] = Object.freeze(['llmContextTimeoutMs']);

/** The session machine's bounds (its input's `maxHandoffs` and `loop`) for the given runtime limits. */
export function sessionMachineLimits(limits: RuntimeLimits): {
  maxHandoffs: number;
  loop: { maxModelCalls: number; maxRespondRetries: number; maxNudges: number };
} {
  return {
    maxHandoffs: limits.maxHandoffsPerTurn,
    loop: { maxModelCalls: limits.maxModelCallsPerTurn, maxRespondRetries: limits.maxRespondRetries, maxNudges: limits.maxFreeTextNudges },
  };
}

/** The longest reason an approval answer may carry, on every channel (characters). */
export const MAX_APPROVAL_REASON_CHARS = 2000;

/** The longest answering principal, as JSON text: it is stored with the record and in `approval.resolved`. */
export const MAX_PRINCIPAL_JSON_CHARS = 8192;
