/**
 * The runtime's bounds and their defaults: the single source every layer reads (the runtime
 * merges `RuntimeOptions.limits` over `DEFAULT_LIMITS`; the machines default to the same values
 * when created without them). Leaf module: imports nothing of the project.
 */

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
