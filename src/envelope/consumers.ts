/**
 * Who consumes a turn's envelope: the part types its originators declare (spec 001 "only if at
 * least one originator's Agent Card declares consumes: ['llm-context']").
 *
 * An originator declares them with SendOptions `consumes` (API, WebSocket `send`, AAP), with its
 * Agent Card (`callerCard`, an A2A peer), or with the deprecated `consumesLlmContext: true`.
 * `normalizeConsumes()` folds the three into one checked `consumes` list at the runtime's edge,
 * so a turn persists names only (never a whole card).
 *
 * Contract: an unknown part type in `consumes` is refused (TurnstateError
 * 'message.invalid_consumes', naming it) before anything is accepted; a caller card's unknown
 * part types are ignored (a peer may consume types this runtime never produces).
 */
import { TurnstateError } from '../errors.js';
import type { SendOptions } from '../api.js';
import type { PartTypeRegistryApi } from '../registries/types.js';
import { partTypesOf } from './agent-card.js';

/** The largest `consumes` list accepted (there are a few dozen part types at most). */
export const MAX_CONSUMES = 64;

/** `opts` with `callerCard` and `consumesLlmContext` folded into a checked, de-duplicated `consumes`. */
export function normalizeConsumes(opts: SendOptions | undefined, partTypes: PartTypeRegistryApi): SendOptions | undefined {
  if (opts === undefined || (opts.consumes === undefined && opts.callerCard === undefined && opts.consumesLlmContext === undefined)) return opts;
  const { callerCard, consumesLlmContext, consumes, ...rest } = opts;
  const out = new Set<string>();
  if (consumes !== undefined) {
    if (!Array.isArray(consumes) || consumes.length > MAX_CONSUMES) {
      throw new TurnstateError('message.invalid_consumes', `consumes must be an array of at most ${MAX_CONSUMES} part type names`);
    }
    for (const t of consumes as unknown[]) {
      if (typeof t !== 'string' || !partTypes.has(t)) {
        throw new TurnstateError(
          'message.invalid_consumes',
          `consumes lists ${JSON.stringify(t)}, which is not a registered part type (registered: ${partTypes.ids().join(', ')})`,
          { details: { partType: t } },
        );
      }
      out.add(t);
    }
  }
  if (callerCard !== undefined) {
    try {
      for (const t of partTypesOf(callerCard).consumes) if (partTypes.has(t)) out.add(t);
    } catch (err) {
      throw new TurnstateError('message.invalid_caller_card', `callerCard: ${(err as Error).message}`, { cause: err });
    }
  }
  if (consumesLlmContext === true) out.add('llm-context');
  return out.size > 0 ? { ...rest, consumes: [...out] } : rest;
}

/** Whether an originator of the turn consumes `partType` (`consumesLlmContext` kept for turns persisted before `consumes`). */
export function consumesPart(opts: SendOptions, partType: string): boolean {
  return opts.consumes?.includes(partType) === true || (partType === 'llm-context' && opts.consumesLlmContext === true);
}

/** The turn's options with another originator's `consumes` added (a message that joined the turn). */
export function withConsumers(opts: SendOptions, more: readonly string[] | undefined): SendOptions {
  if (more === undefined || more.every((t) => opts.consumes?.includes(t))) return opts;
  return { ...opts, consumes: [...new Set([...(opts.consumes ?? []), ...more])] };
}
