/**
 * The journal: the one writer and the one reader of a session's log.
 *
 * Contract:
 * - `commit(step)` stamps each event's `seq` (strictly increasing, no gaps), writes the step, and
 *   publishes its events only once the write has landed (write-ahead). Commits land in call
 *   order, for synchronous and asynchronous stores alike; a failed write takes its seqs back.
 * - With group commit (stores that ask for it) the steps of one event-loop turn become one write,
 *   made at the end of that event-loop turn or at once at a `barrier()`.
 * - `events(afterSeq)` replays the log page by page, then goes live, each event once and in order.
 *   `page(afterSeq, limit)` is the same paged read for callers that pace themselves. What the
 *   session handle hands out is `containSubscribers(events(afterSeq))` (runtime.ts): a subscriber
 *   that throws (or an error no callback handles) never reaches the session, the other
 *   subscribers or the process: it is reported as a process warning (TURNSTATE_OBSERVER_ERROR),
 *   as the router's streams report theirs, and the subscriber goes on receiving events.
 * - A failed write does not end the live stream: the host gives way (session-directory.ts) and its
 *   subscribers are handed to the host restored from the store (`handOver`, `adopt`), which
 *   continues the log where they stand.
 * - The mailbox and the derived model history are caches over the log: kept while the session is
 *   awake, handed to the runtime's history cache by `forget()` (so a waking session reads only the
 *   entries written after them), rebuilt from the store otherwise. So are the session's live A2UI
 *   surfaces (`liveSurfaces()`, envelope/live-surfaces.ts): a fold over the published parts, kept
 *   as steps commit once it has been read, caught up from the store when it is behind.
 */
import { Observable, Subject } from 'rxjs';
import { ContainedObservable } from '../router/contained.js';
import type { PersistedSession, SessionStore, StepCommit } from '../machines/ports.js';
import { createHistory, type HistoryView } from '../machines/mailbox.js';
import type { Envelope, InboundMessage, MailboxEntry, ModelStopReason, Part, Routing, Scope, SessionEvent, SessionEventBody, ToolSide, Usage } from '../types.js';
import type { Clock } from './clock.js';
import { GroupCommit } from './group-commit.js';
import { type HistoryCache, wakeMailbox } from './history-cache.js';
import { isPromise } from './turn.js';
import { LiveSurfaces } from '../envelope/live-surfaces.js';
import { TurnstateError } from '../errors.js';
import { cursorAheadProblem } from '../limits.js';

const ignore = (): void => {};

const stoppedError = (sessionId: string): TurnstateError =>
  new TurnstateError('session.stopped', `session ${sessionId} was stopped (runtime closed, session deleted or passivated): nothing more is written here; the store resumes what it holds`);

/** `Journal.later` while a fan-out runs and nothing waits (never written to). */
const FANNING: SessionEvent[] = [];

/** The live subscribers' subject; a handed-over one says when its last subscriber leaves (`handOver`). */
export class LiveSubject extends Subject<SessionEvent> {
  whenUnobserved: (() => void) | undefined = undefined;
}

/** Events read from the store per page while replaying. */
export const REPLAY_PAGE = 256;

/** The session a journal writes for (methods, not closures: a live session keeps fewer objects). */
export interface JournalOwner {
  /** The session's control state, persisted with steps that ask for it. */
  persistedSession(): PersistedSession;
  /** Adds what else rides every commit of the session (its queue's changes). */
  stageCommit(step: StepCommit): void;
}

export class Journal {
  /** Live subscribers' subject, made for the first one (most sessions are never followed). */
  private live: LiveSubject | null = null;
  /** null, or a fan-out runs: FANNING, or what was published meanwhile and waits (see fanout). */
  private later: SessionEvent[] | null = null;
  private completed = false;
  private commitChain: Promise<void> | null = null;
  /** An asynchronous store's failed write (the later ones fail with it). */
  private writeError: unknown = undefined;
  private readonly groupCommit: GroupCommit | null;
  private mailboxCache: MailboxEntry[] | null = null;
  private histories: Map<string, HistoryView> | null = null;
  /** The live surfaces (surfaces:live), once read; kept as steps commit while it is current. */
  private surfaceCache: LiveSurfaces | null = null;

