/**
 * The session host: executes what the session machine decides. It runs model calls, applies
 * respond() calls, dispatches tools through the router, persists every step (write-ahead: a
 * step is committed to the store before any of its events is published) and publishes the
 * session's ordered event stream.
 *
 * One turn at a time; effects come back into the machine as events; the machine's snapshot is
 * persisted whenever the turn state changes, so a restarted runtime resumes from the store.
 */
import { Observable, Subject } from 'rxjs';
import { createActor, type Actor } from 'xstate';
import type {
  CreateSessionOptions,
  Injection,
  RuntimeLimits,
  SendOptions,
  SessionHandle,
  SessionSnapshot,
  TurnOutcome,
  TurnRef,
} from '../api.js';
import { ModelError, TurnstateError } from '../errors.js';
import type { ModelEvent, ModelPort, PersistedSession, SessionRecord, SessionStore, StepCommit } from '../machines/ports.js';
import type { SessionContext, SessionMachine, SessionMachineEvent } from '../machines/session.machine.js';
import { createHistory, type HistoryView } from '../machines/mailbox.js';
import type { ActorDefinition, Registries, RegisteredTool } from '../registries/types.js';
import { RESPOND_TOOL_NAME, createCompatTracker, isCompatTool, type CompatTracker, type RespondParser, type RespondResult } from '../respond/index.js';
import { createRespondStreamParser } from '../respond/stream.js';
import type { EventRouter } from '../router/router.js';
import { assembleEnvelope, collectData } from '../envelope/assemble.js';
import type {
  AnswerResult,
  ApprovalRecord,
  ContentBlock,
  ExecutionRecord,
  InboundMessage,
  MailboxEntry,
  ModelTool,
  Part,
  PolicyResult,
  Principal,
  SessionEvent,
  SessionEventBody,
  ToolUseBlock,
  Usage,
} from '../types.js';
import type { Clock } from './clock.js';
import { GroupCommit } from './group-commit.js';
import {
  addUsage,
  deferred,
  isIdleSnapshot,
  isPromise,
  RESPOND_OK,
  toolAbortController,
  userFacingModelError,
  ZERO,
  type ActiveTurn,
  type HostState,
  type QueuedMessage,
} from './turn.js';
import type { ActorTools, ToolCatalog } from './tool-catalog.js';

export interface HostDeps {
  registries: Registries;
  store: SessionStore;
  model: ModelPort;
  contextModel: ModelPort;
  router: EventRouter;
  parser: RespondParser;
  catalog: ToolCatalog;
  machine: () => SessionMachine;
  /** The persisted initial snapshot of the current machine for an entry actor (optional fast path). */
  initialSnapshot?: (entryActor: string) => unknown;
  limits: RuntimeLimits;
  clock: Clock;
  newId: (prefix: string) => string;
  canAnswerApproval: (approval: ApprovalRecord, by: Principal) => boolean;
  inspect?: ((event: unknown) => void) | { next?: (event: unknown) => void };
  produceLlmContext?: (
    model: ModelPort,
    input: { sessionId: string; turnId: string; actor: string; parts: Part[]; data: unknown[]; signal: AbortSignal },
  ) => Promise<{ part: Part; usage: Usage }>;
  onActivity: (host: SessionHost) => void;
}

export class SessionHost implements SessionHandle {
  readonly id: string;
  readonly record: SessionRecord;
  private readonly deps: HostDeps;
  /** The live XState actor while a turn runs; between turns the session sleeps as `dormant`. */
  private live: Actor<SessionMachine> | null = null;
  /** The persisted snapshot of a sleeping session (no live actor: an idle session costs little). */
  private dormant: unknown = null;
  private machine: SessionMachine;
  /** The machine's input (only needed to create an actor; computed then). */
  private get machineInput() {
    const l = this.deps.limits;
    return {
      entryActor: this.record.actor,
      maxHandoffs: l.maxHandoffsPerTurn,
      loop: { maxModelCalls: l.maxModelCallsPerTurn, maxRespondRetries: l.maxRespondRetries, maxNudges: l.maxFreeTextNudges },
    };
  }
  private readonly subject = new Subject<SessionEvent>();
  private seq: number;
  private turn: ActiveTurn | null = null;
  private readonly queue: QueuedMessage[] = [];
  private mailboxCache: MailboxEntry[] | null = null;
  /** Incremental model history per actor (dropped with the mailbox cache). */
  private histories: Map<string, HistoryView> | null = null;
  /** The turn state last published (turnState.changed `from`). */
  private published: string;
  private idleWaiters: (() => void)[] = [];
  private commitChain: Promise<void> | null = null;
  /** Group commit, for stores that ask for it (see group-commit.ts). */
  private readonly groupCommit: GroupCommit | null;
  lastActive: number;
  closed = false;
  /** Reused across model calls until one is aborted (AbortController is costly to create). */
  private abortCtl: AbortController | null = null;
  /** The last turn's tool AbortController, taken again while clean (see toolAbortController). */
  private toolCtl: AbortController | null = null;

  constructor(deps: HostDeps, record: SessionRecord, lastSeq: number, persisted?: PersistedSession) {
    this.deps = deps;
    this.id = record.id;
    this.record = record;
    this.seq = lastSeq;
    this.groupCommit = deps.store.groupCommit
      ? new GroupCommit(deps.store, record.id, (events) => this.fanout(events), (firstSeq) => {
          // Nothing of the buffer was written or published: take its seqs back; caches are rebuilt.
          this.seq = firstSeq;
          this.mailboxCache = null;
          this.histories = null;
        })
      : null;
    const machine = deps.machine();
    this.machine = machine;
    // A new session starts from the machine's cached initial snapshot (restoring is ~3x cheaper
    // than computing the initial state); only the entry actor differs.
    const snapshot = persisted ? persisted.machine : deps.initialSnapshot?.(record.actor);
    if (snapshot && !deps.inspect && isIdleSnapshot(snapshot)) this.dormant = snapshot;
    else this.wake(snapshot);
    // A brand-new session has an empty mailbox: no need to read it back from the store.
    if (lastSeq === 0 && !persisted) this.mailboxCache = [];
    this.published = this.turnState();
    this.lastActive = deps.clock.now();
  }

  /* ------------------------------------------------------------ state helpers */

  /** The live actor, woken from the dormant snapshot when the session sleeps. */
  private get actor(): Actor<SessionMachine> {
    return this.live ?? this.wake(this.dormant);
  }

  private wake(snapshot: unknown): Actor<SessionMachine> {
    const a = createActor(this.machine, {
      input: this.machineInput,
      ...(snapshot ? { snapshot: snapshot as any } : {}),
      ...(this.deps.inspect ? { inspect: this.deps.inspect as any } : {}),
    });
    a.start();
    this.live = a;
    this.dormant = null;
    return a;
  }

  /**
   * Between turns the session sleeps: the live actor is stopped and only its persisted snapshot
   * (a few hundred bytes) and the store remain; caches are dropped. With `inspect` set the actor
   * stays live, so an inspector sees one actor per session.
   */
  private sleep(): void {
    if (!this.live || this.deps.inspect || this.busy || this.closed) return;
    this.dormant = this.live.getPersistedSnapshot();
    this.live.stop();
    this.live = null;
    this.abortCtl = null;
    this.histories = null;
    this.mailboxCache = null;
  }

  /** 'idle', or the current turn-state node. */
  turnState(): string {
    if (!this.live) return ((this.dormant as { value?: unknown } | null)?.value as string) ?? 'idle';
    const v = this.live.getSnapshot().value as string | { turn: string | Record<string, unknown> };
    if (typeof v === 'string') return v;
    const t = v.turn;
    return typeof t === 'string' ? t : Object.keys(t)[0]!;
  }

  /** An actor's bounds for its turn: its own, else the runtime's. */
  private boundsOf(actor: ActorDefinition) {
    return {
      maxModelCalls: actor.maxModelCalls ?? this.deps.limits.maxModelCallsPerTurn,
      maxRespondRetries: actor.maxRespondRetries ?? this.deps.limits.maxRespondRetries,
    };
  }

  /**
   * Between turns, a session whose TurnStateRegistry changed (a state registered later) moves
   * to the regenerated machine: its idle snapshot is restored into the new one.
   */
  private adoptCurrentMachine(): void {
    const next = this.deps.machine();
    if (next === this.machine || this.turnState() !== 'idle') return;
    const snapshot = this.live ? this.live.getPersistedSnapshot() : this.dormant;
    this.live?.stop();
    this.live = null;
    this.machine = next;
    this.wake(snapshot);
  }

