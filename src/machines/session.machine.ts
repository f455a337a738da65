/**
 * The SessionTurnManager: one turn at a time per session, its turn states generated from the
 * TurnStateRegistry. Every registered state (canonical or consumer) is a real state node whose
 * behaviour follows its metadata:
 * - terminal states settle the turn (`SETTLE` returns to idle);
 * - holding states wait for `RESUME` with their `resumeOn` name;
 * - hand-off states switch the acting actor and go back to `awaiting` (bounded per turn).
 *
 * The machine decides, the host executes: every decision leaves the machine as a typed effect
 * (`SessionEffect`, XState `emit`) — call the model, dispatch tools, publish a turn-state change,
 * hand off, hold, settle, fail — and the host sends each outcome back as an event. The host never
 * reads turn-state metadata: what a state does is decided here, from the registry, when the
 * machine is generated. No I/O here. The config is JSON-safe (named guards/actions with params)
 * so Stately can draw it.
 */
import { setup } from 'xstate';
import { compileMachine, CompiledRun } from './compiled-machine.js';
import { toXStateActions, type ActionArgs, type ActionOps, type ActionSpecs } from './action-specs.js';
import { DEFAULT_LIMITS } from '../limits.js';
import type { TurnStateRegistryApi } from '../registries/types.js';
import {
  actorLoopActionSpecs,
  actorLoopGuards,
  actorLoopStates,
  initialLoopContext,
  type ActorLoopContext,
  type ActorLoopEvent,
  type LoopEffect,
  type ResponseSummary,
  DEFAULT_LOOP_LIMITS,
} from './actor.machine.js';

/** What the session machine asks the host to do, in the order it must happen. */
export type SessionEffect =
  | LoopEffect
  /**
   * Publish `turnState.changed` (the acting actor at the moment of the change; `resumedBy`: the
   * injection kind that resumed a held turn).
   */
  | { type: 'state.changed'; from: string; to: string; actor: string; resumedBy?: string }
  /** Publish `actor.passed`: the turn goes on with `to`. */
  | { type: 'actor.passed'; from: string; to: string }
  /** The turn waits (`hold`) or ends (`settle`): HoldEffect and SettleEffect below. */
  | Halt
  /** A message may join the running turn (double-texting `interrupt`). */
  | { type: 'join' };

/** The turn waits in `state` (an approval, a client tool, an injection): release whoever awaits it. */
export type HoldEffect = { type: 'hold'; state: string };

/**
 * The turn ends in `state`: assemble the envelope when `emitsEnvelope`, publish, then send
 * `SETTLE`. `failed`: the turn ends in the canonical `error` state, so the user gets an error
 * part and `turn.settled` a stop of `error`.
 */
export type SettleEffect = { type: 'settle'; state: string; emitsEnvelope: boolean; failed?: true };

/** Where a turn rests (held or ending), kept so recovery can ask for the same effect again. */
export type Halt = HoldEffect | SettleEffect;

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
  /** Where the current turn rests (held or ending); null while it works. */
  halt?: Halt | null;
  error: { code: string; message: string } | null;
}

export type SessionMachineEvent =
  /** `limits`: the entry actor's own bounds for this turn (the runtime's defaults where it sets none). */
  | { type: 'START'; turnId: string; limits?: ActorBounds }
  /** `limits` with `passTo`: the receiving actor's bounds, applied when the hand-off happens. */
  | { type: 'RESPOND'; to: string; passTo?: string; limits?: ActorBounds }
  | { type: 'HOLD'; to: string }
  | { type: 'RESUME'; resumeOn: string }
  /** Every call the turn waited for is answered: resumes the state calls hold the turn in (`suspended`) only. */
  | { type: 'ANSWERED' }
  /** The turn fails (a model or internal error); `userText` becomes the user's error part. */
  | { type: 'FAIL'; code: string; message: string; userText?: string; stop?: 'error' | 'max_tokens' | 'refusal' }
  | { type: 'SETTLE' }
  /** Asks whether a double-texted message may join the running turn (`join` effect if so). */
  | { type: 'JOIN'; pending?: number }
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

