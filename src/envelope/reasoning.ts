/**
 * Reasoning-trace persistence (spec 000 `reasoning-trace`: "Persistence configurable"): what the
 * runtime records, publishes and puts in the envelope for one model-native thinking block.
 *
 * - `keep` (default): a reasoning-trace part with the thinking text.
 * - `redact`: a reasoning-trace part with empty text and `metadata.redacted: true` — consumers
 *   and the log know the model reasoned, never what it thought.
 * - `drop`: no part at all.
 * The model's own signed thinking blocks stay in the mailbox either way: the model API requires
 * them back unchanged within a tool-use loop. This governs parts, events and envelopes.
 */
import type { Part } from '../types.js';

export type ReasoningTraces = 'keep' | 'redact' | 'drop';
export const REASONING_TRACES: readonly ReasoningTraces[] = ['keep', 'redact', 'drop'];

export function reasoningTracePart(thinking: string, mode: ReasoningTraces): Part | undefined {
  switch (mode) {
    case 'keep':
      return { text: thinking, metadata: { partType: 'reasoning-trace' } };
    case 'redact':
      return { text: '', metadata: { partType: 'reasoning-trace', redacted: true } };
    case 'drop':
      return undefined;
  }
}