  /** Send an event to the session's machine; a stopped host (shutdown, passivation) sends nothing. */
  private tell(event: SessionMachineEvent): void {
    if (!this.closed) this.actor.send(event);
  }

  /** The session machine's context, live or dormant. */
  private ctx(): SessionContext {
    return this.live ? this.live.getSnapshot().context : (this.dormant as { context: SessionContext }).context;
  }



  get busy(): boolean {
    return this.turn !== null || this.queue.length > 0;
  }

  /** Someone is subscribed to the live stream (a watched session is not passivated). */
  get watched(): boolean {
    return this.subject.observed;
  }

  /* ------------------------------------------------------------ persistence + publishing */

  private event<T extends SessionEventBody>(turnId: string, body: T): SessionEvent {
    return { seq: 0, sessionId: this.id, turnId, at: this.deps.clock.iso(), ...body } as SessionEvent;
  }

  private persisted(): PersistedSession {
    const t = this.turn;
    const host: HostState = {
      queue: this.queue.map((q) => ({ turnId: q.turnId, message: q.message, opts: q.opts })),
    };
    if (t) {
      // Copies: a store may keep the object (the memory store does) while the turn goes on.
      host.turn = { turnId: t.turnId, input: t.input, opts: t.opts, parts: t.parts.slice(), usage: t.usage, pending: [...t.pending.values()] };
      if (t.joined.length) host.turn.joined = t.joined.slice();
    }
    return { machine: this.live ? this.live.getPersistedSnapshot() : this.dormant, host: host as unknown as Record<string, unknown> };
  }

  /**
   * Commit one step, then publish its events. Seqs are assigned here, so they are strictly
   * increasing with no gaps. Synchronous for synchronous stores.
   */
  private commit(step: StepCommit, withSnapshot = false): void | Promise<void> {
    const events = step.events;
    if (withSnapshot) step.snapshot = this.persisted();
    if (this.groupCommit) return this.group(step);
    const run = () => {
      // Seqs are assigned when the step is written, and taken back if the write fails.
      const before = this.seq;
      if (events) for (const e of events) e.seq = ++this.seq;
      const landed = () => {
        if (step.mailbox && this.mailboxCache) for (const m of step.mailbox) this.mailboxCache.push(m);
        this.fanout(events);
      };
      let r: unknown;
      try {
        r = this.deps.store.commit(this.id, step);
      } catch (err) {
        this.seq = before;
        throw err;
      }
      if (isPromise(r)) {
        return r.then(landed, (err) => {
          this.seq = before;
          throw err;
        });
      }
      landed();
      return undefined;
    };
    if (this.commitChain) {
      const next = this.commitChain.then(run);
      this.commitChain = next.then(() => undefined);
      return next;
    }
    const r = run();
    if (r) {
      this.commitChain = r.then(() => {
        if (this.commitChain === chain) this.commitChain = null;
      });
      const chain = this.commitChain;
      return r;
    }
  }

  /** Group commit: assign seqs and keep the caches now; the write and the publication come later. */
  private group(step: StepCommit): void {
    this.groupCommit!.throwIfFailed();
    const events = step.events;
    const firstSeq = this.seq;
    if (events) for (const e of events) e.seq = ++this.seq;
    this.groupCommit!.add(step, firstSeq);
    if (step.mailbox && this.mailboxCache) for (const m of step.mailbox) this.mailboxCache.push(m);
  }

  /** Write whatever group commit holds for this session now. */
  persistNow(): void {
    this.barrier();
  }

  /**
   * A new session under group commit: its record is written with its first commit, at the
   * latest at the end of this event-loop turn (no transaction of its own).
   */
  writeWithFirstCommit(): void {
    this.groupCommit!.add({ session: this.record }, this.seq);
  }

  /** Resolves once what is buffered now has been written (at once when nothing is, or without group commit). */
  private durable(): Promise<void> | void {
    return this.groupCommit?.durable();
  }

  /** Group commit's barrier: write what is buffered now (no-op for other stores). */
  private barrier(): void {
    this.groupCommit?.flush();
  }

  private fanout(events: SessionEvent[] | undefined): void {
    if (!events || !this.subject.observed) return;
    for (const e of events) this.subject.next(e);
  }

  private async mailboxNow(): Promise<MailboxEntry[]> {
    if (!this.mailboxCache) {
      // The store must hold what group commit has buffered before it is read back.
      this.barrier();
      const m = await this.deps.store.readMailbox(this.id);
      if (!this.mailboxCache) this.mailboxCache = m.slice();
    }
    return this.mailboxCache;
  }

  private historyFor(actor: string): HistoryView {
    this.histories ??= new Map();
    let h = this.histories.get(actor);
    if (!h) {
      h = createHistory(actor);
      this.histories.set(actor, h);
    }
    return h;
  }

  /* ------------------------------------------------------------ SessionHandle */

  events(afterSeq = 0): Observable<SessionEvent> {
    return new Observable<SessionEvent>((sub) => {
      let last = afterSeq;
      let replaying = true;
      const buffered: SessionEvent[] = [];
      const live = this.subject.subscribe({
        next: (e) => {
          if (replaying) buffered.push(e);
          else if (e.seq > last) {
            last = e.seq;
            sub.next(e);
          }
        },
        complete: () => sub.complete(),
      });
      const drain = (events: SessionEvent[]) => {
        for (const e of events) {
          if (e.seq > last) {
            last = e.seq;
            sub.next(e);
          }
        }
        replaying = false;
        for (const e of buffered) {
          if (e.seq > last) {
            last = e.seq;
            sub.next(e);
          }
        }
        buffered.length = 0;
      };
      if (afterSeq >= this.seq) drain([]);
      else {
        const r = this.deps.store.readEvents(this.id, afterSeq);
        if (isPromise(r)) r.then(drain, (err) => sub.error(err));
        else drain(r);
      }
      return () => live.unsubscribe();
    });
  }

  async snapshot(): Promise<SessionSnapshot> {
    const state = this.turnState();
    const t = this.turn;
    const pendingApprovals = t
      ? ((await this.deps.store.listApprovals({ sessionId: this.id, status: 'pending' })) as ApprovalRecord[])
      : [];
    const snap: SessionSnapshot = {
      id: this.id,
      actor: this.record.actor,
      state,
      lastSeq: this.seq,
      pendingApprovals,
      pendingClientCalls: t
        ? [...t.pending.values()].filter((p) => p.kind === 'client').map((p) => ({ callId: p.callId, tool: p.tool, args: p.args }))
        : [],
      queued: this.queue.length,
    };
    if (this.record.tenantId !== undefined) snap.tenantId = this.record.tenantId;
    if (t) snap.turnId = t.turnId;
    const acting = this.ctx().actor;
    if (t && acting) snap.actingActor = acting;
    return snap;
  }

  async mailbox(): Promise<MailboxEntry[]> {
    return (await this.mailboxNow()).slice();
  }

