/**
 * Follows one turn of a session's event stream through an AapProjector until the turn
 * stops: settled (`turn.settled`), or waiting for the client (pending approvals or client
 * tool calls while the session holds the actor).
 *
 * Contract: `done` resolves exactly once with the stop reason; after it resolves no item is
 * emitted. A failing event stream or snapshot ends the turn with `error`. A turn that stops with
 * `error` carries the error the runtime reported (`error`: the turn's `turn.settled`, its
 * `TurnOutcome`, or the stream's failure), so the response can say what failed.
 */
import type { Subscription } from 'rxjs';
import type { SessionHandle, SessionSnapshot, TurnOutcome } from '../../api.js';
import type { SessionEvent } from '../../types.js';
import type { AapProjector } from './projector.js';
import type { StopReason } from './types.js';

export interface TurnFollower {
  /** Set the turn to follow (events of other turns are skipped; earlier ones are buffered until then). */
  setTurnId(turnId: string): void;
  /** Ask whether the turn now waits (e.g. once `TurnRef.settled` resolved). */
  check(): void;
  /**
   * The runtime reported how the turn stopped (`TurnRef.settled`). A waiting turn triggers
   * `check()`; a settled one whose `turn.settled` event does not arrive within `graceMs`
   * (e.g. the store failed to record it) stops with the outcome's reason.
   */
  outcome(o: TurnOutcome, graceMs?: number): void;
  /** Stop following with this reason (no-op once stopped); `why`: the error an `error` stop reports. */
  stop(reason: StopReason, why?: TurnError): void;
  readonly done: Promise<StopReason>;
  /** Once stopped with `error`: the error the runtime reported for the turn, when it reported one. */
  readonly error: TurnError | undefined;
}

/** An errored turn's code and message (as `turn.settled` and `TurnOutcome` carry them). */
export interface TurnError {
  code: string;
  message: string;
}

const errorOf = (e: unknown): TurnError => ({
  code: typeof (e as { code?: unknown } | null)?.code === 'string' ? (e as { code: string }).code : 'stream.failed',
  message: e instanceof Error ? e.message : String(e),
});

export interface FollowOptions {
  handle: SessionHandle;
  projector: AapProjector;
  /** Replay starts after this seq. */
  afterSeq: number;
  turnId?: string;
  /**
   * For a request whose message may join the followed turn (double-texting `interrupt`): a
   * message that joined too late for the turn to show it runs as a turn of its own once the turn
   * settles, and the response follows that turn. `waiting()`: the request's message has not
   * reached the followed turn yet; `starts(ev)`: this turn.started is the request's.
   */
  requeue?: { waiting(): boolean; starts(ev: Extract<SessionEvent, { type: 'turn.started' }>): boolean };
}

/** Whether a snapshot shows the turn waiting for client action (held, with calls pending). */
export function isWaiting(snap: SessionSnapshot, turnId: string): boolean {
  if (snap.turnId !== turnId) return false;
  if (snap.pendingApprovals.length === 0 && snap.pendingClientCalls.length === 0) return false;
  return snap.held !== undefined;
}

