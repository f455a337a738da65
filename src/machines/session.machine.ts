/**
 * The SessionTurnManager: one turn at a time per session, its turn states generated from the
 * TurnStateRegistry. Every registered state (canonical or consumer) is a real state node whose
 * behaviour follows its metadata:
 * - terminal states settle the turn (`SETTLE` returns to idle);
 * - holding states wait for `RESUME` with their `resumeOn` name;
 * - hand-off states switch the acting actor and go back to `awaiting` (bounded per turn).
 *
 * No I/O here: the host executes effects and sends their outcomes in as events; the machine
 * decides. The config is JSON-safe (named guards/actions with params) so Stately can draw it.
 */
import { assign, setup } from 'xstate';
import { DEFAULT_LIMITS } from '../limits.js';
import type { TurnStateRegistryApi } from '../registries/types.js';
import {
  actorLoopActions,
  actorLoopGuards,
  actorLoopStates,
  initialLoopContext,
  type ActorLoopContext,
  type ActorLoopEvent,
  DEFAULT_LOOP_LIMITS,
} from './actor.machine.js';

export interface SessionContext extends ActorLoopContext {
  turnId: string | null;
  /** The acting actor of the current turn. */
  actor: string | null;
  /** The entry actor of the session. */
  entryActor: string;
  handoffs: number;
  maxHandoffs: number;
  /** Where a hand-off goes (set by RESPOND with passTo), and the receiver's bounds. */
  passTo: string | null;
  passLimits?: ActorBounds | null;
  /** The turn state the last turn settled in. */
  lastSettled: string | null;
  error: { code: string; message: string } | null;
}

export type SessionMachineEvent =
  /** `limits`: the entry actor's own bounds for this turn (the runtime's defaults where it sets none). */
  | { type: 'START'; turnId: string; limits?: ActorBounds }
  /** `limits` with `passTo`: the receiving actor's bounds, applied when the hand-off happens. */
  | { type: 'RESPOND'; to: string; passTo?: string; limits?: ActorBounds }
  | { type: 'HOLD'; to: string }
  | { type: 'RESUME'; resumeOn: string }
  | { type: 'FAIL'; code: string; message: string }
  | { type: 'SETTLE' }
  | ActorLoopEvent;

/** Per-actor bounds of the tool-use loop. */
export interface ActorBounds {
  maxModelCalls: number;
  maxRespondRetries: number;
}

export interface SessionMachineInput {
  entryActor: string;
  maxHandoffs?: number;
  loop?: Partial<typeof DEFAULT_LOOP_LIMITS>;
}

/** Node names the machine reserves; a consumer turn state cannot use them. */
export const RESERVED_NODE_NAMES = ['idle', 'turn'] as const;