/** The state change a whole model response asks for, if any. */
function changeOf(event: SessionMachineEvent): ResponseSummary['change'] {
  return event.type === 'MODEL_DONE' && event.next === undefined ? event.change : undefined;
}

type Args = ActionArgs<SessionContext>;

/** The session's actions as specs (action-specs.ts): XState runs them, and so does the compiled machine. */
export const sessionActionSpecs = {
  ...actorLoopActionSpecs,
  startTurn: {
    assign: ({ context, event }: Args) => ({
      turnId: event.type === 'START' ? event.turnId : context.turnId,
      actor: context.entryActor,
      handoffs: 0,
      passTo: null,
      error: null,
      modelCalls: 0,
      rejections: 0,
      nudges: 0,
      ...(event.type === 'START' && event.limits ? event.limits : {}),
    }),
  },
  rememberPassTo: {
    assign: ({ event }: Args) => (event.type === 'RESPOND' ? { passTo: event.passTo ?? null, passLimits: event.limits ?? null } : { passTo: null, passLimits: null }),
  },
  requestChange: {
    ops: ({ event }: Args, _params: unknown, ops: ActionOps) => {
      const c = changeOf(event as SessionMachineEvent)!;
      ops.send({ type: 'RESPOND', to: c.to, ...(c.passTo ? { passTo: c.passTo } : {}), ...(c.limits ? { limits: c.limits } : {}) });
    },
  },
  handOff: {
    ops: ({ context }: Args, _params: unknown, ops: ActionOps) => {
      ops.emit({ type: 'actor.passed', from: context.actor ?? context.entryActor, to: context.passTo! } as SessionEffect);
      // The receiver's bounds, and its own counts of them: a bound is what one actor may spend (limits.ts).
      ops.assign({ actor: context.passTo, handoffs: context.handoffs + 1, modelCalls: 0, rejections: 0, nudges: 0, passTo: null, passLimits: null, ...(context.passLimits ?? {}) });
    },
  },
  setError: {
    ops: (_: Args, params: { code: string; message: string }, ops: ActionOps) => {
      ops.assign({ error: { code: params.code, message: params.message } });
      ops.emit({ type: 'fail', code: params.code, message: params.message });
    },
  },
  failWith: {
    ops: ({ event }: Args, _params: unknown, ops: ActionOps) => {
      if (event.type !== 'FAIL') return;
      ops.assign({ error: { code: event.code, message: event.message } });
      const { type: _type, ...fx } = event;
      ops.emit({ type: 'fail', ...fx });
    },
  },
  failUnknownState: {
    ops: ({ event }: Args, _params: unknown, ops: ActionOps) => {
      const to = changeOf(event)?.to;
      const error = { code: 'turn.state_not_in_machine', message: `this session's machine has no "${to}" state (was it registered after the session was created?)` };
      ops.assign({ error });
      ops.emit({ type: 'fail', ...error });
    },
  },
  /** Publishes a change of turn state; `actor` is the acting actor at that moment. */
  announce: {
    emit: ({ context }: Args, params: { from: string; to: string; resumedBy?: string }) =>
      params.resumedBy === undefined
        ? { type: 'state.changed' as const, from: params.from, to: params.to, actor: context.actor ?? context.entryActor }
        : { type: 'state.changed' as const, from: params.from, to: params.to, actor: context.actor ?? context.entryActor, resumedBy: params.resumedBy },
  },
  recordHalt: { assign: (_: Args, params: Halt) => ({ halt: params }) },
  emitHalt: { emit: (_: Args, params: Halt) => params },
  /** A held turn goes on (or fails): it rests nowhere until the next hold or settlement. */
  clearHalt: { assign: () => ({ halt: null }) },
  /** Recovery: the effect of where the turn rests, asked for again (only under `halted`). */
  replayHalt: { emit: ({ context }: Args) => context.halt as Halt },
  emitJoin: { emit: () => JOIN_EFFECT },
  recordSettled: { assign: (_: Args, params: { state: string }) => ({ lastSettled: params.state, turnId: null, halt: null }) },
} satisfies ActionSpecs<SessionContext>;