export function followTurn(opts: FollowOptions): TurnFollower {
  const { handle, projector } = opts;
  let turnId = opts.turnId;
  let buffer: SessionEvent[] | undefined = turnId === undefined ? [] : undefined;
  let stopped = false;
  let lastSeq = opts.afterSeq;
  let stopAtSeq: number | undefined;
  /** The followed turn settled without this request's message: waiting for the turn it runs as. */
  let awaitingRequeued = false;
  let checking = false;
  let recheck = false;
  let resolveDone!: (r: StopReason) => void;
  const done = new Promise<StopReason>((r) => (resolveDone = r));
  let sub: Subscription | undefined;
  /** The error reported for the turn (kept only when it stops with `error`). */
  let error: TurnError | undefined;

  const stop = (reason: StopReason, why?: TurnError): void => {
    if (stopped) return;
    stopped = true;
    if (reason === 'error') error = why ?? projector.settled?.error;
    buffer = undefined;
    // Unsubscribing synchronously inside `next` is safe with RxJS; deferred when not yet assigned.
    if (sub !== undefined) sub.unsubscribe();
    resolveDone(reason);
  };

  const check = (): void => {
    if (stopped || turnId === undefined) return;
    if (checking) {
      recheck = true;
      return;
    }
    checking = true;
    const id = turnId;
    handle.snapshot().then(
      (snap) => {
        checking = false;
        if (stopped) return;
        if (isWaiting(snap, id) && projector.unresolvedCalls().length > 0) {
          if (lastSeq >= snap.lastSeq) stop('tool_use');
          else stopAtSeq = snap.lastSeq;
        } else if (recheck) {
          recheck = false;
          check();
        }
      },
      (e: unknown) => {
        checking = false;
        stop('error', errorOf(e));
      },
    );
  };

  const onEvent = (ev: SessionEvent): void => {
    if (stopped) return;
    if (turnId === undefined) {
      buffer?.push(ev);
      return;
    }
    if (ev.seq <= lastSeq) return;
    lastSeq = ev.seq;
    if (awaitingRequeued) {
      if (ev.type !== 'turn.started' || opts.requeue?.starts(ev) !== true) return;
      awaitingRequeued = false;
      turnId = ev.turnId;
    }
    if (ev.turnId !== turnId) return;
    projector.push(ev);
    if (projector.settled !== undefined) {
      if (opts.requeue?.waiting() === true) {
        // The turn ended before the model saw this request's message: it is answered as a turn of its own.
        projector.nextTurn();
        awaitingRequeued = true;
        return;
      }
      stop(projector.stopReason());
      return;
    }
    if (stopAtSeq !== undefined && ev.seq >= stopAtSeq) {
      stopAtSeq = undefined;
      if (projector.unresolvedCalls().length > 0) {
        stop('tool_use');
        return;
      }
    }
    if (
      ev.type === 'turnState.changed' ||
      ev.type === 'approval.requested' ||
      ev.type === 'tool.result' ||
      (ev.type === 'tool.called' && ev.side === 'client')
    ) {
      if (projector.unresolvedCalls().length > 0) check();
    }
  };

  sub = handle.events(opts.afterSeq).subscribe({
    next: onEvent,
    error: (e: unknown) => stop('error', errorOf(e)),
    complete: () => stop(projector.settled !== undefined ? projector.stopReason() : 'error'),
  });
  if (stopped) sub.unsubscribe();

  return {
    setTurnId(id) {
      if (turnId !== undefined || stopped) return;
      turnId = id;
      const pending = buffer ?? [];
      buffer = undefined;
      for (const ev of pending) onEvent(ev);
      if (!stopped && projector.unresolvedCalls().length > 0) check();
    },
    check,
    outcome(o, graceMs = 250) {
      if (stopped) return;
      if (o.held !== undefined) {
        check();
        return;
      }
      // The store refused a write of the turn (or of the one before it): what was written has
      // been published, and the rest is not run here (waiting would only wake the session from
      // the store to ask). The session goes on from the store on its next request.
      if (o.error !== undefined && o.error.code.startsWith('store.')) {
        stop('error', o.error);
        return;
      }
      // Normally turn.settled arrives first. Otherwise wait while the stream is still behind
      // the session (bounded), then stop with the outcome's reason.
      const deadline = Date.now() + 20 * graceMs;
      const fromOutcome = (): StopReason =>
        o.stop === 'max_tokens' || o.stop === 'refusal' || o.stop === 'error'
          ? o.stop
          : projector.unresolvedCalls().length > 0
            ? 'tool_use'
            : 'end_turn';
      const tick = (): void => {
        if (stopped) return;
        handle.snapshot().then(
          (snap) => {
            if (stopped) return;
            if (lastSeq >= snap.lastSeq || Date.now() >= deadline) stop(fromOutcome(), o.error);
            else setTimeout(tick, graceMs).unref();
          },
          (e: unknown) => stop('error', o.error ?? errorOf(e)),
        );
      };
      setTimeout(tick, graceMs).unref();
    },
    stop: (reason, why) => stop(reason, why),
    done,
    get error() {
      return error;
    },
  };
}