  constructor(
    private readonly sessionId: string,
    private readonly store: SessionStore,
    private readonly clock: Clock,
    /** The last seq written for this session. */
    private lastSeq: number,
    private readonly owner: JournalOwner,
    fresh: boolean,
    /** Mailboxes of sleeping sessions, kept so a waking one reads only what is new. */
    private readonly cache?: HistoryCache,
  ) {
    this.groupCommit = store.groupCommit
      ? new GroupCommit(store, sessionId, (events) => this.fanout(events), (firstSeq) => {
          // Nothing of the buffer was written or published: take its seqs back; caches are rebuilt.
          this.lastSeq = firstSeq;
          this.mailboxCache = null;
          this.histories = null;
          this.surfaceCache = null;
          this.cache?.drop(sessionId);
        })
      : null;
    // A brand-new session has an empty mailbox: no need to read it back from the store.
    if (fresh) {
      this.mailboxCache = [];
      this.surfaceCache = new LiveSurfaces();
    }
  }

  /** The seq of the last event committed (or, under group commit, buffered). */
  get seq(): number {
    return this.lastSeq;
  }

  /** Someone follows the live stream. */
  get observed(): boolean {
    return this.live?.observed ?? false;
  }

  /** A session event of this session (its seq is stamped when it is committed). */
  event<T extends SessionEventBody>(turnId: string, body: T): SessionEvent {
    return { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), ...body } as SessionEvent;
  }

  // The events every turn publishes, each built as one literal. A live session keeps its events
  // (the in-memory store holds them), and an object spread from a body stores the body's fields
  // outside the object, about 23 B more per event (bench/heap-census.mjs).

  partReceived(turnId: string, callId: string, index: number, part: Part, turnState: string, actor: string): SessionEvent {
    return { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), type: 'part.received', callId, index, part, turnState, actor };
  }

  toolCalled(turnId: string, callId: string, tool: string, args: unknown, actor: string, side: ToolSide, scope?: Scope, routing?: Routing): SessionEvent {
    const at = this.clock.iso();
    return side === 'client'
      ? { seq: 0, sessionId: this.sessionId, turnId, at, type: 'tool.called', callId, tool, args, actor, side }
      : { seq: 0, sessionId: this.sessionId, turnId, at, type: 'tool.called', callId, tool, args, actor, side, scope, routing };
  }

  toolResult(turnId: string, callId: string, tool: string, view: unknown, isError: boolean, denial?: { reason?: string }): SessionEvent {
    const at = this.clock.iso();
    return denial
      ? { seq: 0, sessionId: this.sessionId, turnId, at, type: 'tool.result', callId, tool, view, isError, denial }
      : { seq: 0, sessionId: this.sessionId, turnId, at, type: 'tool.result', callId, tool, view, isError };
  }

  turnStarted(turnId: string, actor: string, input: InboundMessage): SessionEvent {
    return { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), type: 'turn.started', actor, input };
  }

  envelopeSettled(turnId: string, envelope: Envelope): SessionEvent {
    return { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), type: 'envelope.settled', envelope };
  }

  /** turn.settled without a stop, an error or compatibility fields (the others are built with `event`). */
  turnSettled(turnId: string, finalizedBy: string, usage: Usage): SessionEvent {
    return { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), type: 'turn.settled', finalizedBy, usage };
  }

  stateChanged(turnId: string, from: string, to: string, actor: string, resumedBy?: string): SessionEvent {
    return resumedBy === undefined
      ? { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), type: 'turnState.changed', from, to, actor }
      : { seq: 0, sessionId: this.sessionId, turnId, at: this.clock.iso(), type: 'turnState.changed', from, to, actor, resumedBy };
  }

  modelUsage(turnId: string, actor: string, usage: Usage, stopReason?: ModelStopReason): SessionEvent {
    const at = this.clock.iso();
    return stopReason === undefined
      ? { seq: 0, sessionId: this.sessionId, turnId, at, type: 'model.usage', actor, usage }
      : { seq: 0, sessionId: this.sessionId, turnId, at, type: 'model.usage', actor, usage, stopReason };
  }

  /** Commit one step, then publish its events. Synchronous for synchronous stores. */
  commit(step: StepCommit, withSnapshot = false): void | Promise<void> {
    // A stopped host writes nothing more: what it had was written when it stopped, and the store
    // resumes the rest (a continuation still running in it, e.g. an aborted tool, must not write
    // into a closed store or race the host that replaces it).
    if (this.completed) throw stoppedError(this.sessionId);
    this.owner.stageCommit(step);
    if (withSnapshot) step.snapshot = this.owner.persistedSession();
    if (this.groupCommit) return this.group(step);
    // An asynchronous store: writes land in order. After a failed write the later ones fail
    // with its error (the host then gives way to one restored from the store).
    const r = this.commitChain ? this.commitChain.then(() => this.write(step)) : this.write(step);
    if (r) {
      const chain: Promise<void> = r.then(() => {
        if (this.commitChain === chain) this.commitChain = null;
      });
      // The caller handles `r`; the chain only orders later writes.
      chain.catch(ignore);
      this.commitChain = chain;
      return r;
    }
  }

  private write(step: StepCommit): void | Promise<void> {
    const events = step.events;
    // Seqs are assigned when the step is written, and taken back if the write fails.
    const before = this.lastSeq;
    if (events) for (const e of events) e.seq = ++this.lastSeq;
    const landed = () => {
      if (step.mailbox && this.mailboxCache) for (const m of step.mailbox) this.mailboxCache.push(m);
      this.keepSurfaces(events, before);
      this.fanout(events);
    };
    let r: unknown;
    try {
      r = this.store.commit(this.sessionId, step);
    } catch (err) {
      this.lastSeq = before;
      throw err;
    }
    if (isPromise(r)) {
      return r.then(landed, (err) => {
        this.lastSeq = before;
        this.writeError = err;
        throw err;
      });
    }
    landed();
    return undefined;
  }

  /** Group commit: assign seqs and keep the caches now; the write and the publication come later. */
  private group(step: StepCommit): void {
    const gc = this.groupCommit!;
    gc.throwIfFailed();
    const events = step.events;
    const firstSeq = this.lastSeq;
    if (events) for (const e of events) e.seq = ++this.lastSeq;
    gc.add(step, firstSeq);
    if (step.mailbox && this.mailboxCache) for (const m of step.mailbox) this.mailboxCache.push(m);
    this.keepSurfaces(events, firstSeq);
  }

  /** A step's events applied to the live surfaces, when they are current (else `liveSurfaces()` catches up from the store). */
  private keepSurfaces(events: readonly SessionEvent[] | undefined, before: number): void {
    if (events !== undefined && this.surfaceCache?.seq === before) this.surfaceCache.applyEvents(events);
  }

  /** The live surfaces as the last `liveSurfaces()` left them and the commits since kept them (none before it). */
  get surfaces(): LiveSurfaces | undefined {
    return this.surfaceCache ?? undefined;
  }

  /**
   * The session's live A2UI surfaces (surfaces:live): what the published a2ui-surface parts
   * created and did not delete, read from the store (after what is kept) up to the last seq.
   */
  async liveSurfaces(): Promise<LiveSurfaces> {
    this.barrier();
    const ledger = this.surfaceCache ?? new LiveSurfaces();
    while (ledger.seq < this.lastSeq) {
      const page = await this.page(ledger.seq);
      if (page.length === 0) break;
      ledger.applyEvents(page);
    }
    this.surfaceCache ??= ledger;
    return this.surfaceCache;
  }

  /** Whether a failed write refuses every later one (group commit, or an asynchronous store's ordered writes). */
  failed(): boolean {
    return this.writeError !== undefined || this.groupCommit?.hasFailed() === true;
  }

  /** The failed write's error (see `failed`), if any. */
  failure(): unknown {
    return this.writeError ?? this.groupCommit?.failure();
  }

  /**
   * The live subscribers, taken from this journal (its host gives way after a failed write): the
   * host restored from the store adopts them (`adopt`), so they follow the session on. Each
   * subscriber resumes after the last seq it was given, so nothing is delivered twice or skipped
   * (the new host's log continues from what the store holds, which is what was published).
   * `unobserved` runs when the last of them unsubscribes before a host adopts them (whoever holds
   * them for that host lets them go: nobody is left to hand on).
   */
  handOver(unobserved?: () => void): LiveSubject | null {
    const live = this.live;
    this.live = null;
    if (!live?.observed) return null;
    live.whenUnobserved = unobserved;
    return live;
  }

  /** Subscribers handed over by the host this one replaces (before anything is published here). */
  adopt(live: LiveSubject): void {
    live.whenUnobserved = undefined;
    if (!live.observed) return;
    if (this.live === null && !this.completed) this.live = live;
    else live.complete();
  }

  /** Write whatever group commit holds now (no-op for other stores). */
  barrier(): void {
    // Once stopped there is nothing to write: stop() wrote what was buffered.
    if (!this.completed) this.groupCommit?.flush();
  }

  /** Resolves once what is buffered now has been written (at once when nothing is, or without group commit). */
  durable(): Promise<void> | void {
    return this.groupCommit?.durable();
  }

  /** Progress parts (ack, thinking) wait in the group-commit buffer: write them before a model call. */
  flushParts(): void {
    if (this.groupCommit?.holdsParts()) this.groupCommit.flush();
  }

  /** Under group commit, a new session's record is written with its first commit. */
  writeWithFirstCommit(step: StepCommit): void {
    this.groupCommit!.add(step, this.lastSeq);
  }

  /**
   * Publish written events to the live subscribers. Not re-entrant: a subscriber that sends from
   * its callback has the new turn's events written (a synchronous store) while this fan-out still
   * delivers older ones; they wait in `later` and are delivered after them, so every subscriber
   * sees every event once and in seq order (`events:replay-then-live`).
   */
  private fanout(events: SessionEvent[] | undefined): void {
    const live = this.live;
    if (!events || !live?.observed) return;
    const later = this.later;
    if (later !== null) {
      if (later === FANNING) this.later = events.slice();
      else for (const e of events) later.push(e);
      return;
    }
    this.later = FANNING;
    try {
      for (const e of events) live.next(e);
      for (let q = this.later; q !== FANNING; q = this.later) {
        this.later = FANNING;
        for (const e of q) live.next(e);
      }
    } finally {
      this.later = null;
    }
  }

  /** No more events: live subscribers complete. */
  complete(): void {
    this.completed = true;
    this.live?.complete();
  }

  private subject(): LiveSubject {
    if (!this.live) {
      this.live = new LiveSubject();
      if (this.completed) this.live.complete();
    }
    return this.live;
  }

  /* ------------------------------------------------------------ reading */

  /**
   * Up to `limit` written events after `afterSeq`, from the store. Under group commit, events
   * still buffered are not there yet: they reach live subscribers when written.
   */
  page(afterSeq: number, limit = REPLAY_PAGE): SessionEvent[] | Promise<SessionEvent[]> {
    return this.store.readEvents(this.sessionId, afterSeq, limit);
  }

  /**
   * Replay after `afterSeq` page by page, then live; each event once, in seq order. What a caller
   * subscribes to goes through `containSubscribers` (the session handle's `events()` does).
   */
  events(afterSeq = 0): Observable<SessionEvent> {
    return new Observable<SessionEvent>((sub) => {
      // A cursor this session never sent would skip every event up to it: refused as the
      // transports refuse one (cursor.ahead), from the seq written (or buffered) when it subscribes.
      const ahead = cursorAheadProblem('events(afterSeq): afterSeq', afterSeq, this.sessionId, this.lastSeq);
      if (ahead !== undefined) {
        sub.error(new TurnstateError('cursor.ahead', ahead, { details: { lastSeq: this.lastSeq } }));
        return;
      }
      let last = afterSeq;
      let replaying = true;
      const buffered: SessionEvent[] = [];
      const deliver = (e: SessionEvent) => {
        if (e.seq > last) {
          last = e.seq;
          sub.next(e);
        }
      };
      const subject = this.subject();
      const live = subject.subscribe({
        next: (e) => (replaying ? buffered.push(e) : deliver(e)),
        complete: () => sub.complete(),
      });
      const goLive = () => {
        replaying = false;
        for (const e of buffered) deliver(e);
        buffered.length = 0;
      };
      // Pages are read until one comes back short; a synchronous store is read in a loop.
      const onPage = (events: SessionEvent[]): boolean => {
        for (const e of events) deliver(e);
        if (events.length < REPLAY_PAGE || sub.closed) {
          goLive();
          return false;
        }
        return true;
      };
      const next = (): void => {
        for (;;) {
          if (last >= this.lastSeq) return goLive();
          let r: SessionEvent[] | Promise<SessionEvent[]>;
          try {
            r = this.page(last);
          } catch (err) {
            sub.error(err);
            return;
          }
          if (isPromise(r)) {
            r.then((events) => {
              if (onPage(events)) next();
            }, (err) => sub.error(err));
            return;
          }
          if (!onPage(r)) return;
        }
      };
      if (afterSeq >= this.lastSeq) goLive();
      else next();
      return () => {
        live.unsubscribe();
        // Handed over and waiting for the session's next host: the last subscriber left.
        if (!subject.observed) subject.whenUnobserved?.();
      };
    });
  }

  /** The session's mailbox (cached while awake). */
  async mailbox(): Promise<MailboxEntry[]> {
    if (!this.mailboxCache) {
      this.barrier();
      const v = await wakeMailbox(this.cache, this.store, this.sessionId);
      if (!this.mailboxCache) {
        this.mailboxCache = v.entries;
        this.histories = v.histories;
      }
      if (!this.surfaceCache && v.surfaces) this.surfaceCache = v.surfaces;
    }
    return this.mailboxCache;
  }

  /** The incremental model history of one actor (dropped with the mailbox cache). */
  history(actor: string): HistoryView {
    this.histories ??= new Map();
    let h = this.histories.get(actor);
    if (!h) {
      h = createHistory(actor);
      this.histories.set(actor, h);
    }
    return h;
  }

  /** The session sleeps: its mailbox and histories go to the runtime's cache (if any). */
  forget(): void {
    if (this.mailboxCache) this.cache?.put(this.sessionId, { entries: this.mailboxCache, histories: this.histories, surfaces: this.surfaceCache });
    this.mailboxCache = null;
    this.histories = null;
    this.surfaceCache = null;
  }
}

