/**
 * The ScriptedModel's script format: JSON-serialisable, so tests, demos and benchmarks
 * describe model behaviour as data. See docs/concepts/scripted-model.md.
 *
 * For each model call the rules are tried in order; the first whose `when` matches wins.
 * `when` is matched against the latest entry of the calling actor's view of the mailbox:
 * the user's message, a tool result, a handoff, or a nudge/rejection.
 */
import type { ModelErrorCode } from '../errors.js';
import type { ModelStopReason } from '../types.js';

export interface ModelScript {
  rules: ScriptRule[];
  /** Used when no rule matches (default: an error respond() call naming the miss). */
  fallback?: ScriptResponse | undefined;
}

export interface ScriptRule {
  /** Optional label, reported in errors and replay diffs. */
  id?: string | undefined;
  when?: ScriptMatch | undefined;
  /** The rule may fire at most this many times in the model's lifetime. */
  times?: number | undefined;
  respond: ScriptResponse;
}

export interface ScriptMatch {
  /** Calling actor's name. */
  actor?: string | undefined;
  /** Kind of the latest entry: 'user' | 'tool_result' | 'handoff' | 'rejection' | 'nudge' | 'any' (default). */
  on?: 'user' | 'tool_result' | 'handoff' | 'rejection' | 'nudge' | 'any' | undefined;
  /** Regex (case-insensitive) tested against the latest entry's text (user text, tool result content). */
  text?: string | undefined;
  /** For `on: 'tool_result'`: the tool whose result it is. */
  tool?: string | undefined;
  /** 0-based index of this model call within the turn. */
  call?: number | undefined;
}

/** One model response. Strings in blocks may use `$1`..`$9` for the match's capture groups, `$user` for the turn's user text and `$$` for a literal `$`. */
export interface ScriptResponse {
  blocks: ScriptBlock[];
  /** Default 'tool_use' when a tool_use block is present, else 'end_turn'. */
  stopReason?: ModelStopReason | undefined;
  /** Split each tool_use input JSON into chunks of this many characters (streams part.delta). */
  chunkSize?: number | undefined;
  /** Token counts reported for the call; a count left out is 0. */
  usage?: { inputTokens?: number | undefined; outputTokens?: number | undefined } | undefined;
  /** Throw a ModelError with this code (one of MODEL_ERROR_CODES) instead of answering (error paths). */
  fail?: { code: ModelErrorCode; message: string; retryable?: boolean | undefined } | undefined;
}

export type ScriptBlock =
  | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string | undefined }
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string | undefined };
