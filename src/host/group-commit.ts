/**
 * Group commit, for stores that ask for it (`SessionStore.groupCommit`, e.g. SQLite, where each
 * commit is a transaction): the steps of one event-loop turn are merged and written as one
 * commit when the event-loop turn ends, or at once at a barrier (`flush`), which the host calls
 * before every side effect (a tool handler), before a model call when progress parts wait,
 * before a turn stops or settles, and before an approval answer returns. Events are published
 * only after the write that holds them has landed (write-ahead).
 */
import type { QueuedEntry, SessionRecord, SessionStore, StepCommit, PersistedSession } from '../machines/ports.js';
import type { ApprovalRecord, ExecutionRecord, MailboxEntry, SessionEvent } from '../types.js';

/** What one write will hold (a class: one shape, whatever the steps carried). */
class Buffer {
  session: SessionRecord | undefined = undefined;
  events: SessionEvent[] = [];
  mailbox: MailboxEntry[] = [];
  executions: ExecutionRecord[] = [];
  approvals: ApprovalRecord[] = [];
  snapshot: PersistedSession | undefined = undefined;
  enqueue: QueuedEntry[] = [];
  dequeue: string[] = [];
  /** The session's last seq before the buffer's first event (restored if the write fails). */
  constructor(readonly firstSeq: number) {}

  add(step: StepCommit): void {
    const { events, mailbox, executions, approvals } = step;
    if (events) for (let i = 0; i < events.length; i++) this.events.push(events[i]!);
    if (mailbox) for (let i = 0; i < mailbox.length; i++) this.mailbox.push(mailbox[i]!);
    if (executions) for (let i = 0; i < executions.length; i++) this.executions.push(executions[i]!);
    if (approvals) for (let i = 0; i < approvals.length; i++) this.approvals.push(approvals[i]!);
    if (step.snapshot) this.snapshot = step.snapshot;
    if (step.session) this.session = step.session;
    // A store applies enqueue before dequeue: a message queued and started within one buffer nets out.
    if (step.enqueue) for (let i = 0; i < step.enqueue.length; i++) this.enqueue.push(step.enqueue[i]!);
    if (step.dequeue) for (let i = 0; i < step.dequeue.length; i++) this.dequeue.push(step.dequeue[i]!);
  }
}

export class GroupCommit {
  private buffer: Buffer | null = null;
  /** The end-of-event-loop-turn write, cancelled when a barrier writes first. */
  private timer: ReturnType<typeof setImmediate> | null = null;
  private error: Error | null = null;
  private waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];

  constructor(
    private readonly store: SessionStore,
    private readonly sessionId: string,
    /** Publish what a write holds (called after it landed). */
    private readonly written: (events: SessionEvent[]) => void,
    /** A write failed: nothing of the buffer was written or published. */
    private readonly failed: (firstSeq: number) => void,
  ) {}

  /** Whether a write failed (every later one is refused). */
  hasFailed(): boolean {
    return this.error !== null;
  }

  /** The failed write's error, if one failed. */
  failure(): Error | undefined {
    return this.error ?? undefined;
  }

  /** After a failed write nothing more is accepted (the turn fails at its next step). */
  throwIfFailed(): void {
    if (this.error) throw this.error;
  }

  /** Buffer a step whose events already carry their seqs; `firstSeq` is the last seq before them. */
  add(step: StepCommit, firstSeq: number): void {
    this.throwIfFailed();
    let b = this.buffer;
    if (!b) {
      b = this.buffer = new Buffer(firstSeq);
      this.timer = setImmediate(this.flushSoon);
    }
    b.add(step);
  }

  /** Whether user-visible parts wait in the buffer. */
  holdsParts(): boolean {
    const evs = this.buffer?.events;
    if (evs) for (let i = 0; i < evs.length; i++) if (evs[i]!.type === 'part.received') return true;
    return false;
  }

  /**
   * Resolves once what is buffered now has been written (at once when nothing is); rejects when
   * that write failed, or an earlier one did (a barrier may have written, and failed to write,
   * the buffer before the caller asked).
   */
  durable(): Promise<void> | void {
    if (!this.buffer) return this.error ? Promise.reject(this.error) : undefined;
    return new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private readonly flushSoon = (): void => {
    this.timer = null;
    try {
      this.flush();
    } catch {
      // Kept in `error`: the turn fails at its next step.
    }
  };

  /** Write what is buffered, then publish it. Synchronous (group-commit stores are). */
  flush(): void {
    const b = this.buffer;
    if (!b) {
      if (this.error) throw this.error;
      return;
    }
    this.buffer = null;
    if (this.timer) {
      clearImmediate(this.timer);
      this.timer = null;
    }
    const waiters = this.waiters;
    if (waiters.length) this.waiters = [];
    const step: StepCommit = {};
    if (b.session) step.session = b.session;
    if (b.events.length) step.events = b.events;
    if (b.mailbox.length) step.mailbox = b.mailbox;
    if (b.executions.length) step.executions = b.executions;
    if (b.approvals.length) step.approvals = b.approvals;
    if (b.snapshot) step.snapshot = b.snapshot;
    if (b.enqueue.length) step.enqueue = b.enqueue;
    if (b.dequeue.length) step.dequeue = b.dequeue;
    try {
      this.store.commit(this.sessionId, step);
    } catch (err) {
      this.failed(b.firstSeq);
      this.error = err instanceof Error ? err : new Error(String(err));
      for (const w of waiters) w.reject(this.error);
      throw this.error;
    }
    this.written(b.events);
    for (const w of waiters) w.resolve();
  }
}
