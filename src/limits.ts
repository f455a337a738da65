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
}

export const DEFAULT_LIMITS: Readonly<RuntimeLimits> = Object.freeze({
  maxModelCallsPerTurn: 16,
  maxRespondRetries: 2,
  maxFreeTextNudges: 2,
  maxHandoffsPerTurn: 4,
  executionResultMaxChars: 8192,
});

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
