/**
 * A message that arrives while the session is busy (a turn runs, or messages wait): the session's
 * double-texting policy decides. `reject` refuses it (nothing accepted); `interrupt` lets it join
 * the running turn when the machine allows (`JOIN`: no calls pending), cancelling the running
 * model call and tools; otherwise it waits in the bounded queue as its own record.
 */
import type { SendOptions, TurnOutcome, TurnRef } from '../api.js';
import { withConsumers } from '../envelope/consumers.js';
import { TurnstateError } from '../errors.js';
import type { InboundMessage } from '../types.js';
import type { HostCore } from './core.js';
import type { MessageQueue } from './queue.js';
import { deferred, ZERO, type ActiveTurn } from './turn.js';
import { withTurnTools } from './turn-tools.js';

/** What the policy needs of the session it runs in. */
export interface BusySession extends HostCore {
  readonly queue: MessageQueue;
  /** The turn's tool controller (created if the turn has none yet). */
  toolAbortOf(t: ActiveTurn): AbortController;
  /** A write failed for good: the host gives way to one restored from the store. */
  writeFailed(): void;
}

export async function acceptWhileBusy(s: BusySession, msg: InboundMessage, opts: SendOptions): Promise<TurnRef> {
  const t = s.turn;
  const policy = s.record.doubleTexting;
  if (policy === 'reject') {
    throw new TurnstateError(
      'session.busy',
      `session ${s.id} is running turn ${t?.turnId ?? s.queue.first()?.turnId}; its double-texting policy is "reject", so this message was not accepted — send it again after the turn settles`,
      { details: { sessionId: s.id, turnId: t?.turnId } },
    );
  }
  s.queue.assertRoom(t?.joined.length ?? 0);
  if (policy === 'interrupt' && t && s.machine.ask({ type: 'JOIN', pending: t.pending.size }).length > 0) {
    // The machine lets it join. Flag before awaiting: the running call must not finish unaware
    // of the joined message. The message is durable at once (in the host state); it enters the
    // mailbox when the next model call is built, after whatever the cut response applied.
    t.joined.push(msg);
    const sender = { pos: s.queue.reserve(), ...deferred<TurnOutcome>() };
    (t.joinedBy ??= new Map()).set(msg, sender);
    // What the joined message's sender consumes counts for this turn too (llm-context), and the
    // tool settings it gives govern the rest of the turn (trust it removes is gone).
    const before = t.opts;
    t.opts = withTurnTools(withConsumers(t.opts, opts.consumes), opts);
    t.interrupted = true;
    t.abort?.abort();
    // A running tool is told too: the model is told, and sees the new message.
    s.toolAbortOf(t).abort();
    try {
      await s.journal.commit({}, true);
      s.journal.barrier();
    } catch (err) {
      // Not written, so not accepted (the cut model call stays cut: the turn calls it again).
      const i = t.joined.indexOf(msg);
      if (i >= 0) t.joined.splice(i, 1);
      t.joinedBy.delete(msg);
      t.opts = before;
      if (s.journal.failed()) s.writeFailed();
      throw err;
    }
    return { turnId: t.turnId, queued: false, settled: sender.promise };
  }
  const q = { turnId: s.deps.newId('turn'), message: msg, opts, ...deferred<TurnOutcome>() };
  s.queue.push(q);
  try {
    // The message is written as its own record (queue.ts): no snapshot.
    await s.journal.commit({});
    s.journal.barrier();
  } catch (err) {
    // Not written, so not accepted: it leaves the queue. A store that refuses every later write
    // too leaves the running turn unable to go on: the host gives way to one restored from it.
    s.queue.withdraw(q.turnId);
    if (s.journal.failed()) s.writeFailed();
    throw err;
  }
  return { turnId: q.turnId, queued: true, settled: q.promise };
}

/** The joined messages reach a model request of `t`: their senders learn this turn's outcome. */
export function carryJoined(t: ActiveTurn): InboundMessage[] {
  const joined = t.joined;
  t.joined = [];
  const by = t.joinedBy;
  if (by !== undefined) {
    for (const m of joined) {
      const sender = by.get(m);
      if (sender !== undefined) void t.promise.then(sender.resolve);
    }
    t.joinedBy = undefined;
  }
  return joined;
}

/** Messages that joined `t` too late for it to show them are not lost: each becomes a turn, in its place in arrival order. */
export function requeueJoined(s: BusySession, t: ActiveTurn): void {
  for (const m of t.joined) {
    const sender = t.joinedBy?.get(m);
    const { resolve, reject, promise } = sender ?? deferred<TurnOutcome>();
    const q = { turnId: s.deps.newId('turn'), message: m, opts: t.opts, resolve, reject, promise };
    s.queue.requeue(q, sender?.pos);
  }
  t.joined = [];
  t.joinedBy = undefined;
}

/** The host stops: the running turn's sender and those of its joined messages, and every queued sender, learn so (and `why`, when given). */
export function releaseSenders(s: BusySession, t: ActiveTurn | null, why?: { code: string; message: string }): void {
  const error = why ?? { code: 'session.stopped', message: `session ${s.id} was stopped (runtime closed or session deleted) before the turn settled` };
  if (t) {
    const outcome: TurnOutcome = { turnId: t.turnId, finalizedBy: s.machine.state(), stop: 'interrupted', parts: t.parts.slice(), usage: t.usage, error };
    t.resolve(outcome);
    if (t.joinedBy !== undefined) for (const sender of t.joinedBy.values()) sender.resolve(outcome);
  }
  for (const q of s.queue) q.resolve({ turnId: q.turnId, finalizedBy: 'idle', stop: 'interrupted', parts: [], usage: ZERO, error });
}
