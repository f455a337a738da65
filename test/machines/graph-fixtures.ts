/**
 * What the tests that walk the session machine's generated paths share: the registry under test
 * (the canonical turn states plus one consumer state of each kind), the machine's input with
 * small budgets so every loop is bounded, how a state value reads as a turn state and a loop
 * phase, and the keys that bound path generation.
 */
import type { Registries } from '../../src/registries/types.js';
import type { SessionContext } from '../../src/machines/session.machine.js';

/** The runtime limits the paths run under: each budget is reached within a few steps. */
export const LIMITS = { maxModelCallsPerTurn: 3, maxRespondRetries: 1, maxFreeTextNudges: 1, maxHandoffsPerTurn: 1 };

/** The same limits as the session machine's input. */
export const MACHINE_INPUT = {
  entryActor: 'a',
  maxHandoffs: LIMITS.maxHandoffsPerTurn,
  loop: { maxModelCalls: LIMITS.maxModelCallsPerTurn, maxRespondRetries: LIMITS.maxRespondRetries, maxNudges: LIMITS.maxFreeTextNudges },
};

export function registerConsumerStates(r: Registries): void {
  r.turnStates.register({ id: 'escalated', meta: { description: 'A human takes over; no envelope.', isTerminal: true, emitsEnvelope: false, holdsActor: false } });
  r.turnStates.register({ id: 'partial', meta: { description: 'Settled with partial data.', isTerminal: true, emitsEnvelope: true, holdsActor: false } });
  r.turnStates.register({ id: 'on-hold', meta: { description: 'Waits for a human reply.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'human' } });
  r.turnStates.register({
    id: 'transferred',
    meta: { description: 'Handed to another desk.', isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true, requires: { passTo: true } },
  });
}

/** 'idle', or the top-level turn state. */
export function labelOf(value: unknown): string {
  if (typeof value === 'string') return value;
  const t = (value as { turn: string | Record<string, string> }).turn;
  return typeof t === 'string' ? t : Object.keys(t)[0]!;
}

/** The actor loop's phase (ready, calling, dispatching) inside a working turn state. */
export function subOf(value: unknown): string | undefined {
  if (typeof value === 'string') return undefined;
  const t = (value as { turn: string | Record<string, string> }).turn;
  return typeof t === 'string' ? undefined : Object.values(t)[0];
}

type Keyed = { value: unknown; context: SessionContext };
/** Bounded key (DESIGN): the state value plus the last settled turn state. */
export const shortKey = (s: Keyed): string => `${JSON.stringify(s.value)}|${s.context.lastSettled}`;
/** For one-turn simple paths: the loop counters too, so bounded loops are explored. */
export const loopKey = (s: Keyed): string =>
  `${shortKey(s)}|${s.context.modelCalls},${s.context.rejections},${s.context.nudges},${s.context.handoffs},${s.context.actor}`;
