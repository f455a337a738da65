/**
 * Group commit, for stores that ask for it (`SessionStore.groupCommit`, e.g. SQLite, where each
 * commit is a transaction): the steps of one event-loop turn are merged and written as one
 * commit when the event-loop turn ends, or at once at a barrier (`flush`), which the host calls
 * before every side effect (a tool handler), before a model call when progress parts wait,
 * before a turn stops or settles, and before an approval answer returns. Events are published
 * only after the write that holds them has landed (write-ahead).
 */
import type { SessionRecord, SessionStore, StepCommit, PersistedSession } from '../machines/ports.js';
import type { ApprovalRecord, ExecutionRecord, MailboxEntry, SessionEvent } from '../types.js';

interface Buffer {
  session?: SessionRecord;
  events: SessionEvent[];
  mailbox: MailboxEntry[];
  executions: ExecutionRecord[];
  approvals: ApprovalRecord[];
  snapshot?: PersistedSession;
  /** The session's last seq before the buffer's first event (restored if the write fails). */
  firstSeq: number;
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

  /** After a failed write nothing more is accepted (the turn fails at its next step). */
  throwIfFailed(): void {
    if (this.error) throw this.error;
  }

  /** Buffer a step whose events already carry their seqs; `firstSeq` is the last seq before them. */
  add(step: StepCommit, firstSeq: number): void {
    this.throwIfFailed();
    const b = this.buffer;
    if (!b) {
      this.buffer = {
        ...(step.session ? { session: step.session } : {}),
        events: step.events ? step.events.slice() : [],
        mailbox: step.mailbox?.slice() ?? [],
        executions: step.executions?.slice() ?? [],
        approvals: step.approvals?.slice() ?? [],
        ...(step.snapshot ? { snapshot: step.snapshot } : {}),
        firstSeq,
      };
      this.timer = setImmediate(this.flushSoon);
      return;
    }
    if (step.events) for (const e of step.events) b.events.push(e);
    if (step.mailbox) for (const m of step.mailbox) b.mailbox.push(m);
    if (step.executions) for (const x of step.executions) b.executions.push(x);
    if (step.approvals) for (const a of step.approvals) b.approvals.push(a);
    if (step.snapshot) b.snapshot = step.snapshot;
    if (step.session) b.session = step.session;
  }

  /** Whether user-visible parts wait in the buffer. */
  holdsParts(): boolean {
    const evs = this.buffer?.events;
    if (evs) for (let i = 0; i < evs.length; i++) if (evs[i]!.type === 'part.received') return true;
    return false;
  }

  /** Resolves once what is buffered now has been written (at once when nothing is). */
  durable(): Promise<void> | void {
    if (!this.buffer) return;
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
