/**
 * The actor machine: one actor's tool-use loop inside a turn.
 *
 *   ready --CALL--> calling --MODEL_DONE{tools}--> dispatching --CALL{pending: 0}--> calling ...
 *                      `--MODEL_DONE{rejected | free text | progress only}--> ready
 *
 * A model response arrives as one `MODEL_DONE` event carrying its summary (tool uses,
 * rejected respond() calls, free text, stop reason); guards choose what follows and the loop
 * emits what must happen as typed effects (`LoopEffect`): `model.next` when it is ready for the
 * next call, `model.call` when a call may start, `tools.dispatch`, `nudge`, `fail`. The host
 * executes them and sends the outcome back.
 *
 * Budgets are guards: a model call over `maxModelCalls`, a rejected respond() over
 * `maxRespondRetries`, or free text over `maxNudges` leaves the loop for `exhausted`
 * (standalone) or the session's `error` turn state (embedded). The same state config and
 * implementations run standalone (`createActorMachine`, drawn in Stately) and embedded in the
 * session machine's `awaiting` node, so one live XState actor serves a whole session.
 */
import { setup } from 'xstate';
import { toXStateActions, type ActionOps, type ActionSpecs } from './action-specs.js';
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

/** What one model response amounted to; the loop's guards decide from it alone. */
export interface ResponseSummary {
  /** A respond() call that ends, holds or hands off the turn (the session machine acts on it). */
  change?: { to: string; passTo?: string; limits?: { maxModelCalls: number; maxRespondRetries: number } };
  /** Tool uses to dispatch (respond() excluded). */
  toolUses: number;
  /** respond() calls rejected by the parser or the ordering rules. */
  rejected: number;
  /** respond() calls applied (progress and change). */
  applied: number;
  /** The response wrote text outside respond(). */
  freeText: boolean;
  stopReason: string;
  /** Spec 003 compatibility mode: the actor stops by not calling a tool, and is nudged to complete. */
  compat?: boolean;
  /** Spec 003: the state an incomplete turn is completed in once its nudges are spent (it has text to deliver). */
  fallback?: string;
}

/** Effects the loop emits (XState `emit`); the host executes them and reports back. */
export type LoopEffect =
  /** The loop is ready for its next model call: the host sends `CALL` when it may start. */
  | { type: 'model.next' }
  /** A model call may start now (budget checked). */
  | { type: 'model.call' }
  /** Run the response's tool uses, then send `CALL{pending}`. */
  | { type: 'tools.dispatch' }
  /** Tell the model its output outside respond() reached nobody (`compat`: spec 003's completion nudge). */
  | { type: 'nudge'; freeText: boolean; compat?: boolean }
  /** Spec 003: complete the turn with its fallback text (the parts of the `RESPOND` that follows). */
  | { type: 'fallback' }
  /** The turn fails: `userText` is the error part the user gets (if any). */
  | { type: 'fail'; code: string; message: string; userText?: string; stop?: 'error' | 'max_tokens' | 'refusal' };

export type ActorLoopEvent =
  /** The executor may call the model now; from `dispatching` it says the tools are done (`pending` still wait). */
  | { type: 'CALL'; pending?: number }
  /**
   * A model response: its summary, for the guards to decide on. `next` is the same decision with
   * the guard already taken (drawn in Stately, and used by tests that drive the loop by hand).
   */
  | ({ type: 'MODEL_DONE'; next?: never } & ResponseSummary)
  | { type: 'MODEL_DONE'; next: 'dispatch' | 'call' | 'rejected' | 'free-text' }
  | { type: 'INTERRUPTED' }
  /** The dispatched tools are done; `pending` calls still wait for an answer (approval, client). */
  | { type: 'TOOLS_DONE'; pending?: number }
  /** After a restart: continue from the restored phase (`pending` calls recovered). */
  | { type: 'RECOVER'; pending?: number };

/** The argument every loop action gets (the event as the loop sees it). */
type Args = { context: ActorLoopContext; event: any };

// Effects without data: one object each, shared by every emission.
const MODEL_NEXT = Object.freeze({ type: 'model.next' as const });
const MODEL_CALL = Object.freeze({ type: 'model.call' as const });
const TOOLS_DISPATCH = Object.freeze({ type: 'tools.dispatch' as const });

