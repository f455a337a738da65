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
import { deferred, type ActiveTurn } from './turn.js';

/** What the policy needs of the session it runs in. */
export interface BusySession extends HostCore {
  readonly queue: MessageQueue;
  /** The turn's tool controller (created if the turn has none yet). */
  toolAbortOf(t: ActiveTurn): AbortController;
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
    // What the joined message's sender consumes counts for this turn too (llm-context).
    t.opts = withConsumers(t.opts, opts.consumes);
    t.interrupted = true;
    t.abort?.abort();
    // A running tool is told too: the model is told, and sees the new message.
    s.toolAbortOf(t).abort();
    await s.journal.commit({}, true);
    s.journal.barrier();
    return { turnId: t.turnId, queued: false, settled: t.promise };
  }
  const q = { turnId: s.deps.newId('turn'), message: msg, opts, ...deferred<TurnOutcome>() };
  s.queue.push(q);
  // The message is written as its own record (queue.ts): no snapshot.
  await s.journal.commit({});
  s.journal.barrier();
  return { turnId: q.turnId, queued: true, settled: q.promise };
}
