/**
 * Text helpers every layer may use: a leaf, like types.ts and errors.ts (it imports nothing of the
 * project).
 */

/**
 * Where to cut `text` to at most `max` UTF-16 code units without splitting a surrogate pair: `max`,
 * or one fewer when the unit before it opens a pair. A lone surrogate has no UTF-8 form: model
 * APIs refuse such a body and stores cannot write it as text.
 */
export function pairSafeEnd(text: string, max: number): number {
  return max > 0 && (text.charCodeAt(max - 1) & 0xfc00) === 0xd800 ? max - 1 : max;
}

/**
 * `text` cut to at most `max` UTF-16 code units for echoing back in an error message, a `…` after
 * them marking a cut (so a cut echo is up to `max + 1` units): the cut never splits a surrogate
 * pair (see pairSafeEnd), and any lone surrogate the text itself holds is replaced (see
 * wellFormed), so the echo always has a UTF-8 form.
 */
export function clipForEcho(text: string, max: number): string {
  return wellFormed(text.length > max ? `${text.slice(0, pairSafeEnd(text, max))}…` : text);
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` with every lone surrogate replaced by U+FFFD (as `String.prototype.toWellFormed`): for
 * messages built from text we do not control, e.g. a JSON parser's, which names an unexpected
 * character by one UTF-16 code unit, half of an emoji.
 */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd');
}

/** `text` with every occurrence of each secret replaced by `[redacted]` (an error message, a log line). */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const k of secrets) if (out.includes(k)) out = out.split(k).join('[redacted]');
  return out;
}
