/**
 * The session host: the facade every caller holds (SessionHandle) and the effect loop that
 * executes what the session machine decides.
 *
 * The machine decides, the host executes: every event the host sends the machine may emit
 * effects (`SessionEffect`); the loop (`pump`) executes them in order — a model call
 * (model-call.ts), tool dispatch (tool-dispatch.ts), a published turn-state change, a hold, a
 * settlement (settlement.ts) — and sends each outcome back as an event. The host never reads
 * turn-state metadata to choose what happens next. Every step is committed through the journal
 * (journal.ts) before any of its events is published. One turn at a time; a message during a
 * turn follows the session's double-texting policy (double-texting.ts); injections land through
 * injections.ts.
 */
import type { Observable } from 'rxjs';
import type { CreateSessionOptions, Injection, SendOptions, SessionHandle, SessionSnapshot, TurnOutcome, TurnRef, TurnTools } from '../api.js';
import { TurnstateError } from '../errors.js';
import type { PersistedSession, QueuedEntry, SessionRecord, StepCommit } from '../machines/ports.js';
import type { SessionMachineEvent } from '../machines/session.machine.js';
import type { AnswerResult, ExecutionRecord, InboundMessage, MailboxEntry, Principal, SessionEvent } from '../types.js';
import { applyAnswer, resolveApproval } from './approval-answers.js';
import type { HostDeps } from './core.js';
import { Journal } from './journal.js';
import { LiveMachine } from './live-machine.js';
import { assertTurnClientTools, updateTurnTools } from './turn-tools.js';
import { boundsOf } from './model-call.js';
import { acceptWhileBusy, releaseSenders, requeueJoined } from './double-texting.js';
import { inject } from './injections.js';
import { EffectLoop, type LoopOwner } from './effect-loop.js';
import { recoverTurn, restoredTurn } from './recovery.js';
import { sessionSnapshot } from './snapshot.js';
import { MessageQueue } from './queue.js';
import { ANSWERED, deferred, hostStateOf, newTurn, userEntry, type ActiveTurn, type HostState } from './turn.js';

export type { HostDeps } from './core.js';

export class SessionHost implements SessionHandle, LoopOwner {
  readonly id: string;
  readonly record: SessionRecord;
  readonly deps: HostDeps;
  readonly journal: Journal;
  readonly machine: LiveMachine;
  turn: ActiveTurn | null = null;
  closed = false;
  lastActive: number;
  readonly queue: MessageQueue;
  private idleWaiters: (() => void)[] | null = null;
  private abortCtl: AbortController | null = null; // reused across model calls until one is aborted
  private recovering: Promise<void> | null = null;
  private readonly loop = new EffectLoop(this);

  constructor(deps: HostDeps, record: SessionRecord, lastSeq: number, persisted?: PersistedSession) {
    this.deps = deps;
    this.id = record.id;
    this.record = record;
    this.queue = new MessageQueue(record.id, deps.limits.maxQueuedMessages);
    this.journal = new Journal(record.id, deps.store, deps.clock, lastSeq, this, lastSeq === 0 && !persisted, deps.historyCache);
    // A new session starts from the machine's cached initial snapshot (restoring is ~3x cheaper
    // than computing the initial state); only the entry actor differs.
    const snapshot = persisted ? persisted.machine : deps.initialSnapshot?.(record.actor);
    this.machine = new LiveMachine(deps.machine(), record.actor, deps.limits, snapshot, deps.inspect);
    this.lastActive = deps.clock.now();
  }

  /* ------------------------------------------------------------ state */

  /** 'idle', or the current turn-state node. */
  turnState(): string {
    return this.machine.state();
  }

  get busy(): boolean {
    return this.turn !== null || this.queue.length > 0;
  }

  /** Someone is subscribed to the live stream (a watched session is not passivated). */
  get watched(): boolean {
    return this.journal.observed;
  }

  toolSignal(t: ActiveTurn): AbortSignal {
    return this.toolAbortOf(t).signal;
  }

  /** The turn's tool controller, its own (made at its first tool call). */
  toolAbortOf(t: ActiveTurn): AbortController {
    return (t.toolAbort ??= new AbortController());
  }

