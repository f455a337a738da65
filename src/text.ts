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