/** Stop reasons that cut a response short: it is never acted on, the turn fails. */
const CUT_SHORT: Record<string, { code: string; message: string; userText: string; stop: 'max_tokens' | 'refusal' }> = {
  max_tokens: { code: 'model.max_tokens', message: 'the response hit the token limit before it was complete', userText: 'The answer was cut off because it grew too long.', stop: 'max_tokens' },
  // The conversation, not the answer, outgrew the model: another try meets the same wall.
  model_context_window_exceeded: {
    code: 'model.context_window',
    message: "the conversation filled the model's context window before the response was complete",
    userText: 'The conversation has grown too long for the assistant to go on with it; start a new one.',
    stop: 'max_tokens',
  },
  refusal: { code: 'model.refusal', message: 'the model declined to answer', userText: 'The assistant declined to answer this request.', stop: 'refusal' },
};

/** The loop's bounds when none are given: the runtime's defaults (limits.ts). */
export const DEFAULT_LOOP_LIMITS = sessionMachineLimits(DEFAULT_LIMITS).loop;

/** The user-facing text of each budget failure (the model-call budget gets the generic one at settlement). */
const RETRIES_TEXT = 'Sorry, I could not put my answer together. Please try again.';
const FREE_TEXT_TEXT = 'Sorry, I could not produce an answer. Please try again.';

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
  isSummary: ({ event }: { event: any }) => event.next === undefined,
  // Own entries only: a stop reason named like an Object.prototype member is no cut.
  cutShort: ({ event }: { event: any }) => typeof event.stopReason === 'string' && Object.hasOwn(CUT_SHORT, event.stopReason),
  hasToolUses: ({ event }: { event: any }) => event.toolUses > 0,
  hasRejections: ({ event }: { event: any }) => event.rejected > 0,
  rejectedWithinBudget: ({ context, event }: { context: ActorLoopContext; event: any }) => event.rejected > 0 && context.rejections < context.maxRespondRetries,
  isFreeText: ({ event }: { event: any }) => event.applied === 0,
  freeTextWithinBudget: ({ context, event }: { context: ActorLoopContext; event: any }) => event.applied === 0 && context.nudges < context.maxNudges,
  hasPending: ({ event }: { event: any }) => (event.pending ?? 0) > 0,
  hasFallback: ({ event }: { event: any }) => event.applied === 0 && typeof event.fallback === 'string',
  isCompatIncomplete: ({ event }: { event: any }) => event.applied === 0 && event.compat === true,
};

/** The loop's actions as specs (action-specs.ts): XState runs them, and so does the compiled machine. */
export const actorLoopActionSpecs = {
  countCall: { assign: ({ context }: Args) => ({ modelCalls: context.modelCalls + 1 }) },
  countRejection: { assign: ({ context }: Args) => ({ rejections: context.rejections + 1 }) },
  countNudge: { assign: ({ context }: Args) => ({ nudges: context.nudges + 1 }) },
  /** Record the failure and emit it (`userText`: the error part the user gets). */
  exhaust: {
    ops: (_: Args, params: { code: string; message: string; userText?: string }, ops: ActionOps) => {
      ops.assign({ error: { code: params.code, message: params.message } });
      ops.emit({ type: 'fail', ...params });
    },
  },
  failCutShort: {
    ops: ({ event }: Args, _params: unknown, ops: ActionOps) => {
      const c = CUT_SHORT[event.stopReason]!;
      ops.assign({ error: { code: c.code, message: c.message } });
      ops.emit({ type: 'fail', ...c });
    },
  },
  emitModelNext: { emit: () => MODEL_NEXT },
  emitModelCall: { emit: () => MODEL_CALL },
  emitDispatch: { emit: () => TOOLS_DISPATCH },
  emitNudge: { emit: ({ event }: Args) => ({ type: 'nudge' as const, freeText: !!event.freeText, ...(event.compat ? { compat: true } : {}) }) },
  /** The fallback's parts, then the model's state change (sent to itself, so an inspector sees it). */
  completeWithFallback: {
    ops: ({ event }: Args, _params: unknown, ops: ActionOps) => {
      ops.emit({ type: 'fallback' });
      ops.send({ type: 'RESPOND', to: event.fallback });
    },
  },
  resetLoop: { assign: () => ({ modelCalls: 0, rejections: 0, nudges: 0, error: null }) },
} satisfies ActionSpecs<ActorLoopContext>;

/** The same actions as XState implementations. */
export const actorLoopActions = toXStateActions(actorLoopActionSpecs);

/**
 * The loop's states; `exhaustedTarget` is where a blown budget goes. `announce` (embedded use)
 * adds the action that publishes the turn-state change of a blown budget; `responseChanges`
 * (embedded use) are the transitions a response's state change takes, tried first.
 */