export function createSessionMachine(turnStates: TurnStateRegistryApi) {
  const defs = turnStates.list();
  const states: Record<string, any> = {};
  // Transitions are sibling-relative: every turn-state node lives under `turn`. Responding with
  // the state the actor is already in changes nothing (the loop keeps its phase).
  const respondTransitions = (from: string) =>
    defs.map((d) => ({
      guard: { type: 'respondsWith', params: { state: d.id } },
      ...(d.id === from ? {} : { target: d.id }),
      actions: d.meta.handsOff ? [{ type: 'rememberPassTo' }] : [],
    }));
  const holdTransitions = defs
    .filter((d) => d.meta.holdsActor)
    .map((d) => ({ guard: { type: 'holdsIn', params: { state: d.id } }, target: d.id }));
  const fail = { target: 'error', actions: [{ type: 'failWith' }] };
  for (const def of defs) {
    const { id, meta } = def;
    if (meta.isTerminal) {
      states[id] = {
        description: meta.description,
        tags: ['terminal', ...(meta.emitsEnvelope ? ['emitsEnvelope'] : [])],
        on: { SETTLE: { target: '#session.idle', actions: [{ type: 'recordSettled', params: { state: id } }] } },
      };
    } else if (meta.handsOff) {
      states[id] = {
        description: meta.description,
        tags: ['handsOff'],
        always: [
          { guard: 'underHandoffBudget', target: 'awaiting', actions: [{ type: 'handOff' }] },
          {
            target: 'error',
            actions: [{ type: 'setError', params: { code: 'turn.handoff_budget', message: 'too many hand-offs in one turn' } }],
          },
        ],
      };
    } else if (meta.holdsActor) {
      states[id] = {
        description: meta.description,
        tags: ['holdsActor'],
        on: {
          RESUME: { guard: { type: 'resumesWith', params: { resumeOn: meta.resumeOn ?? '' } }, target: 'awaiting' },
          FAIL: fail,
        },
      };
    } else {
      // The actor is working: its tool-use loop runs here; it may respond, be held, or fail.
      states[id] = {
        description: meta.description,
        tags: ['working'],
        initial: 'ready',
        states: actorLoopStates('#session.turn.error'),
        on: { RESPOND: respondTransitions(id), HOLD: holdTransitions, FAIL: fail },
      };
    }
  }
  if (!states.awaiting || !states.error) {
    throw new Error('the TurnStateRegistry must contain the canonical awaiting and error states');
  }

  return setup({
    types: {
      context: {} as SessionContext,
      events: {} as SessionMachineEvent,
      input: {} as SessionMachineInput,
    },
    guards: {
      ...actorLoopGuards,
      respondsWith: ({ event }, params: { state: string }) => event.type === 'RESPOND' && event.to === params.state,
      holdsIn: ({ event }, params: { state: string }) => event.type === 'HOLD' && event.to === params.state,
      resumesWith: ({ event }, params: { resumeOn: string }) => event.type === 'RESUME' && event.resumeOn === params.resumeOn,
      underHandoffBudget: ({ context }) => context.passTo !== null && context.handoffs < context.maxHandoffs,
    },
    actions: {
      ...(actorLoopActions as any),
      startTurn: assign(({ context, event }) => ({
        turnId: event.type === 'START' ? event.turnId : context.turnId,
        actor: context.entryActor,
        handoffs: 0,
        passTo: null,
        error: null,
        modelCalls: 0,
        rejections: 0,
        nudges: 0,
        ...(event.type === 'START' && event.limits ? event.limits : {}),
      })),
      rememberPassTo: assign(({ event }) =>
        event.type === 'RESPOND' ? { passTo: event.passTo ?? null, passLimits: event.limits ?? null } : { passTo: null, passLimits: null },
      ),
      handOff: assign(({ context }) => ({
        actor: context.passTo,
        handoffs: context.handoffs + 1,
        passTo: null,
        passLimits: null,
        ...(context.passLimits ?? {}),
      })),
      setError: assign((_, params: { code: string; message: string }) => ({ error: { code: params.code, message: params.message } })),
      failWith: assign(({ event }) => (event.type === 'FAIL' ? { error: { code: event.code, message: event.message } } : {})),
      recordSettled: assign((_, params: { state: string }) => ({ lastSettled: params.state, turnId: null })),
    },
  }).createMachine({
    id: 'session',
    context: ({ input }) => ({
      ...initialLoopContext(input.loop),
      turnId: null,
      actor: null,
      entryActor: input.entryActor,
      handoffs: 0,
      maxHandoffs: input.maxHandoffs ?? DEFAULT_LIMITS.maxHandoffsPerTurn,
      passTo: null,
      lastSettled: null,
      error: null,
    }),
    initial: 'idle',
    states: {
      idle: {
        on: { START: { target: 'turn', actions: [{ type: 'startTurn' }] as any } },
      },
      turn: {
        initial: 'awaiting',
        states,
      },
    },
  });
}

export type SessionMachine = ReturnType<typeof createSessionMachine>;
