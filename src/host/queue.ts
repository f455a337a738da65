/**
 * A session's queue of messages waiting behind its running turn (double-texting `queue`), bounded
 * by `RuntimeLimits.maxQueuedMessages`. Each change is journaled, not re-snapshotted: a message
 * is written once as its own record (`StepCommit.enqueue`) and removed when its turn starts
 * (`StepCommit.dequeue`), so storage grows with the text queued, not with its square.
 *
 * Changes are staged here and ride the session's next commit (`stage`), so a dequeue lands in
 * the same write as the turn.started it leads to. No I/O.
 */
import { TurnstateError } from '../errors.js';
import type { QueuedEntry, StepCommit } from '../machines/ports.js';
import { deferred, type QueuedMessage } from './turn.js';
import type { SendOptions, TurnOutcome } from '../api.js';

interface Item {
  q: QueuedMessage;
  pos: number;
}

/** Every session has one, mostly empty: its arrays are created with the first message. */
export class MessageQueue {
  private items: Item[] | null = null;
  private enqueued: QueuedEntry[] | null = null;
  private dequeued: string[] | null = null;
  /** The lowest and highest pos handed out (front and back). */
  private lo = 0;
  private hi = 0;

  constructor(
    private readonly sessionId: string,
    /** At most this many messages wait (joined messages of the running turn count too). */
    readonly max: number,
  ) {}

  get length(): number {
    return this.items === null ? 0 : this.items.length;
  }

  first(): QueuedMessage | undefined {
    return this.items?.[0]?.q;
  }

  /** The waiting messages in queue order: turnId and text (read-only; for the session snapshot). */
  waiting(): Array<{ turnId: string; text: string }> {
    return this.items === null ? [] : this.items.map((it) => ({ turnId: it.q.turnId, text: it.q.message.text }));
  }

  *[Symbol.iterator](): IterableIterator<QueuedMessage> {
    if (this.items !== null) for (const item of this.items) yield item.q;
  }

  /**
   * Refuses a message when `waiting` (the queue, plus messages that joined the running turn)
   * is at the limit: throws TurnstateError('session.queue_full') naming it. Nothing is accepted.
   */
  assertRoom(joined = 0): void {
    const waiting = this.length + joined;
    if (waiting < this.max) return;
    throw new TurnstateError(
      'session.queue_full',
      `session ${this.sessionId} already has ${waiting} message(s) waiting behind its running turn, the limit (RuntimeLimits.maxQueuedMessages = ${this.max}); this message was not accepted — send it again after a turn settles`,
      { details: { sessionId: this.sessionId, limit: this.max, waiting } },
    );
  }

  /** Queue at the back; journaled with the next commit. */
  push(q: QueuedMessage): void {
    this.add(q, ++this.hi);
  }

  /** A place in arrival order for a message that joins the running turn (double-texting `interrupt`). */
  reserve(): number {
    return ++this.hi;
  }

  /**
   * Queue a message that joined a turn too late for it to see: at the place it arrived in (from
   * `reserve`), or in front when that is unknown (a turn restored with joined messages).
   */
  requeue(q: QueuedMessage, pos?: number): void {
    this.add(q, pos ?? --this.lo);
  }

  /** Take back a message whose record could not be written (it was never accepted). */
  withdraw(turnId: string): void {
    const items = this.items;
    const i = items === null ? -1 : items.findIndex((it) => it.q.turnId === turnId);
    if (i >= 0) items!.splice(i, 1);
    const staged = this.enqueued === null ? -1 : this.enqueued.findIndex((e) => e.turnId === turnId);
    if (staged >= 0) this.enqueued!.splice(staged, 1);
  }

  /** Take the next message; its removal is journaled with the next commit (its turn.started). */
  shift(): QueuedMessage | undefined {
    const item = this.items?.shift();
    if (item === undefined) return undefined;
    (this.dequeued ??= []).push(item.q.turnId);
    return item.q;
  }

  /** Restore what the store holds (recovery): nothing is journaled again. */
  restore(entries: readonly QueuedEntry[]): void {
    for (const e of entries) {
      const d = deferred<TurnOutcome>();
      (this.items ??= []).push({ q: { turnId: e.turnId, message: e.message, opts: e.opts as SendOptions, ...d }, pos: e.pos });
      if (e.pos > this.hi) this.hi = e.pos;
      if (e.pos < this.lo) this.lo = e.pos;
    }
  }

  /** Moves the staged queue changes into `step` (call once for every commit of the session). */
  stage(step: StepCommit): void {
    if (this.enqueued !== null) {
      step.enqueue = this.enqueued;
      this.enqueued = null;
    }
    if (this.dequeued !== null) {
      step.dequeue = this.dequeued;
      this.dequeued = null;
    }
  }

  /** Items stay in `pos` order (arrival order). */
  private add(q: QueuedMessage, pos: number): void {
    const item = { q, pos };
    const items = (this.items ??= []);
    let i = items.length;
    while (i > 0 && items[i - 1]!.pos > pos) i--;
    items.splice(i, 0, item);
    (this.enqueued ??= []).push({ turnId: q.turnId, pos, message: q.message, opts: q.opts as Record<string, unknown> });
  }
}