const JOIN_EFFECT = Object.freeze({ type: 'join' as const });

/** The same actions as XState implementations. */
const sessionActions = toXStateActions(sessionActionSpecs);

/** Node names the machine reserves; a consumer turn state cannot use them. */
export const RESERVED_NODE_NAMES = ['idle', 'turn'] as const;

export function createSessionMachine(turnStates: TurnStateRegistryApi) {
  const defs = turnStates.list();
  const states: Record<string, any> = {};
  const announce = (from: string, to: string, resumedBy?: string) => ({ type: 'announce', params: resumedBy === undefined ? { from, to } : { from, to, resumedBy } });
  // The state a turn waits in while dispatched calls are pending (approval or client tool).
  const approvalHold = defs.find((d) => d.meta.holdsActor && d.meta.resumeOn === 'approval-response')?.id;
  // Transitions are sibling-relative: every turn-state node lives under `turn`. Responding with
  // the state the actor is already in changes nothing (the loop keeps its phase).
  const respondTransitions = (from: string) =>
    defs.map((d) => ({
      guard: { type: 'respondsWith', params: { state: d.id } },
      ...(d.id === from ? {} : { target: d.id, actions: [...(d.meta.handsOff ? [{ type: 'rememberPassTo' }] : []), announce(from, d.id)] }),
    }));
  // A whole model response asking for a change: the change arrives as the model's RESPOND (sent
  // to the machine itself, so an inspector sees it); one naming a state registered after this
  // machine was built is never entered, never published.
  const responseChanges = [
    { guard: { type: 'changesToKnown', params: { states: defs.map((d) => d.id) } }, actions: [{ type: 'requestChange' }] },
    { guard: 'changesState', target: '#session.turn.error', actions: [{ type: 'failUnknownState' }, announce('awaiting', 'error')] },
  ];
  const holdTransitions = (from: string) =>
    defs
      .filter((d) => d.meta.holdsActor)
      .map((d) => ({ guard: { type: 'holdsIn', params: { state: d.id } }, target: d.id, actions: [announce(from, d.id)] }));
  // Where the turn rests, recorded then emitted (two plain actions: cheaper than enqueueActions).
  const halt = (params: Halt) => [{ type: 'recordHalt', params }, { type: 'emitHalt', params }];
  const fail = (from: string) => ({ target: 'error', actions: [{ type: 'failWith' }, announce(from, 'error')] });
  for (const def of defs) {
    const { id, meta } = def;
    if (meta.isTerminal) {
      states[id] = {
        description: meta.description,
        tags: ['terminal', ...(meta.emitsEnvelope ? ['emitsEnvelope'] : [])],
        entry: halt({ type: 'settle', state: id, emitsEnvelope: meta.emitsEnvelope, ...(id === 'error' ? { failed: true as const } : {}) }),
        on: { SETTLE: { target: '#session.idle', actions: [{ type: 'recordSettled', params: { state: id } }] } },
      };
    } else if (meta.handsOff) {
      states[id] = {
        description: meta.description,
        tags: ['handsOff'],
        always: [
          { guard: 'underHandoffBudget', target: 'awaiting', actions: [{ type: 'handOff' }, announce(id, 'awaiting')] },
          {
            target: 'error',
            actions: [{ type: 'setError', params: { code: 'turn.handoff_budget', message: 'too many hand-offs in one turn' } }, announce(id, 'error')],
          },
        ],
      };
    } else if (meta.holdsActor) {
      states[id] = {
        description: meta.description,
        tags: ['holdsActor'],
        // What resumes the turn, for whoever asks the session why it waits (LiveMachine.held).
        meta: { resumeOn: meta.resumeOn },
        entry: halt({ type: 'hold', state: id }),
        exit: [{ type: 'clearHalt' }],
        on: {
          RESUME: { guard: { type: 'resumesWith', params: { resumeOn: meta.resumeOn ?? '' } }, target: 'awaiting', actions: [announce(id, 'awaiting', meta.resumeOn)] },
          // Only where pending calls hold the turn: a consumer's holding state that names the same
          // kind (a human's sign-off) waits for its own RESUME, also after a restart.
          ...(id === approvalHold ? { ANSWERED: { target: 'awaiting', actions: [announce(id, 'awaiting', meta.resumeOn)] } } : {}),
          FAIL: fail(id),
        },
      };
    } else {
      // The actor is working: its tool-use loop runs here; it may respond, be held, or fail.
      states[id] = {
        description: meta.description,
        tags: ['working'],
        initial: 'ready',
        states: actorLoopStates('#session.turn.error', {
          announce: announce(id, 'error'),
          responseChanges,
          ...(approvalHold ? { hold: { target: `#session.turn.${approvalHold}`, announce: announce(id, approvalHold) } } : {}),
        }),
        on: {
          RESPOND: respondTransitions(id),
          HOLD: holdTransitions(id),
          FAIL: fail(id),
          JOIN: { guard: 'noPending', actions: [{ type: 'emitJoin' }] },
        },
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
      changesToKnown: ({ event }, params: { states: string[] }) => {
        const c = changeOf(event);
        return c !== undefined && params.states.includes(c.to);
      },
      changesState: ({ event }) => changeOf(event) !== undefined,
      noPending: ({ event }) => event.type === 'JOIN' && !event.pending,
      halted: ({ context }) => !!context.halt,
    },
    actions: sessionActions,
  }).createMachine({
    id: 'session',
    context: ({ input }) => ({
      ...initialLoopContext(input.loop),
      turnId: null,
      actor: null,
      entryActor: input.entryActor,
      handoffs: 0,
      maxHandoffs: input.maxHandoffs ?? DEFAULT_LIMITS.maxHandoffsPerTurn,
      halt: null,
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
        // A working state continues its loop; a resting one (held, ending) repeats its effect.
        on: { RECOVER: { guard: 'halted', actions: [{ type: 'replayHalt' }] as any } },
      },
    },
  });
}

