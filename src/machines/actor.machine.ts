/**
 * The actor machine: one actor's tool-use loop inside a turn.
 *
 *   ready --CALL--> calling --MODEL_DONE{next: dispatch}--> dispatching --CALL--> calling ...
 *                      `--MODEL_DONE{next: call | rejected | free-text}--> ready
 *
 * `MODEL_DONE` carries what the response asked for, so one event decides the next phase; the
 * next `CALL` from `dispatching` says the tool results are in (one event per phase change, each
 * costs microseconds on the hot path).
 *
 * Budgets are guards: a model call over `maxModelCalls`, a rejected respond() over
 * `maxRespondRetries`, or free text over `maxNudges` leaves the loop for `exhausted`
 * (standalone) or the session's `error` turn state (embedded). The same state config and
 * implementations run standalone (`createActorMachine`, drawn in Stately) and embedded in the
 * session machine's `awaiting` node, so one live XState actor serves a whole session.
 */
import { assign, setup } from 'xstate';
import { DEFAULT_LIMITS, sessionMachineLimits } from '../limits.js';

export interface ActorLoopContext {
  modelCalls: number;
  rejections: number;
  nudges: number;
  maxModelCalls: number;
  maxRespondRetries: number;
  maxNudges: number;
  error: { code: string; message: string } | null;
}

export type ActorLoopEvent =
  | { type: 'CALL' }
  /** What the model response asked for: tools to dispatch, another call, or a retry after a rejection / free text. */
  | { type: 'MODEL_DONE'; next: 'dispatch' | 'call' | 'rejected' | 'free-text' }
  | { type: 'INTERRUPTED' }
  | { type: 'TOOLS_DONE' };

/** The loop's bounds when none are given: the runtime's defaults (limits.ts). */
export const DEFAULT_LOOP_LIMITS = sessionMachineLimits(DEFAULT_LIMITS).loop;

export function initialLoopContext(limits: Partial<typeof DEFAULT_LOOP_LIMITS> = {}): ActorLoopContext {
  return {
    modelCalls: 0,
    rejections: 0,
    nudges: 0,
    maxModelCalls: limits.maxModelCalls ?? DEFAULT_LOOP_LIMITS.maxModelCalls,
    maxRespondRetries: limits.maxRespondRetries ?? DEFAULT_LOOP_LIMITS.maxRespondRetries,
    maxNudges: limits.maxNudges ?? DEFAULT_LOOP_LIMITS.maxNudges,
    error: null,
  };
}

/** Guards and actions of the loop, shared by the standalone and the embedded machine. */
export const actorLoopGuards = {
  next: ({ event }: { event: any }, params: { next: string }) => event.next === params.next,
  nextWithin: ({ context, event }: { context: ActorLoopContext; event: any }, params: { next: string }) =>
    event.next === params.next &&
    (params.next === 'rejected' ? context.rejections < context.maxRespondRetries : context.nudges < context.maxNudges),
  underModelBudget: ({ context }: { context: ActorLoopContext }) => context.modelCalls < context.maxModelCalls,
  underRetryBudget: ({ context }: { context: ActorLoopContext }) => context.rejections < context.maxRespondRetries,
  underNudgeBudget: ({ context }: { context: ActorLoopContext }) => context.nudges < context.maxNudges,
};

export const actorLoopActions = {
  countCall: assign(({ context }: { context: ActorLoopContext }) => ({ modelCalls: context.modelCalls + 1 })),
  countRejection: assign(({ context }: { context: ActorLoopContext }) => ({ rejections: context.rejections + 1 })),
  countNudge: assign(({ context }: { context: ActorLoopContext }) => ({ nudges: context.nudges + 1 })),
  exhaust: assign((_: unknown, params: { code: string; message: string }) => ({ error: { code: params.code, message: params.message } })),
  resetLoop: assign(() => ({ modelCalls: 0, rejections: 0, nudges: 0, error: null })),
};

/** The loop's states; `exhaustedTarget` is where a blown budget goes. */
export function actorLoopStates(exhaustedTarget: string): Record<string, any> {
  const exhaust = (code: string, message: string) => ({
    target: exhaustedTarget,
    actions: [{ type: 'exhaust', params: { code, message } }],
  });
  return {
    ready: {
      on: {
        CALL: [
          { guard: 'underModelBudget', target: 'calling', actions: [{ type: 'countCall' }] },
          exhaust('turn.model_call_budget', 'the actor made too many model calls in one turn'),
        ],
      },
    },
    calling: {
      on: {
        MODEL_DONE: [
          { guard: { type: 'next', params: { next: 'dispatch' } }, target: 'dispatching' },
          { guard: { type: 'next', params: { next: 'call' } }, target: 'ready' },
          { guard: { type: 'nextWithin', params: { next: 'rejected' } }, target: 'ready', actions: [{ type: 'countRejection' }] },
          { guard: { type: 'next', params: { next: 'rejected' } }, ...exhaust('turn.respond_retries', 'respond() was rejected too many times') },
          { guard: { type: 'nextWithin', params: { next: 'free-text' } }, target: 'ready', actions: [{ type: 'countNudge' }] },
          exhaust('turn.free_text', 'the model kept writing text outside respond()'),
        ],
        INTERRUPTED: { target: 'ready' },
      },
    },
    dispatching: {
      on: {
        CALL: [
          { guard: 'underModelBudget', target: 'calling', actions: [{ type: 'countCall' }] },
          exhaust('turn.model_call_budget', 'the actor made too many model calls in one turn'),
        ],
        TOOLS_DONE: { target: 'ready' },
      },
    },
  };
}

/** The standalone actor machine (for Stately and for testing the loop on its own). */
export function createActorMachine(limits: Partial<typeof DEFAULT_LOOP_LIMITS> = {}) {
  return setup({
    types: { context: {} as ActorLoopContext, events: {} as ActorLoopEvent },
    guards: actorLoopGuards,
    actions: actorLoopActions as any,
  }).createMachine({
    id: 'actor',
    context: initialLoopContext(limits),
    initial: 'ready',
    states: {
      ...actorLoopStates('#actor.exhausted'),
      exhausted: { type: 'final' },
    },
  });
}