  modelAbort(): AbortController {
    if (!this.abortCtl || this.abortCtl.signal.aborted) this.abortCtl = new AbortController();
    return this.abortCtl;
  }

  /* For the journal (JournalOwner): what else rides every commit (the queue's changes), and the control state. */
  stageCommit(step: StepCommit): void {
    this.queue.stage(step);
  }
  persistedSession(): PersistedSession {
    return { machine: this.machine.persisted(), host: hostStateOf(this.turn) as unknown as Record<string, unknown> };
  }

  /** Write whatever group commit holds for this session now. */
  persistNow(): void {
    this.journal.barrier();
  }

  /** A new session under group commit: its record is written with its first commit. */
  writeWithFirstCommit(): void {
    this.journal.writeWithFirstCommit({ session: this.record });
  }

  /** Between turns the session sleeps: only its snapshot and the store remain. */
  private sleep(): void {
    if (this.busy || this.closed) return;
    // An idle session keeps no model controller (with its signal ~400 B); its next turn makes a new one.
    this.abortCtl = null;
    this.machine.sleep();
    // Even when the machine stays live (inspected): the mailbox goes to the history cache, within its budget.
    this.journal.forget();
  }

  /* ------------------------------------------------------------ SessionHandle */

  events(afterSeq = 0): Observable<SessionEvent> {
    return this.journal.events(afterSeq);
  }

  snapshot(): Promise<SessionSnapshot> {
    return sessionSnapshot(this, this.queue);
  }

  async mailbox(): Promise<MailboxEntry[]> {
    return (await this.journal.mailbox()).slice();
  }

  async surfaces(): Promise<string[]> {
    return (await this.journal.liveSurfaces()).ids();
  }