  async executions(): Promise<ExecutionRecord[]> {
    return await this.deps.store.readExecutions(this.id);
  }

  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((res) => this.idleWaiters.push(res));
  }

  async send(message: InboundMessage | string, opts: SendOptions = {}): Promise<TurnRef> {
    if (this.closed) throw new TurnstateError('runtime.closed', 'the runtime is closed; the message was not accepted');
    const msg: InboundMessage = typeof message === 'string' ? { text: message } : { ...message };
    if (typeof msg.text !== 'string' || msg.text.trim() === '') {
      throw new TurnstateError('message.invalid', 'a message needs non-empty `text`');
    }
    if (opts.clientTools?.length) {
      // Refused before anything is accepted: the model cannot be given two tools of one name.
      const own = this.deps.registries.actors.get(this.record.actor)?.tools ?? [];
      const seen = new Set<string>();
      for (const c of opts.clientTools) {
        const name = c?.name;
        if (typeof name !== 'string' || name === '') throw new TurnstateError('message.invalid_client_tool', 'every client tool needs a non-empty `name`');
        if (seen.has(name) || own.includes(name) || name === RESPOND_TOOL_NAME || isCompatTool(name)) {
          throw new TurnstateError('message.invalid_client_tool', `client tool "${name}" ${seen.has(name) ? 'is declared twice' : `has the name of a tool of actor "${this.record.actor}"`}; tool names must be unique`);
        }
        seen.add(name);
      }
    }
    if (!msg.principal && opts.principal) msg.principal = opts.principal;
    this.deps.onActivity(this);
    const t = this.turn;
    if (t || this.queue.length > 0) {
      const policy = this.record.doubleTexting;
      if (policy === 'reject') {
        throw new TurnstateError(
          'session.busy',
          `session ${this.id} is running turn ${t?.turnId ?? this.queue[0]?.turnId}; its double-texting policy is "reject", so this message was not accepted — send it again after the turn settles`,
          { details: { sessionId: this.id, turnId: t?.turnId } },
        );
      }
      if (policy === 'interrupt' && t && !t.pending.size && this.turnState() === 'awaiting' && !t.ending) {
        // Flag before awaiting: the running call must not finish unaware of the joined message.
        // The message is durable at once (in the host state); it enters the mailbox when the
        // next model call is built, after whatever the cut response had already applied.
        t.joined.push(msg);
        t.interrupted = true;
        t.abort?.abort();
        // The cut response's tool calls, running or not yet started, are cancelled.
        (t.toolAbort ??= this.toolCtl = toolAbortController(this.toolCtl)).abort();
        await this.commit({}, true);
        this.barrier();
        return { turnId: t.turnId, queued: false, settled: t.promise };
      }
      const d = deferred<TurnOutcome>();
      const q: QueuedMessage = { turnId: this.deps.newId('turn'), message: msg, opts, ...d };
      this.queue.push(q);
      await this.commit({}, true);
      this.barrier();
      return { turnId: q.turnId, queued: true, settled: q.promise };
    }
    const d = deferred<TurnOutcome>();
    const turnId = this.deps.newId('turn');
    this.startTurn(turnId, msg, opts, d);
    // Accepted means durable: with group commit, wait for the write that holds turn.started
    // (the first barrier of the turn, or the end of this event-loop turn) instead of adding one.
    await this.durable();
    return { turnId, queued: false, settled: d.promise };
  }

  private startTurn(
    turnId: string,
    input: InboundMessage,
    opts: SendOptions,
    d: { promise: Promise<TurnOutcome>; resolve: (o: TurnOutcome) => void },
  ): void {
    this.turn = {
      turnId,
      input,
      opts,
      parts: [],
      usage: ZERO,
      pending: new Map(),
      joined: [],
      abort: null,
      interrupted: false,
      running: false,
      resolve: d.resolve,
      promise: d.promise,
    };
    this.adoptCurrentMachine();
    const entry = this.deps.registries.actors.get(this.record.actor);
    this.tell(entry ? { type: 'START', turnId, limits: this.boundsOf(entry) } : { type: 'START', turnId });
    this.published = this.turnState();
    const at = this.deps.clock.iso();
    const r = this.commit(
      {
        events: [this.event(turnId, { type: 'turn.started', actor: this.record.actor, input })],
        mailbox: [{ kind: 'user', turnId, at, text: input.text, ...(input.principal ? { principal: input.principal } : {}) }],
      },
      true,
    );
    // With group commit the message is written with the rest of this event-loop turn, before
    // anything about it is published and before any side effect of the turn.
    if (r) void r.then(() => this.drive());
    else void this.drive();
  }

  async inject(injection: Injection): Promise<TurnRef | undefined> {
    const t = this.turn;
    switch (injection.kind) {
      case 'client-tool-result': {
        const p = t?.pending.get(injection.callId);
        if (!t || !p || p.kind !== 'client') {
          const waiting = t ? [...t.pending.values()].filter((x) => x.kind === 'client').map((x) => x.callId) : [];
          throw new TurnstateError(
            'injection.unknown_call',
            `no client-side tool call ${injection.callId} is pending in session ${this.id}` +
              (waiting.length ? `; pending: ${waiting.join(', ')}` : '; none is pending'),
            { details: { callId: injection.callId, pending: waiting } },
          );
        }
        t.pending.delete(p.callId);
        const at = this.deps.clock.iso();
        const actorName = this.ctx().actor ?? this.record.actor;
        await this.commit({
          events: [this.event(t.turnId, { type: 'tool.result', callId: p.callId, tool: p.tool, view: injection.content, isError: !!injection.isError })],
          mailbox: [{ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: p.callId, tool: p.tool, content: injection.content, isError: !!injection.isError }],
        });
        return this.maybeResume(t);
      }
      case 'peer-envelope':
      case 'resume': {
        const state = this.turnState();
        const def = this.deps.registries.turnStates.get(state);
        const resumeOn = injection.kind === 'peer-envelope' ? 'peer-envelope' : injection.resumeOn;
        if (!t || !def?.meta.holdsActor || def.meta.resumeOn !== resumeOn) {
          throw new TurnstateError('injection.not_waiting', `session ${this.id} is not waiting for "${resumeOn}" (state: ${state})`);
        }
        const at = this.deps.clock.iso();
        const actorName = this.ctx().actor ?? this.record.actor;
        const text = injection.kind === 'peer-envelope' ? JSON.stringify(injection.envelope) : JSON.stringify(injection.payload ?? null);
        await this.commit({ mailbox: [{ kind: 'user', turnId: t.turnId, at, text: `[${resumeOn}] ${text}` }] });
        void actorName;
        return this.resume(t, resumeOn);
      }
    }
  }

  async answerApproval(
    approvalId: string,
    answer: { approved: boolean; reason?: string },
    by: Principal,
    via: string,
  ): Promise<AnswerResult> {
    const record = await this.deps.store.getApproval(approvalId);
    if (!record || record.sessionId !== this.id) {
      return { ok: false, code: 'approval.not_found', message: `no approval ${approvalId} in session ${this.id}` };
    }
    if (record.status === 'pending' && !this.deps.canAnswerApproval(record, by)) {
      return { ok: false, code: 'approval.forbidden', message: `this principal may not answer approval ${approvalId}` };
    }
    const resolution = {
      decision: answer.approved ? ('approved' as const) : ('denied' as const),
      by,
      via,
      at: this.deps.clock.iso(),
      ...(answer.reason ? { reason: answer.reason } : {}),
    };
    const res = await this.deps.store.resolveApproval(approvalId, resolution);
    if (!res) return { ok: false, code: 'approval.not_found', message: `no approval ${approvalId} in session ${this.id}` };
    if (!res.changed) {
      const first = res.record.resolution;
      return {
        ok: false,
        code: 'approval.already_resolved',
        message: `approval ${approvalId} was already resolved: ${first?.decision ?? res.record.status}${first ? ` by ${first.by.userId ?? 'unknown'} via ${first.via} at ${first.at}` : ''}; this answer changed nothing`,
        record: res.record,
      };
    }
    this.deps.onActivity(this);
    await this.applyResolution(res.record);
    this.barrier();
    return { ok: true, record: res.record };
  }

  /** Run (or deny) a resolved approval's call and resume the turn when nothing else is pending. */
  private async applyResolution(record: ApprovalRecord): Promise<void> {
    const t = this.turn;
    const resolution = record.resolution!;
    await this.commit({
      events: [
        this.event(record.turnId, {
          type: 'approval.resolved',
          approvalId: record.approvalId,
          callId: record.callId,
          decision: resolution.decision,
          by: resolution.by,
          via: resolution.via,
          ...(resolution.reason ? { reason: resolution.reason } : {}),
        }),
      ],
    });
    if (!t || t.turnId !== record.turnId || !t.pending.has(record.callId)) return;
    t.pending.delete(record.callId);
    const actorName = record.actor;
    if (resolution.decision === 'approved') {
      const tool = this.deps.registries.tools.get(record.tool);
      if (tool) {
        await this.runTool(t, actorName, tool, { type: 'tool_use', id: record.callId, name: record.tool, input: record.args }, record, false);
      }
    } else {
      const content = resolution.reason ? `Tool call denied: ${resolution.reason}` : 'Tool call denied';
      await this.commit({
        events: [this.event(t.turnId, { type: 'tool.result', callId: record.callId, tool: record.tool, view: content, isError: true })],
        mailbox: [{ kind: 'tool_result', turnId: t.turnId, at: this.deps.clock.iso(), actor: actorName, callId: record.callId, tool: record.tool, content, isError: true }],
      });
    }
    await this.maybeResume(t);
  }

  private async maybeResume(t: ActiveTurn): Promise<TurnRef | undefined> {
    if (t.pending.size > 0) return { turnId: t.turnId, queued: false, settled: t.promise };
    const state = this.turnState();
    const def = this.deps.registries.turnStates.get(state);
    if (def?.meta.holdsActor && def.meta.resumeOn) return this.resume(t, def.meta.resumeOn);
    return { turnId: t.turnId, queued: false, settled: t.promise };
  }

  private async resume(t: ActiveTurn, resumeOn: string): Promise<TurnRef> {
    const d = deferred<TurnOutcome>();
    t.resolve = d.resolve;
    t.promise = d.promise;
    this.tell({ type: 'RESUME', resumeOn });
    await this.syncState(t, []);
    void this.drive();
    return { turnId: t.turnId, queued: false, settled: d.promise };
  }

  /* ------------------------------------------------------------ the turn loop */

  /** Publish turnState.changed for machine-driven changes (hand-offs, budgets, holds, resumes). */
  private syncState(t: ActiveTurn, events: SessionEvent[], actorOverride?: string): void | Promise<void> {
    const now = this.turnState();
    if (now !== this.published) {
      events.push(this.event(t.turnId, { type: 'turnState.changed', from: this.published, to: now, actor: actorOverride ?? this.ctx().actor ?? this.record.actor }));
      this.published = now;
      return this.commit({ events }, true);
    }
    if (events.length) return this.commit({ events });
  }

  private async drive(): Promise<void> {
    const t = this.turn;
    if (!t || t.running) return;
    t.running = true;
    try {
      for (;;) {
        if (this.closed) return;
        const state = this.turnState();
        const def = this.deps.registries.turnStates.get(state);
        if (!def) throw new TurnstateError('turn.unknown_state', `the session is in an unregistered state "${state}"`);
        if (def.meta.isTerminal) {
          await this.settle(t, state);
          return;
        }
        if (def.meta.holdsActor) {
          this.resolveStop(t, state);
          return;
        }
        this.tell({ type: 'CALL' });
        if (this.turnState() !== state) {
          await this.syncState(t, []);
          continue;
        }
        await this.step(t);
      }
    } catch (err) {
      await this.failInternal(t, err);
    } finally {
      t.running = false;
    }
  }

  private async failInternal(t: ActiveTurn, err: unknown): Promise<void> {
    // A host stopped mid-step (shutdown, passivation of a crashed session) records nothing more;
    // the unfinished turn resumes from the store on recover().
    if (this.closed) return;
    const code = err instanceof TurnstateError ? err.code : 'runtime.internal';
    const message = err instanceof Error ? err.message : String(err);
    try {
      if (this.turn !== t) return;
      const def = this.deps.registries.turnStates.get(this.turnState());
      if (!def?.meta.isTerminal) {
        this.tell({ type: 'FAIL', code, message });
        await this.syncState(t, []);
      }
      t.stop = 'error';
      t.error = { code, message };
      await this.settle(t, this.turnState());
    } catch (again) {
      // The store itself failed: nothing more can be recorded; release waiters.
      t.resolve({ turnId: t.turnId, finalizedBy: 'error', stop: 'error', parts: t.parts, usage: t.usage, error: { code, message } });
      this.turn = null;
      this.flushIdle();
      void again;
    }
  }

  /**
   * `part.retracted` for each respond() call whose part.delta events went out but that yields no
   * parts (`kept` are the calls that do): streaming subscribers drop its provisional text.
   */
  private retractions(
    t: ActiveTurn,
    streamed: ReadonlySet<string> | null,
    kept: readonly { block: ToolUseBlock }[],
    reason: 'rejected' | 'interrupted' | 'failed',
  ): SessionEvent[] {
    const out: SessionEvent[] = [];
    if (streamed === null) return out;
    for (const callId of streamed) {
      if (!kept.some((k) => k.block.id === callId)) out.push(this.event(t.turnId, { type: 'part.retracted', callId, reason }));
    }
    return out;
  }

  /** One model call and everything it leads to. */
  private async step(t: ActiveTurn): Promise<void> {
    const actorName = this.ctx().actor ?? this.record.actor;
    const actorDef = this.deps.registries.actors.get(actorName);
    if (!actorDef) throw new TurnstateError('actor.unknown', `no actor named "${actorName}" is registered`);
    const tools = this.deps.catalog.forActor(actorDef, t.opts);
    if (t.joined.length) {
      const at = this.deps.clock.iso();
      const joined = t.joined.map((m): MailboxEntry => ({ kind: 'user', turnId: t.turnId, at, text: m.text, ...(m.principal ? { principal: m.principal } : {}) }));
      t.joined = [];
      await this.commit({ mailbox: joined }, true);
    }
    const mailbox = await this.mailboxNow();
    const req = {
      sessionId: this.id,
      turnId: t.turnId,
      actor: actorName,
      system: tools.system,
      messages: this.historyFor(actorName).update(mailbox),
      tools: tools.modelTools as ModelTool[],
      toolChoice: actorDef.thinking ? ('auto' as const) : ('any' as const),
      ...(actorDef.model ? { model: actorDef.model } : {}),
      ...(actorDef.maxTokens ? { maxTokens: actorDef.maxTokens } : {}),
      ...(actorDef.thinking ? { thinking: actorDef.thinking } : {}),
    };
    const abort = !this.abortCtl || this.abortCtl.signal.aborted ? (this.abortCtl = new AbortController()) : this.abortCtl;
    t.abort = abort;
    t.interrupted = false;
    if (t.toolAbort?.signal.aborted) t.toolAbort = undefined;
    const compat = actorDef.compat === 'respond_to_user';
    const applied: { block: ToolUseBlock; result: RespondResult; content: string }[] = [];
    const toolUses: ToolUseBlock[] = [];
    let freeText = '';
    let stopReason: string = 'end_turn';
    let usage: Usage = ZERO;
    let content: ContentBlock[] = [];
    const respondBlocks = new Map<number, string>();
    const streams = new Map<number, { callId: string; parser: ReturnType<typeof createRespondStreamParser> }>();
    // respond() calls whose part.delta events went out: one that yields no parts is retracted.
    // Created at the first delta (a response that arrives whole allocates nothing).
    let streamed: Set<string> | null = null;
    // The calls a cut response already applied (non-terminal calls apply as their block completes).
    const appliedProgress = () => applied.filter((a) => a.result.ok && this.isProgress(a.result.call.turnState));
    // Parts earlier calls published (ack, thinking) reach subscribers before the next call starts.
    // Other buffered records (a tool's result) ride the next write: the next side effect's
    // barrier, the settlement, or the end of this event-loop turn.
    if (this.groupCommit?.holdsParts()) this.groupCommit.flush();
    try {
      for await (const ev of this.deps.model.stream(req, abort.signal) as AsyncIterable<ModelEvent>) {
        switch (ev.type) {
          case 'block.start':
            if (ev.block.type === 'tool_use' && ev.block.name === RESPOND_TOOL_NAME) respondBlocks.set(ev.index, ev.block.id);
            break;
          case 'input.delta': {
            // The incremental parser is created on the first chunk: a call that arrives whole costs nothing.
            let st = streams.get(ev.index);
            if (!st) {
              const callId = respondBlocks.get(ev.index);
              if (callId === undefined) break;
              st = {
                callId,
                parser: createRespondStreamParser((d) => {
                  if (!d.text && d.partType === undefined) return;
                  (streamed ??= new Set()).add(callId);
                  const body: SessionEventBody = d.partType === undefined
                    ? { type: 'part.delta', callId, index: d.index, text: d.text }
                    : { type: 'part.delta', callId, index: d.index, partType: d.partType, text: d.text };
                  void this.commit({ events: [this.event(t.turnId, body)] });
                }),
              };
              streams.set(ev.index, st);
            }
            st.parser.push(ev.partialJson);
            break;
          }
          case 'block.stop': {
            const b = ev.block;
            if (b.type === 'tool_use') {
              streams.get(ev.index)?.parser.end();
              if (b.name === RESPOND_TOOL_NAME || (compat && isCompatTool(b.name))) {
                let { result, content } = b.name === RESPOND_TOOL_NAME ? { result: this.parseRespond(b, actorDef), content: RESPOND_OK } : this.compatCall(t, b);
                if (result.ok && this.isProgress(result.call.turnState) && applied.some((a) => a.result.ok && !this.isProgress(a.result.call.turnState))) {
                  // Nothing may follow a call that ends or hands off the turn.
                  result = this.reject('respond:state-change:last-call', '/turnState', 'an earlier respond() call in this response ended or handed off the turn; it must be the last call of its response');
                }
                applied.push({ block: b, result, content });
                // Non-terminal calls apply at once (ack/thinking reach subscribers now); a call that
                // ends or hands off the turn applies when the response ends (it must be the last word).
                if (result.ok && this.isProgress(result.call.turnState)) await this.applyRespond(t, actorName, result, b.id);
              } else toolUses.push(b);
            } else if (b.type === 'thinking') {
              const part: Part = { text: b.thinking, metadata: { partType: 'reasoning-trace' } };
              t.parts.push(part);
              // Each thinking block is its own part: `<turnId>:thinking:<n>`, n counting the turn's
              // reasoning traces so far (t.parts survives a restart, so n does too).
              let n = 0;
              for (const p of t.parts) if (p.metadata.partType === 'reasoning-trace') n++;
              const callId = `${t.turnId}:thinking:${n}`;
              await this.commit({ events: [this.event(t.turnId, { type: 'part.received', callId, index: 0, part, turnState: this.published, actor: actorName })] });
            } else if (b.type === 'text') freeText += b.text;
            break;
          }
          case 'message.stop':
            stopReason = ev.stopReason;
            usage = ev.usage;
            content = ev.content;
            break;
          default:
            break;
        }
      }
    } catch (err) {
      t.abort = null;
      // Stopped mid-call (shutdown, deletion): record nothing more; recover() resumes the turn.
      if (this.closed) return;
      if (err instanceof ModelError && err.code === 'model.aborted' && t.interrupted) {
        // What the cut response already applied (its ack reached the user) is recorded, so the
        // model sees what the user saw; the rest of the response never happened.
        const kept = appliedProgress();
        const retracted = this.retractions(t, streamed, kept, 'interrupted');
        if (kept.length) {
          const at = this.deps.clock.iso();
          const entries: MailboxEntry[] = [{ kind: 'assistant', turnId: t.turnId, at, actor: actorName, content: kept.map((a) => a.block) }];
          for (const a of kept) entries.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: a.block.id, tool: a.block.name, content: a.content, isError: false });
          await this.commit({ mailbox: entries, ...(retracted.length ? { events: retracted } : {}) });
        } else if (retracted.length) await this.commit({ events: retracted });
        this.tell({ type: 'INTERRUPTED' });
        return;
      }
      const me = err instanceof ModelError ? err : new ModelError('model.unknown', err instanceof Error ? err.message : String(err), { cause: err });
      const retracted = this.retractions(t, streamed, appliedProgress(), 'failed');
      if (retracted.length) await this.commit({ events: retracted });
      await this.failWithPart(t, actorName, me.code, me.message, userFacingModelError(me), 'error');
      return;
    }
    t.abort = null;
    if (t.interrupted) {
      // A message joined after the call's last abort check: this response never saw it.
      const retracted = this.retractions(t, streamed, appliedProgress(), 'interrupted');
      if (retracted.length) await this.commit({ events: retracted });
      this.tell({ type: 'INTERRUPTED' });
      return;
    }
    t.usage = addUsage(t.usage, usage);

    // Deferred (state-changing) respond() calls: they must be the response's last word.
    const at = this.deps.clock.iso();
    const mailbox2: MailboxEntry[] = [{ kind: 'assistant', turnId: t.turnId, at, actor: actorName, content }];
    let rejected = 0;
    let stateChange: { result: Extract<RespondResult, { ok: true }>; block: ToolUseBlock } | undefined;
    for (const a of applied) {
      let r = a.result;
      if (r.ok && !this.isProgress(r.call.turnState)) {
        const to = r.call.turnState;
        const def = this.deps.registries.turnStates.get(to)!;
        if (toolUses.length > 0) {
          r = a.result = this.reject(
            'respond:state-change:last-call',
            '/turnState',
            `turnState "${to}" ${def.meta.handsOff ? 'hands the turn off' : 'ends the turn'}, so it must be the only call in its model response, but this response also calls ${toolUses.map((u) => u.name).join(', ')}. Call the tools with turnState "awaiting" first; respond with "${to}" after their results.`,
          );
        } else if (stateChange) {
          r = a.result = this.reject('respond:state-change:once', '/turnState', `only one respond() call per model response may change the turn state; "${stateChange.result.call.turnState}" came first`);
        } else stateChange = { result: r, block: a.block };
      }
      if (r.ok) mailbox2.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: a.block.id, tool: a.block.name, content: a.content, isError: false });
      else {
        rejected++;
        mailbox2.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: a.block.id, tool: a.block.name, content: r.message, isError: true });
      }
    }
    if (stopReason === 'max_tokens' || stopReason === 'model_context_window_exceeded' || stopReason === 'refusal') {
      // These calls are never dispatched; the history must still answer each tool_use or the next request is refused.
      for (const u of toolUses) {
        mailbox2.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: u.id, tool: u.name, content: `Not run: the response ended (${stopReason}) before ${u.name} could be called.`, isError: true });
      }
    }
    if (stateChange && this.deps.registries.turnStates.get(stateChange.result.call.turnState)?.meta.isTerminal) t.ending = true;
    const usageEvent = this.event(t.turnId, { type: 'model.usage', actor: actorName, usage, stopReason: stopReason as any });
    // Calls that will become parts: the accepted ones (a state change applies just below).
    const retracted = streamed ? this.retractions(t, streamed, applied.filter((a) => a.result.ok), 'rejected') : [];
    retracted.push(usageEvent);
    await this.commit({ events: retracted, mailbox: mailbox2 });

    if (stateChange) {
      await this.applyRespond(t, actorName, stateChange.result, stateChange.block.id);
      return; // the loop reads the new state
    }
    if (stopReason === 'max_tokens' || stopReason === 'model_context_window_exceeded' || stopReason === 'refusal') {
      const refusal = stopReason === 'refusal';
      await this.failWithPart(
        t,
        actorName,
        refusal ? 'model.refusal' : 'model.max_tokens',
        refusal ? 'the model declined to answer' : 'the response hit the token limit before it was complete',
        refusal ? 'The assistant declined to answer this request.' : 'The answer was cut off because it grew too long.',
        refusal ? 'refusal' : 'max_tokens',
      );
      return;
    }
    if (toolUses.length > 0) {
      this.tell({ type: 'MODEL_DONE', next: 'dispatch' });
      await this.dispatch(t, actorName, toolUses, tools);
      if (t.pending.size > 0) {
        this.tell({ type: 'HOLD', to: 'suspended' });
        await this.syncState(t, []);
      }
      // Otherwise the loop's next CALL (from `dispatching`) says the results are in.
      return;
    }
    if (rejected > 0) {
      this.tell({ type: 'MODEL_DONE', next: 'rejected' });
      if (this.turnState() === 'error') await this.failWithPart(t, actorName, 'turn.respond_retries', 'respond() was rejected too many times', 'Sorry, I could not put my answer together. Please try again.', 'error', true);
      return;
    }
    if (applied.length === 0 && compat && freeText.trim() !== '') {
      // Spec 003: without respond_to_user, the final text is what gets delivered (fallback).
      t.compat ??= createCompatTracker();
      t.compat.onAssistantText(freeText);
      const { result } = this.compatCall(t, { type: 'tool_use', id: `${t.turnId}:fallback`, name: 'mark_work_complete', input: {} });
      if (result.ok) {
        this.tell({ type: 'MODEL_DONE', next: 'call' });
        await this.applyRespond(t, actorName, result, `${t.turnId}:fallback`);
        return;
      }
    }
    if (applied.length === 0) {
      // Text outside respond() is never delivered: nudge, and after a bound, fail.
      this.tell({ type: 'MODEL_DONE', next: 'free-text' });
      if (this.turnState() === 'error') {
        await this.failWithPart(t, actorName, 'turn.free_text', 'the model kept writing text outside respond()', 'Sorry, I could not produce an answer. Please try again.', 'error', true);
        return;
      }
      await this.commit({
        mailbox: [
          {
            kind: 'nudge',
            turnId: t.turnId,
            at: this.deps.clock.iso(),
            actor: actorName,
            text: `Your last message${freeText ? ' contained text outside respond() and' : ''} was not delivered to anyone. Produce all output by calling the respond() tool.`,
          },
        ],
      });
      return;
    }
    this.tell({ type: 'MODEL_DONE', next: 'call' });
  }

  /** A respond_to_user / mark_work_complete call as a respond() result (spec 003 compatibility). */
  private compatCall(t: ActiveTurn, b: ToolUseBlock): { result: RespondResult; content: string } {
    const tracker = (t.compat ??= createCompatTracker());
    const r = tracker.onCall(b.name, b.input);
    if (!r.ok) return { result: { ok: false, violations: [{ rule: `compat:${b.name}`, path: '', message: r.message }], message: r.message }, content: r.message };
    const parts: Part[] = [];
    for (const e of r.events) if (e.type === 'part.received') parts.push(e.part);
    return { result: { ok: true, call: { parts, turnState: r.completed ? 'complete' : 'awaiting' }, events: [] }, content: r.content };
  }

  private isProgress(turnState: string): boolean {
    const def = this.deps.registries.turnStates.get(turnState);
    return !!def && !def.meta.isTerminal && !def.meta.handsOff && !def.meta.holdsActor;
  }

  private reject(rule: string, path: string, message: string): RespondResult {
    return { ok: false, violations: [{ rule, path, message }], message: `respond() was rejected:\n- ${path}: ${message}\nFix the call and call respond() again.` };
  }

  private parseRespond(b: ToolUseBlock, actorDef: ActorDefinition): RespondResult {
    if (b.inputError) {
      return this.reject('respond:json:invalid', '', `the arguments were not valid JSON (${b.inputError}); send the whole call again`);
    }
    const r = this.deps.parser.parse(b.input, { actor: actorDef.name, handoffs: actorDef.handoffs ?? [] });
    if (r.ok && r.call.turnState === 'suspended') {
      return this.reject(
        'respond:suspended:runtime-only',
        '/turnState',
        'the runtime enters "suspended" itself when a tool call needs approval; call the tool and declare "awaiting"',
      );
    }
    return r;
  }

  /** Apply a valid respond() call atomically: its parts, then its turn state. */
  private async applyRespond(t: ActiveTurn, actorName: string, result: Extract<RespondResult, { ok: true }>, callId: string): Promise<void> {
    const { call } = result;
    const events: SessionEvent[] = [];
    for (let i = 0; i < call.parts.length; i++) {
      const part = call.parts[i]!;
      t.parts.push(part);
      events.push(this.event(t.turnId, { type: 'part.received', callId, index: i, part, turnState: call.turnState, actor: actorName }));
    }
    const from = this.published;
    const def = this.deps.registries.turnStates.get(call.turnState)!;
    // Responding with the state the turn is already in changes nothing in the machine.
    if (call.turnState !== from || def.meta.handsOff) {
      const receiver = call.passTo ? this.deps.registries.actors.get(call.passTo) : undefined;
      this.tell(
        call.passTo
          ? { type: 'RESPOND', to: call.turnState, passTo: call.passTo, ...(receiver ? { limits: this.boundsOf(receiver) } : {}) }
          : { type: 'RESPOND', to: call.turnState },
      );
      if (!def.meta.handsOff && this.turnState() !== call.turnState) {
        // Never publish a state the machine did not enter (a state registered after this session started).
        throw new TurnstateError('turn.state_not_in_machine', `this session's machine has no "${call.turnState}" state (was it registered after the session was created?)`);
      }
    }
    if (def.meta.handsOff) {
      // passed: publish the hand-off as it happened, then where the machine went.
      const mailbox: MailboxEntry[] = [{ kind: 'handoff', turnId: t.turnId, at: this.deps.clock.iso(), from: actorName, to: call.passTo!, parts: call.parts }];
      events.push(this.event(t.turnId, { type: 'turnState.changed', from, to: call.turnState, actor: actorName }));
      this.published = call.turnState;
      const now = this.turnState();
      if (now !== 'error') events.push(this.event(t.turnId, { type: 'actor.passed', from: actorName, to: call.passTo! }));
      events.push(this.event(t.turnId, { type: 'turnState.changed', from: call.turnState, to: now, actor: this.ctx().actor ?? actorName }));
      this.published = now;
      await this.commit({ events, mailbox }, true);
      return;
    }
    events.push(this.event(t.turnId, { type: 'turnState.changed', from, to: call.turnState, actor: actorName }));
    this.published = this.turnState();
    // No snapshot here: a terminal state settles next (persisting it); recovery replays a
    // terminal turnState.changed found in the log without a turn.settled.
    await this.commit({ events });
  }

  /** Settle the turn as `error` with a user-facing error part. */
  private async failWithPart(
    t: ActiveTurn,
    actorName: string,
    code: string,
    message: string,
    userText: string,
    stop: 'error' | 'max_tokens' | 'refusal',
    alreadyInError = false,
  ): Promise<void> {
    if (!alreadyInError) this.tell({ type: 'FAIL', code, message });
    const part: Part = { text: userText, metadata: { partType: 'error', code } };
    t.parts.push(part);
    t.stop = stop;
    t.error = { code, message };
    const events: SessionEvent[] = [this.event(t.turnId, { type: 'part.received', callId: `${t.turnId}:runtime`, index: 0, part, turnState: 'error', actor: actorName })];
    await this.syncState(t, events);
  }

  /* ------------------------------------------------------------ tools */

  private async dispatch(t: ActiveTurn, actorName: string, uses: ToolUseBlock[], tools: ActorTools): Promise<void> {
    const runs: Promise<void>[] = [];
    const held: SessionEvent[] = [];
    const approvals: ApprovalRecord[] = [];
    const immediate: { events: SessionEvent[]; mailbox: MailboxEntry[] } = { events: [], mailbox: [] };
    const at = this.deps.clock.iso();
    const errorResult = (u: ToolUseBlock, content: string) => {
      immediate.events.push(this.event(t.turnId, { type: 'tool.result', callId: u.id, tool: u.name, view: content, isError: true }));
      immediate.mailbox.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: u.id, tool: u.name, content, isError: true });
    };
    for (const u of uses) {
      if (tools.client.has(u.name)) {
        t.pending.set(u.id, { callId: u.id, tool: u.name, args: u.input, kind: 'client' });
        held.push(this.event(t.turnId, { type: 'tool.called', callId: u.id, tool: u.name, args: u.input, actor: actorName, side: 'client' }));
        continue;
      }
      const tool = tools.byName.get(u.name);
      if (!tool) {
        const known = [...tools.byName.keys(), ...tools.client];
        errorResult(u, `Unknown tool "${u.name}". Tools available to you: ${known.length ? known.join(', ') : '(none)'}, and respond.`);
        continue;
      }
      if (u.inputError) {
        errorResult(u, `The arguments for ${u.name} were not valid JSON (${u.inputError}). Call it again with a complete JSON object.`);
        continue;
      }
      const violations = tool.validateInput(u.input);
      if (violations.length > 0) {
        errorResult(u, `Invalid arguments for ${u.name}:\n${violations.map((v) => `- ${v.path || '/'}: ${v.message}`).join('\n')}\nFix them and call ${u.name} again.`);
        continue;
      }
      const policy = await this.evaluatePolicy(t, actorName, tool, u);
      if (policy.decision === 'deny') {
        errorResult(u, policy.reason ? `Tool call denied: ${policy.reason}` : 'Tool call denied');
        continue;
      }
      if (policy.decision === 'ask') {
        const record = this.approvalRecord(t, actorName, u, policy, at);
        const approvalId = record.approvalId;
        approvals.push(record);
        t.pending.set(u.id, { callId: u.id, tool: u.name, args: u.input, kind: 'approval', approvalId });
        const part: Part = {
          data: { approvalId, tool: u.name, args: u.input as Record<string, unknown>, actor: actorName, turnId: t.turnId, reason: policy.reason ?? null },
          metadata: { partType: 'approval-request' },
        };
        t.parts.push(part);
        held.push(
          this.event(t.turnId, { type: 'tool.called', callId: u.id, tool: u.name, args: u.input, actor: actorName, side: 'server', scope: tool.scope, routing: tool.routing }),
          this.event(t.turnId, { type: 'approval.requested', approvalId, callId: u.id, tool: u.name, args: u.input, actor: actorName, policyResult: policy }),
          this.event(t.turnId, { type: 'part.received', callId: `${t.turnId}:${approvalId}`, index: 0, part, turnState: 'suspended', actor: actorName }),
        );
        continue;
      }
      const standing = policy.source === 'standing' ? this.standingRecord(t, actorName, u, policy) : undefined;
      runs.push(this.runTool(t, actorName, tool, u, standing, true));
    }
    if (immediate.events.length) await this.commit(immediate);
    if (runs.length) await Promise.all(runs);
    if (held.length || approvals.length) await this.commit({ events: held, approvals });
  }

  /** A pending approval record for a call its policy sent to a human. */
  private approvalRecord(t: ActiveTurn, actorName: string, u: ToolUseBlock, policy: PolicyResult, at: string): ApprovalRecord {
    return {
      approvalId: this.deps.newId('appr'),
      sessionId: this.id,
      turnId: t.turnId,
      callId: u.id,
      tool: u.name,
      args: u.input,
      actor: actorName,
      policyResult: policy,
      requestedAt: at,
      status: 'pending',
      ...(this.record.tenantId !== undefined ? { tenantId: this.record.tenantId } : {}),
    };
  }

  /** An approval a client's standing approval (AAP `trust: true`) gave, recorded as that client's decision. */
  private standingRecord(t: ActiveTurn, actorName: string, u: ToolUseBlock, policy: PolicyResult): ApprovalRecord {
    const at = this.deps.clock.iso();
    return {
      ...this.approvalRecord(t, actorName, u, policy, at),
      status: 'approved',
      resolution: { decision: 'approved', by: t.opts.principal ?? {}, via: 'standing-approval', at, reason: 'standing approval (trust) given by the client' },
    };
  }

  private async evaluatePolicy(t: ActiveTurn, actorName: string, tool: RegisteredTool, u: ToolUseBlock): Promise<PolicyResult> {
    if (tool.approval.kind === 'none') return { decision: 'approve', source: 'none' };
    if (t.opts.standingApprovals?.includes(tool.name) && tool.approval.allowStandingApproval) {
      return { decision: 'approve', source: 'standing' };
    }
    const principal = t.opts.principal ?? t.input.principal ?? {};
    const ctx = {
      actor: actorName,
      session: { id: this.id, ...(this.record.tenantId !== undefined ? { tenantId: this.record.tenantId } : {}) },
      turn: { id: t.turnId },
      user: { ...(principal.attributes ?? {}), ...(principal.userId ? { id: principal.userId } : {}) },
      tenant: principal.tenantId !== undefined ? { id: principal.tenantId } : this.record.tenantId !== undefined ? { id: this.record.tenantId } : {},
    };
    try {
      return await tool.approval.evaluate(u.input, ctx);
    } catch (err) {
      return { decision: 'ask', source: 'policy-error', reason: err instanceof Error ? err.message : String(err) };
    }
  }

  /**
   * Run one tool call: `tool.called` is durable before the handler runs, so a restart never runs
   * it again (at most once); its result, mailbox records and execution record commit together.
   */
  private async runTool(
    t: ActiveTurn,
    actorName: string,
    tool: RegisteredTool,
    u: ToolUseBlock,
    approval: ApprovalRecord | undefined,
    announce: boolean,
  ): Promise<void> {
    if (announce) {
      await this.commit({
        events: [this.event(t.turnId, { type: 'tool.called', callId: u.id, tool: u.name, args: u.input, actor: actorName, side: 'server', scope: tool.scope, routing: tool.routing })],
        ...(approval ? { approvals: [approval] } : {}),
      });
    }
    const principal = t.opts.principal ?? t.input.principal;
    const ctx = {
      actorName,
      sessionId: this.id,
      turnId: t.turnId,
      callId: u.id,
      signal: (t.toolAbort ??= this.toolCtl = toolAbortController(this.toolCtl)).signal,
      ...(principal?.userId !== undefined ? { userId: principal.userId } : {}),
      ...(principal?.personId !== undefined ? { personId: principal.personId } : {}),
      ...((principal?.tenantId ?? this.record.tenantId) !== undefined ? { tenantId: (principal?.tenantId ?? this.record.tenantId)! } : {}),
      ...(approval?.resolution
        ? {
            approvalDecision: {
              approvalId: approval.approvalId,
              decision: approval.resolution.decision,
              by: approval.resolution.by,
              via: approval.resolution.via,
              ...(approval.resolution.reason ? { reason: approval.resolution.reason } : {}),
            },
          }
        : {}),
    };
    // tool.called (or the approval that allows the call) is durable before the side effect.
    this.barrier();
    const d = await this.deps.router.dispatchTool(tool, u.input, ctx);
    // Stopped while the tool ran (its signal aborted): record nothing; recover() resumes the turn.
    if (this.closed) return;
    if (approval) d.execution.approvalId = approval.approvalId;
    const at = this.deps.clock.iso();
    const mailbox: MailboxEntry[] = [{ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: u.id, tool: u.name, content: d.llmContent, isError: d.isError }];
    if (d.data !== undefined && !d.isError) mailbox.push({ kind: 'data', turnId: t.turnId, at, actor: actorName, callId: u.id, tool: u.name, data: d.data });
    await this.commit({
      events: [this.event(t.turnId, { type: 'tool.result', callId: u.id, tool: u.name, view: d.uiView, isError: d.isError })],
      mailbox,
      executions: d.executions,
    });
  }

  /* ------------------------------------------------------------ stopping and settling */

  /** The turn stops to wait (suspended for an approval or a client tool, or another held state). */
  private resolveStop(t: ActiveTurn, state: string): void {
    this.barrier();
    t.resolve({ turnId: t.turnId, finalizedBy: state, parts: t.parts.slice(), usage: t.usage });
  }

  private async settle(t: ActiveTurn, state: string): Promise<void> {
    const def = this.deps.registries.turnStates.get(state)!;
    const events: SessionEvent[] = [];
    const producedAt = this.deps.clock.iso();
    let envelope;
    if (def.meta.emitsEnvelope) {
      const mailbox = await this.mailboxNow();
      let llmContext: Part | undefined;
      if (t.opts.consumesLlmContext && this.deps.produceLlmContext && !t.parts.some((p) => p.metadata.partType === 'llm-context')) {
        try {
          const r = await this.deps.produceLlmContext(this.deps.contextModel, {
            sessionId: this.id,
            turnId: t.turnId,
            actor: this.ctx().actor ?? this.record.actor,
            parts: t.parts,
            data: collectData(mailbox, t.turnId).map((d) => d.data),
            signal: new AbortController().signal,
          });
          llmContext = r.part;
          t.usage = addUsage(t.usage, r.usage);
          t.parts.push(llmContext);
          // The translation is a model call of the turn: turn.settled.usage stays the sum of model.usage.
          events.push(this.event(t.turnId, { type: 'model.usage', actor: this.ctx().actor ?? this.record.actor, usage: r.usage }));
          events.push(this.event(t.turnId, { type: 'part.received', callId: `${t.turnId}:llm-context`, index: 0, part: llmContext, turnState: state, actor: this.ctx().actor ?? this.record.actor }));
        } catch {
          // llm-context is an enrichment: a failed translation leaves it out, never fails the turn.
        }
      }
      envelope = assembleEnvelope({
        partTypes: this.deps.registries.partTypes,
        parts: llmContext ? t.parts.slice(0, -1) : t.parts,
        mailbox,
        sessionId: this.id,
        turnId: t.turnId,
        producedAt,
        finalizedBy: state,
        ...(llmContext ? { llmContext } : {}),
      });
      events.push(this.event(t.turnId, { type: 'envelope.settled', envelope }));
    }
    const ctxErr = this.ctx().error;
    const error = t.error ?? (state === 'error' && ctxErr ? ctxErr : undefined);
    if (state === 'error' && !t.parts.some((p) => p.metadata.partType === 'error')) {
      // A budget or internal failure: the user still gets an error part.
      const part: Part = { text: 'Sorry, something went wrong and I could not finish this request.', metadata: { partType: 'error', ...(error ? { code: error.code } : {}) } };
      t.parts.push(part);
      events.unshift(this.event(t.turnId, { type: 'part.received', callId: `${t.turnId}:runtime`, index: 0, part, turnState: 'error', actor: this.ctx().actor ?? this.record.actor }));
    }
    const stop = t.stop ?? (state === 'error' && error ? 'error' : undefined);
    events.push(
      this.event(t.turnId, {
        type: 'turn.settled',
        finalizedBy: state,
        usage: t.usage,
        ...(stop ? { stop } : {}),
        ...(error ? { error } : {}),
      }),
    );
    // A message that joined too late for the model to see it is not lost: it becomes a turn.
    for (let i = t.joined.length - 1; i >= 0; i--) {
      const d = deferred<TurnOutcome>();
      this.queue.unshift({ turnId: this.deps.newId('turn'), message: t.joined[i]!, opts: t.opts, ...d });
    }
    t.joined = [];
    this.tell({ type: 'SETTLE' });
    this.published = this.turnState();
    this.turn = null;
    await this.commit({ events }, true);
    const outcome: TurnOutcome = { turnId: t.turnId, finalizedBy: state, parts: t.parts, usage: t.usage };
    if (envelope) outcome.envelope = envelope;
    if (t.compat?.userResponse !== undefined) outcome.userResponse = t.compat.userResponse;
    if (stop) outcome.stop = stop;
    if (error) outcome.error = error;
    this.barrier();
    t.resolve(outcome);
    this.next();
  }

  private next(): void {
    const q = this.queue.shift();
    if (q) this.startTurn(q.turnId, q.message, q.opts, q);
    else this.flushIdle();
  }

  private flushIdle(): void {
    if (this.busy) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
    this.deps.onActivity(this);
    this.sleep();
  }

  /* ------------------------------------------------------------ recovery */

  /**
   * Resume an unfinished turn after a restart: held turns wait for their answers; a turn that
   * was working calls the model again. A tool call whose `tool.called` was recorded without a
   * result is never run again (at most once): the model is told its outcome is unknown.
   */
  async recover(host: HostState | undefined): Promise<void> {
    const state = this.turnState();
    if (state === 'idle' && !host?.queue.length) return;
    if (host?.queue.length) {
      for (const q of host.queue) {
        const d = deferred<TurnOutcome>();
        this.queue.push({ ...q, ...d });
      }
    }
    if (state === 'idle' || !host?.turn) {
      if (state === 'idle') this.next();
      return;
    }
    const h = host.turn;
    const d = deferred<TurnOutcome>();
    const t: ActiveTurn = {
      turnId: h.turnId,
      input: h.input,
      opts: h.opts,
      parts: h.parts,
      usage: h.usage,
      pending: new Map(),
      joined: h.joined ?? [],
      abort: null,
      interrupted: false,
      running: false,
      resolve: d.resolve,
      promise: d.promise,
    };
    this.turn = t;
    const mailbox = await this.mailboxNow();
    const events = await this.deps.store.readEvents(this.id, 0);
    const called = new Map<string, SessionEvent>();
    const resulted = new Set<string>();
    for (const e of events) {
      if (e.turnId !== t.turnId) continue;
      if (e.type === 'tool.called') called.set(e.callId, e);
      else if (e.type === 'tool.result') resulted.add(e.callId);
    }
    for (const m of mailbox) if (m.turnId === t.turnId && m.kind === 'tool_result') resulted.add(m.callId);
    // A terminal respond() recorded after the last snapshot: settle where the log says the turn went.
    let lastChange: string | undefined;
    for (const e of events) if (e.turnId === t.turnId && e.type === 'turnState.changed') lastChange = e.to;
    if (lastChange && this.deps.registries.turnStates.get(lastChange)?.meta.isTerminal && this.turnState() === 'awaiting') {
      this.tell({ type: 'RESPOND', to: lastChange });
      this.published = this.turnState();
    }
    // Parts published after the last persisted snapshot belong to the turn too.
    const known = new Set(t.parts.map((p) => JSON.stringify(p)));
    for (const e of events) {
      if (e.turnId !== t.turnId || e.type !== 'part.received') continue;
      const key = JSON.stringify(e.part);
      if (!known.has(key)) {
        known.add(key);
        t.parts.push(e.part);
      }
    }
    const approvals = (await this.deps.store.listApprovals({ sessionId: this.id })).filter((a) => a.turnId === t.turnId);
    const actorName = this.ctx().actor ?? this.record.actor;
    const dangling: { id: string; tool: string; args: unknown }[] = [];
    for (const m of mailbox) {
      if (m.turnId !== t.turnId || m.kind !== 'assistant') continue;
      for (const b of m.content) if (b.type === 'tool_use' && b.name !== RESPOND_TOOL_NAME && !resulted.has(b.id)) dangling.push({ id: b.id, tool: b.name, args: b.input });
    }
    const unknownOutcome: MailboxEntry[] = [];
    const unknownEvents: SessionEvent[] = [];
    const toResolve: ApprovalRecord[] = [];
    for (const c of dangling) {
      const appr = approvals.find((a) => a.callId === c.id);
      if (appr) {
        if (appr.status === 'pending') t.pending.set(c.id, { callId: c.id, tool: c.tool, args: c.args, kind: 'approval', approvalId: appr.approvalId });
        else if (events.some((e) => e.type === 'approval.resolved' && e.approvalId === appr.approvalId)) {
          // approval.resolved commits before an approved call runs: it may have run, so never again.
          const reason = appr.resolution?.reason;
          const content = appr.status === 'denied'
            ? (reason ? `Tool call denied: ${reason}` : 'Tool call denied')
            : `The outcome of ${c.tool} is unknown: the runtime restarted while it was running, and it was not run again. Check its effect before calling it again.`;
          unknownEvents.push(this.event(t.turnId, { type: 'tool.result', callId: c.id, tool: c.tool, view: content, isError: true }));
          unknownOutcome.push({ kind: 'tool_result', turnId: t.turnId, at: this.deps.clock.iso(), actor: actorName, callId: c.id, tool: c.tool, content, isError: true });
        } else toResolve.push(appr);
        continue;
      }
      const client = h.pending.find((p) => p.callId === c.id && p.kind === 'client');
      if (client) {
        t.pending.set(c.id, client);
        continue;
      }
      if (called.has(c.id)) {
        const content = `The outcome of ${c.tool} is unknown: the runtime restarted while it was running, and it was not run again. Check its effect before calling it again.`;
        unknownEvents.push(this.event(t.turnId, { type: 'tool.result', callId: c.id, tool: c.tool, view: content, isError: true }));
        unknownOutcome.push({ kind: 'tool_result', turnId: t.turnId, at: this.deps.clock.iso(), actor: actorName, callId: c.id, tool: c.tool, content, isError: true });
      } else {
        // Never started: safe to dispatch now.
        const actorDef = this.deps.registries.actors.get(actorName);
        if (actorDef) {
          await this.dispatch(t, actorName, [{ type: 'tool_use', id: c.id, name: c.tool, input: c.args }], this.deps.catalog.forActor(actorDef, t.opts));
        }
      }
    }
    if (unknownOutcome.length) await this.commit({ events: unknownEvents, mailbox: unknownOutcome });
    for (const appr of toResolve) {
      t.pending.set(appr.callId, { callId: appr.callId, tool: appr.tool, args: appr.args, kind: 'approval', approvalId: appr.approvalId });
    }
    for (const appr of toResolve) await this.applyResolution(appr);
    // A state-changing respond() call whose response committed but whose parts and state did not
    // (it applies in the next step): apply it now; calling the model again would lose it.
    const lastResponse = mailbox.findLast((m) => m.turnId === t.turnId && m.kind === 'assistant');
    if (lastResponse?.kind === 'assistant' && t.pending.size === 0) {
      const def = this.deps.registries.actors.get(lastResponse.actor);
      for (const b of lastResponse.content) {
        if (!def || b.type !== 'tool_use' || b.name !== RESPOND_TOOL_NAME) continue;
        const ack = mailbox.find((m) => m.kind === 'tool_result' && m.callId === b.id);
        if (!ack || (ack.kind === 'tool_result' && ack.isError)) continue;
        if (events.some((e) => e.type === 'part.received' && e.callId === b.id)) continue;
        const r = this.parseRespond(b, def);
        if (r.ok && !this.isProgress(r.call.turnState)) await this.applyRespond(t, lastResponse.actor, r, b.id);
      }
    }
    const now = this.turnState();
    const def = this.deps.registries.turnStates.get(now);
    if (def?.meta.holdsActor) {
      if (t.pending.size === 0 && def.meta.resumeOn === 'approval-response') await this.resume(t, def.meta.resumeOn);
      else this.resolveStop(t, now);
      return;
    }
    if (t.pending.size > 0) {
      this.tell({ type: 'HOLD', to: 'suspended' });
      await this.syncState(t, []);
      this.resolveStop(t, 'suspended');
      return;
    }
    void this.drive();
  }

  /** Stop the live actor (passivation or shutdown). Events already committed stay in the store. */
  stop(): void {
    // What was committed is written before the host goes away (nothing accepted is lost).
    try {
      this.barrier();
    } catch {
      // The store refused it: recover() resumes from what it holds.
    }
    this.closed = true;
    this.turn?.abort?.abort();
    this.turn?.toolAbort?.abort();
    this.live?.stop();
    this.subject.complete();
    // Nothing more runs in this host: release whoever awaits a turn here (the store keeps it for recover()).
    const error = { code: 'session.stopped', message: `session ${this.id} was stopped (runtime closed or session deleted) before the turn settled` };
    const t = this.turn;
    if (t) t.resolve({ turnId: t.turnId, finalizedBy: this.turnState(), stop: 'interrupted', parts: t.parts.slice(), usage: t.usage, error });
    for (const q of this.queue) q.resolve({ turnId: q.turnId, finalizedBy: 'idle', stop: 'interrupted', parts: [], usage: ZERO, error });
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of waiters) f();
  }
}

export type { HostState, CreateSessionOptions };