/**
 * `events` with its subscribers contained (router/contained.ts, as the router's streams are): a
 * subscriber's throw, or an error it has no callback for, is reported (`reportObserverError`)
 * instead of being rethrown by RxJS in a timer, where it would end the process; the other
 * subscribers, the session and that subscriber's later events go on. Costs one closure per call
 * and, per event, one call in a try: nothing is allocated per event.
 */
export function containSubscribers<T>(sessionId: string, events: Observable<T>): Observable<T> {
  return new ContainedObservable((error, ended) => reportObserverError(sessionId, error, ended), events);
}

/**
 * A `session.events()` subscriber threw, or errored with no error callback: a process warning
 * (code TURNSTATE_OBSERVER_ERROR), as the router's default `onError` reports a throwing stream
 * subscriber. Never throws.
 */
function reportObserverError(sessionId: string, error: unknown, ended: boolean): void {
  try {
    const msg = error instanceof Error ? error.message : String(error);
    const what = ended
      ? `a session.events() subscription of session ${sessionId} ended with an error nothing handled: ${msg} (a throwing operator ends its subscription; the session and other subscribers go on)`
      : `a session.events() subscriber of session ${sessionId} threw: ${msg} (ignored; the stream goes on)`;
    process.emitWarning(what, { code: 'TURNSTATE_OBSERVER_ERROR' });
  } catch {
    // Reporting is the last resort; a failure here has nowhere else to go.
  }
}