  async executions(): Promise<ExecutionRecord[]> {
    return await this.deps.store.readExecutions(this.id);
  }

  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((res) => (this.idleWaiters ??= []).push(res));
  }

  async send(message: InboundMessage | string, opts: SendOptions = {}): Promise<TurnRef> {
    if (this.closed) throw new TurnstateError('runtime.closed', 'the runtime is closed; the message was not accepted');
    const msg: InboundMessage = typeof message === 'string' ? { text: message } : { ...message };
    if (typeof msg.text !== 'string' || msg.text.trim() === '') {
      throw new TurnstateError('message.invalid', 'a message needs non-empty `text`');
    }
    assertTurnClientTools(this, opts.clientTools);
    if (!msg.principal && opts.principal) msg.principal = opts.principal;
    this.deps.onActivity(this);
    if (this.turn || this.queue.length > 0) return acceptWhileBusy(this, msg, opts);
    const d = deferred<TurnOutcome>();
    const turnId = this.deps.newId('turn');
    try {
      // Accepted means durable: wait for the write that holds turn.started (with group commit,
      // the first barrier of the turn or the end of this event-loop turn, instead of adding one).
      const written = this.startTurn(turnId, msg, opts, d);
      await (written ?? this.journal.durable());
    } catch (err) {
      // Not written, so not accepted: this host is ahead of the store and gives way to one
      // restored from it (the session as it was before the message).
      this.writeFailed();
      throw err;
    }
    return { turnId, queued: false, settled: d.promise };
  }

  /** Starts the turn; for an asynchronous store, returns the write of its message (the turn runs once it landed). */
  private startTurn(turnId: string, input: InboundMessage, opts: SendOptions, d: { promise: Promise<TurnOutcome>; resolve: (o: TurnOutcome) => void }): Promise<void> | undefined {
    const t = newTurn(turnId, input, opts, d);
    this.turn = t;
    this.machine.adopt(this.deps.machine());
    const entry = this.deps.registries.actors.get(this.record.actor);
    this.machine.send(entry ? { type: 'START', turnId, limits: boundsOf(this, entry) } : { type: 'START', turnId });
    const r = this.journal.commit({ events: [this.journal.turnStarted(turnId, this.record.actor, input)], mailbox: [userEntry(turnId, this.deps.clock.iso(), input)] }, true);
    // With group commit the message is written with the rest of this event-loop turn, before
    // anything about it is published and before any side effect of the turn.
    if (r) return r.then(() => void this.loop.pump(t));
    void this.loop.pump(t);
    return undefined;
  }

  /** Reachable while recover() feeds a held turn its plan: an injection waits for it (one for a working turn is refused at once). */
  inject(injection: Injection): Promise<TurnRef | undefined> {
    return this.recovering && this.machine.held() ? this.recovering.then(() => inject(this, injection)) : inject(this, injection);
  }

  updateTurnTools(turnId: string, tools: TurnTools, metadata?: Record<string, unknown>): Promise<boolean> {
    return updateTurnTools(this, turnId, tools, metadata);
  }

  async answerApproval(approvalId: string, answer: { approved: boolean; reason?: string }, by: Principal, via: string): Promise<AnswerResult> {
    const r = await resolveApproval(this, approvalId, answer, by, via);
    if (!r.ok) return r;
    this.deps.onActivity(this);
    await applyAnswer(this, r.record);
    return r;
  }

  /** A pending call was answered: when none is left and every outcome is recorded, the machine may resume the turn. */
  answered(t: ActiveTurn): TurnRef {
    const ref = t.pending.size === 0 && t.answering === 0 ? this.resume(t, ANSWERED) : undefined;
    return ref ?? { turnId: t.turnId, queued: false, settled: t.promise };
  }

  /** Resume a held turn if the machine takes `event`; the caller gets a fresh settlement promise. */
  resume(t: ActiveTurn, event: SessionMachineEvent): TurnRef | undefined {
    if (!this.machine.can(event)) return undefined;
    const d = deferred<TurnOutcome>();
    t.resolve = d.resolve;
    t.promise = d.promise;
    this.machine.send(event);
    void this.loop.pump(t);
    return { turnId: t.turnId, queued: false, settled: d.promise };
  }

  requeue(t: ActiveTurn): void {
    requeueJoined(this, t);
  }

  endTurn(): void {
    this.turn = null;
  }

  next(): void {
    const q = this.queue.shift();
    // A queued message is durable already; if its turn's start cannot be written, the host gives way.
    if (q) this.startTurn(q.turnId, q.message, q.opts, q)?.catch(() => this.writeFailed());
    else this.released();
  }

  writeFailed(): void {
    this.deps.onWriteFailed?.(this);
  }

  released(): void {
    if (this.busy) return;
    const w = this.idleWaiters;
    this.idleWaiters = null;
    if (w) for (const f of w) f();
    this.deps.onActivity(this);
    this.sleep();
  }

  /* ------------------------------------------------------------ recovery */

  /**
   * Resume after a restart: queued messages go back in line; an unfinished turn's recovery plan
   * (recovery.ts) is fed to the machine, which decides whether it waits, calls again or settles.
   */
  async recover(host: HostState | undefined, queued: readonly QueuedEntry[] = []): Promise<void> {
    const state = this.turnState();
    // A snapshot written before queued messages were records of their own carries them itself.
    const legacy = queued.length ? undefined : host?.queue;
    if (state === 'idle' && !queued.length && !legacy?.length) return;
    this.queue.restore(queued);
    if (legacy) for (const q of legacy) this.queue.push({ ...q, ...deferred<TurnOutcome>() });
    if (state === 'idle' || !host?.turn) {
      if (state === 'idle') this.next();
      return;
    }
    const t = (this.turn = restoredTurn(host.turn));
    this.recovering = recoverTurn(this, this.loop, t, host.turn).finally(() => (this.recovering = null));
    await this.recovering;
    void this.loop.pump(t);
  }

  /** Stop the live actor (passivation, shutdown, a failed write: `why` tells waiting senders). Events already committed stay in the store. */
  stop(why?: { code: string; message: string }): void {
    // What was committed is written before the host goes away (nothing accepted is lost).
    try {
      this.journal.barrier();
    } catch {
      // The store refused it: recover() resumes from what it holds.
    }
    this.closed = true;
    this.journal.forget();
    this.turn?.abort?.abort();
    this.turn?.toolAbort?.abort();
    this.machine.stop();
    this.journal.complete();
    // Nothing more runs in this host: release whoever awaits a turn here (the store keeps it for recover()).
    releaseSenders(this, this.turn, why);
    const waiters = this.idleWaiters;
    this.idleWaiters = null;
    if (waiters) for (const f of waiters) f();
  }
}

export type { HostState, CreateSessionOptions };