export type SessionMachine = ReturnType<typeof createSessionMachine>;

/**
 * A persisted snapshot written by an older turnstate rests where the current machine's node says:
 * one from before the machine kept where a turn rests (`context.halt`) gets it, and one whose
 * settlement predates `failed` gets the flag, both from the node the turn rests in (that node's
 * entry effect), so `RECOVER` repeats what a snapshot written now would. Any other snapshot is
 * returned as it is.
 */
export function upgradeSessionSnapshot(machine: SessionMachine, snapshot: unknown): unknown {
  const s = snapshot as { value?: unknown; context?: Record<string, unknown> } | null;
  if (!s?.context) return snapshot;
  const kept = s.context.halt as Halt | null | undefined;
  if (kept !== undefined && (kept?.type !== 'settle' || kept.failed === true || kept.state !== 'error')) return snapshot;
  // Held and ending nodes are leaves of `turn`: { turn: 'suspended' }.
  const id = (s.value as { turn?: unknown } | undefined)?.turn;
  const node = typeof id === 'string' ? machine.root.states.turn?.states[id] : undefined;
  const entry = (node?.entry ?? []) as readonly { type?: string; params?: Halt }[];
  const halt = entry.find((a) => a.type === 'emitHalt')?.params;
  return { ...s, context: { ...s.context, halt: halt ?? null } };
}

/**
 * A session's machine run compiled (compiled-machine.ts) from `snapshot` (a persisted snapshot,
 * XState's shape); null when this machine does not compile and must run on an XState actor.
 */
export function compiledSessionRun(machine: SessionMachine, snapshot: unknown): CompiledRun | null {
  const compiled = compileMachine(machine, sessionActionSpecs);
  return compiled ? new CompiledRun(compiled, snapshot as { value: unknown; context: Record<string, unknown> }) : null;
}