export function actorLoopStates(
  exhaustedTarget: string,
  embed: {
    /** Publishes a blown budget's change of turn state (`to`: the exhausted target's name). */
    announce?: { type: string; params: Record<string, unknown> };
    /** Transitions a response's requested state change takes (tried before the loop's own). */
    responseChanges?: any[];
    /** Where the turn waits when dispatched calls are still pending, and its announcement. */
    hold?: { target: string; announce: { type: string; params: Record<string, unknown> } };
  } = {},
): Record<string, any> {
  const announce = embed.announce ? [embed.announce] : [];
  const exhaust = (code: string, message: string, userText?: string) => ({
    target: exhaustedTarget,
    actions: [{ type: 'exhaust', params: userText ? { code, message, userText } : { code, message } }, ...announce],
  });
  const callBudget = [
    { guard: 'underModelBudget', target: 'calling', actions: [{ type: 'countCall' }, { type: 'emitModelCall' }] },
    exhaust('turn.model_call_budget', 'the actor made too many model calls in one turn'),
  ];
  const hold = embed.hold ? [{ guard: 'hasPending', target: embed.hold.target, actions: [embed.hold.announce] }] : [];
  return {
    ready: {
      entry: [{ type: 'emitModelNext' }],
      on: {
        CALL: callBudget,
        RECOVER: [...hold, { actions: [{ type: 'emitModelNext' }] }],
      },
    },
    calling: {
      on: {
        MODEL_DONE: [
          // A whole response: its summary decides. A response cut short is never acted on, not
          // even a state change it asked for before it was cut.
          { guard: 'cutShort', target: exhaustedTarget, actions: [{ type: 'failCutShort' }, ...announce] },
          ...(embed.responseChanges ?? []),
          { guard: 'hasToolUses', target: 'dispatching', actions: [{ type: 'emitDispatch' }] },
          { guard: 'rejectedWithinBudget', target: 'ready', actions: [{ type: 'countRejection' }] },
          { guard: 'hasRejections', ...exhaust('turn.respond_retries', 'respond() was rejected too many times', RETRIES_TEXT) },
          { guard: 'freeTextWithinBudget', target: 'ready', actions: [{ type: 'countNudge' }, { type: 'emitNudge' }] },
          { guard: 'hasFallback', actions: [{ type: 'completeWithFallback' }] },
          { guard: 'isCompatIncomplete', ...exhaust('turn.incomplete', 'the actor stopped without respond_to_user or mark_work_complete and wrote no text', FREE_TEXT_TEXT) },
          { guard: 'isFreeText', ...exhaust('turn.free_text', 'the model kept writing text outside respond()', FREE_TEXT_TEXT) },
          { guard: 'isSummary', target: 'ready' },
          // The same decisions, taken by hand.
          { guard: { type: 'next', params: { next: 'dispatch' } }, target: 'dispatching' },
          { guard: { type: 'next', params: { next: 'call' } }, target: 'ready' },
          { guard: { type: 'nextWithin', params: { next: 'rejected' } }, target: 'ready', actions: [{ type: 'countRejection' }] },
          { guard: { type: 'next', params: { next: 'rejected' } }, ...exhaust('turn.respond_retries', 'respond() was rejected too many times', RETRIES_TEXT) },
          { guard: { type: 'nextWithin', params: { next: 'free-text' } }, target: 'ready', actions: [{ type: 'countNudge' }] },
          exhaust('turn.free_text', 'the model kept writing text outside respond()', FREE_TEXT_TEXT),
        ],
        INTERRUPTED: { target: 'ready' },
        // The call was lost with the process: the loop calls again (not counted twice).
        RECOVER: { target: 'ready' },
      },
    },
    dispatching: {
      on: {
        // The tools are done: the turn waits for pending calls, or the next call starts at once.
        CALL: [...hold, ...callBudget],
        TOOLS_DONE: [...hold, { target: 'ready' }],
        RECOVER: [...hold, { target: 'ready' }],
      },
    },
  };
}

/** The standalone actor machine (for Stately and for testing the loop on its own). */
export function createActorMachine(limits: Partial<typeof DEFAULT_LOOP_LIMITS> = {}) {
  return setup({
    types: { context: {} as ActorLoopContext, events: {} as ActorLoopEvent },
    guards: actorLoopGuards,
    actions: actorLoopActions,
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
