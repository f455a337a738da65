/**
 * The composition root: `createRuntime({ model, store, ... })` wires the registries, the
 * respond() parser, the router, the store and the model into session hosts. Sessions are
 * virtual actors: a session with no turn in flight may be passivated (its live actor stopped,
 * its state in the store) and is reactivated on its next use.
 */
import type { ArtifactStore, CreateSessionOptions, RecoverFailure, Runtime, RuntimeLimits, RuntimeOptions, SessionHandle, SessionStore } from './api.js';
import { TurnstateError } from './errors.js';
import { createClock, createIdSource } from './host/clock.js';
import { SessionHost, type HostDeps, type HostState } from './host/session-host.js';
import { createToolCatalog } from './host/tool-catalog.js';
import { HistoryCache } from './host/history-cache.js';
import { containInspector } from './host/inspector.js';
import { containSubscribers } from './host/journal.js';
import { checkAnswer } from './host/approval-answers.js';
import { checkCreateSession, checkSend, checkSessionFilter, runtimeLimits } from './host/input-checks.js';
import { checkRuntimeOptions } from './host/runtime-options.js';
import { createSessionMachine, type SessionMachine } from './machines/session.machine.js';
import { defer, from, switchMap } from 'rxjs';
import { createActor } from 'xstate';
import { createRegistries } from './create-registries.js';
import { createRespondParser } from './respond/index.js';
import { EventRouter } from './router/router.js';
import { createMemoryStore } from './stores/memory.js';
import type { AnswerResult, ApprovalRecord, Principal, SessionRecord } from './types.js';
import { produceLlmContext } from './envelope/llm-context.js';
import { usePolicyEvaluators } from './approvals/policy.js';
import { sessionMachineLimits } from './limits.js';
import { agentCard } from './envelope/agent-card.js';
import { normalizeConsumes } from './envelope/consumers.js';
import type { PartTypeRegistryApi } from './registries/types.js';
import { REASONING_TRACES } from './envelope/reasoning.js';
import { artifactPartCheck } from './envelope/artifacts.js';
import { surfacePartCheck } from './envelope/surface-check.js';
import { createMemoryArtifactStore } from './stores/artifacts-memory.js';

export interface TurnstateRuntime extends Runtime {
  readonly router: EventRouter;
  /** Where tools' artifacts are kept (`options.artifacts`, else in memory). */
  readonly artifacts: ArtifactStore;
  /** Sessions currently live in memory (not passivated). */
  readonly liveSessions: number;
  /** Passivate every idle session now (what the idle timer does). */
  passivateIdle(): number;
}

/** By default the session's tenant answers its approvals; an untenanted session's, untenanted principals (as the transports see sessions). */
function defaultCanAnswer(approval: ApprovalRecord, by: Principal): boolean {
  return approval.tenantId === by.tenantId;
}

/**
 * What callers hold: a handle that finds its session's live host on every call, so a handle kept
 * across passivation reactivates the session instead of going stale. Methods live on the
 * prototype: a handle costs one small object per session.
 */
class SessionRef implements SessionHandle {
  constructor(
    readonly id: string,
    readonly record: SessionRecord,
    private readonly live: (id: string) => Promise<SessionHost>,
    private readonly peek: (id: string) => SessionHost | undefined,
    private readonly partTypes: PartTypeRegistryApi,
  ) {}
  async send(m: Parameters<SessionHandle['send']>[0], o?: Parameters<SessionHandle['send']>[1]) {
    // Checked before anything is accepted; the turn persists the part type names, never a card.
    checkSend(m, o);
    const opts = normalizeConsumes(o, this.partTypes);
    return (this.peek(this.id) ?? (await this.live(this.id))).send(m, opts);
  }
  async inject(i: Parameters<SessionHandle['inject']>[0]) {
    return (await this.live(this.id)).inject(i);
  }
  async answerApproval(...a: Parameters<SessionHandle['answerApproval']>) {
    // Checked before the session is looked up (or woken); runtime.answerApproval checks the same.
    checkAnswer(a[1], a[2], a[3]);
    return (await this.live(this.id)).answerApproval(...a);
  }
  persistNow(): void {
    this.peek(this.id)?.persistNow();
  }
  async updateTurnTools(turnId: string, tools: Parameters<SessionHandle['updateTurnTools']>[1], metadata?: Record<string, unknown>) {
    checkSend(metadata === undefined ? undefined : { metadata }, tools);
    return (await this.live(this.id)).updateTurnTools(turnId, tools, metadata);
  }
  events(afterSeq?: number) {
    // The host is found when someone subscribes, not now: an observable kept across passivation
    // subscribes to the session as it is then (the live host, or one reactivated from the store).
    // A subscriber that throws is reported, never rethrown into the process (containSubscribers).
    return containSubscribers(
      this.id,
      defer(() => {
        const h = this.peek(this.id);
        return h ? h.events(afterSeq) : from(this.live(this.id)).pipe(switchMap((x) => x.events(afterSeq)));
      }),
    );
  }
  async snapshot() {
    return (await this.live(this.id)).snapshot();
  }
  async mailbox() {
    return (await this.live(this.id)).mailbox();
  }
  async executions() {
    return (await this.live(this.id)).executions();
  }
  async idle() {
    return this.peek(this.id)?.idle();
  }
}

/** A session whose stored state this runtime cannot restore, named, with the cause. */
function unrestorable(id: string, err: unknown): TurnstateError {
  return new TurnstateError('session.unrestorable', `session ${id} cannot be restored from the store: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
    details: { sessionId: id },
  });
}

/** The id is taken: a live or stored session, or one being created or deleted right now. */
const sessionExists = (id: string, cause?: unknown) => new TurnstateError('session.exists', `a session with id "${id}" already exists`, cause === undefined ? undefined : { cause });
const runtimeClosed = () => new TurnstateError('runtime.closed', 'the runtime is closed');

export function createRuntime(options: RuntimeOptions): TurnstateRuntime {
  checkRuntimeOptions(options);
  const reasoningTraces = options.reasoningTraces ?? 'keep';
  if (!REASONING_TRACES.includes(reasoningTraces)) {
    throw new TurnstateError('runtime.options', `reasoningTraces must be ${REASONING_TRACES.map((m) => `"${m}"`).join(', ')}, not ${JSON.stringify(reasoningTraces)}`);
  }
  const registries = options.registries ?? createRegistries();
  const store: SessionStore = options.store ?? createMemoryStore();
  const artifacts: ArtifactStore = options.artifacts ?? createMemoryArtifactStore();
  const limits: RuntimeLimits = runtimeLimits(options.limits);
  const clock = createClock(options.now);
  const newId = options.newId ?? createIdSource();
  // An id of the built-in source is 128 random bits: it names no stored session, so a session
  // created with one skips the store's existence check (a read per session on SQLite).
  const freshIds = options.newId === undefined;
  const router = new EventRouter({ maxResultChars: limits.executionResultMaxChars } as any);
  const hosts = new Map<string, SessionHost>();
  const loading = new Map<string, Promise<SessionHost | undefined>>();
  // Ids held from the call, before any await, by a createSession (another create of the id fails; a
  // wake or a delete waits for it) and by a deleteSession (nothing wakes it; another delete waits).
  const creating = new Map<string, Promise<unknown>>();
  const deleting = new Map<string, Promise<boolean>>();
  let closed = false;
  /** The store's errors as the runtime's: `store.closed` once closed is `runtime.closed` (as for every method after close()), `store.session_exists` is `session.exists`. */
  const asRuntime = (err: unknown) => {
    if (!(err instanceof TurnstateError)) return err;
    if (err.code === 'store.session_exists') return sessionExists(String(err.details?.sessionId), err);
    return closed && err.code === 'store.closed' ? runtimeClosed() : err;
  };
  const whileOpen = async <T>(f: () => T | Promise<T>): Promise<T> => {
    if (closed) throw runtimeClosed();
    try {
      return await f();
    } catch (err) {
      throw asRuntime(err);
    }
  };
  // The policy evaluation processes are shared by the runtimes of this process: the last to close ends them.
  const releaseEvaluators = usePolicyEvaluators();

  // The session machine is generated from the TurnStateRegistry; regenerated if it changes.
  let machine: SessionMachine | undefined;
  // Turn states are only ever added, so their count tells whether the registry changed (this
  // runs at every turn start: no string building).
  let machineStamp = -1;
  const getMachine = () => {
    const stamp = registries.turnStates.ids().length;
    if (!machine || stamp !== machineStamp) {
      machine = createSessionMachine(registries.turnStates);
      machineStamp = stamp;
    }
    return machine;
  };

  // The initial snapshot of the current machine, computed once; sessions differ only in context.entryActor.
  let initial: { machine: SessionMachine; snapshot: any } | undefined;
  const initialSnapshot = (entryActor: string) => {
    const m = getMachine();
    if (!initial || initial.machine !== m) {
      const a = createActor(m, {
        input: { entryActor: '', ...sessionMachineLimits(limits) },
      });
      initial = { machine: m, snapshot: a.getPersistedSnapshot() };
    }
    const s = initial.snapshot;
    return { ...s, context: { ...s.context, entryActor } };
  };

  const passivateAfterMs = options.passivateAfterMs ?? 0;
  let sweeper: ReturnType<typeof setInterval> | undefined;

  const deps: HostDeps = {
    registries,
    store,
    model: options.model,
    contextModel: options.contextModel ?? options.model,
    router,
    parser: createRespondParser(registries, { partChecks: { 'a2ui-surface': surfacePartCheck, artifact: artifactPartCheck(artifacts) } }),
    artifacts,
    catalog: createToolCatalog(registries),
    machine: getMachine,
    initialSnapshot,
    limits,
    clock,
    newId,
    canAnswerApproval: options.canAnswerApproval ?? defaultCanAnswer,
    produceLlmContext,
    reasoningTraces,
    onActivity: (h) => {
      h.lastActive = clock.now();
    },
    onWriteFailed: (h) => {
      if (hosts.get(h.id) !== h) return;
      h.stop();
      hosts.delete(h.id);
      putDormant(h.id);
    },
    historyCache: new HistoryCache(limits.historyCacheEntries),
    ...(options.inspect ? { inspect: containInspector(options.inspect) } : {}),
  };

  const passivateIdle = (olderThanMs = 0): number => {
    const cutoff = clock.now() - olderThanMs;
    let n = 0;
    for (const [id, h] of hosts) {
      if (!h.busy && !h.watched && h.lastActive <= cutoff && h.turnState() === 'idle') {
        h.stop();
        hosts.delete(id);
        putDormant(id);
        n++;
      }
    }
    return n;
  };

  if (passivateAfterMs > 0) {
    sweeper = setInterval(() => passivateIdle(passivateAfterMs), Math.max(10, Math.min(passivateAfterMs, 60_000)));
    sweeper.unref();
  }

  const activate = async (id: string): Promise<SessionHost | undefined> => {
    const live = hosts.get(id);
    if (live) return live;
    // Not woken while being deleted (session:delete:during-activation); live once created.
    if (deleting.has(id)) return undefined;
    const made = creating.get(id);
    if (made) return made.then(() => activate(id), () => activate(id));
    const pending = loading.get(id);
    if (pending) return pending;
    const p = (async () => {
      const record = await store.getSession(id);
      // Checked after every await: a delete that began meanwhile wins, and nothing is restored.
      if (!record || deleting.has(id) || closed) return undefined;
      let host: SessionHost | undefined;
      try {
        const [snapshot, lastSeq, queued] = await Promise.all([store.loadSnapshot(id), store.lastSeq(id), store.readQueue(id)]);
        if (deleting.has(id) || closed) return undefined;
        host = new SessionHost(deps, record, lastSeq, snapshot);
        hosts.set(id, host);
        const hostState = snapshot?.host as HostState | undefined;
        if (host.turnState() !== 'idle' || queued.length || hostState?.queue?.length) await host.recover(hostState, queued);
        // Deleted (or closed) while it recovered: the delete stops it; the caller gets nothing.
        if (deleting.has(id) || hosts.get(id) !== host) return undefined;
        return host;
      } catch (err) {
        // A session whose stored state this runtime cannot restore (a damaged row, a turn state
        // no longer registered) is left as stored, and the error says which session it is.
        if (host !== undefined && hosts.get(id) === host) {
          host.stop();
          hosts.delete(id);
        }
        if (err instanceof TurnstateError && err.code === 'store.closed') throw err;
        throw unrestorable(id, err);
      }
    })();
    loading.set(id, p);
    try {
      return await p;
    } finally {
      loading.delete(id);
    }
  };

  // One handle per session. A live session's handle is held here strongly (no weak reference on
  // the turn path: a WeakRef keeps its target through young-generation collections and a
  // FinalizationRegistry cell per session cost ~20 µs a turn in GC); a passivated session's is
  // held weakly while someone else holds it, and dead entries are swept as that map grows.
  const handles = new Map<string, SessionHandle>();
  const dormant = new Map<string, WeakRef<SessionHandle>>();
  let sweepAt = 1024;
  const putDormant = (id: string): void => {
    const h = handles.get(id);
    if (h === undefined) return;
    handles.delete(id);
    dormant.set(id, new WeakRef(h));
    if (dormant.size >= sweepAt) {
      for (const [k, ref] of dormant) if (ref.deref() === undefined) dormant.delete(k);
      sweepAt = Math.max(1024, dormant.size * 2);
    }
  };
  const live = async (id: string): Promise<SessionHost> => {
    const h = hosts.get(id) ?? (await whileOpen(() => activate(id)));
    if (h) return h;
    throw closed ? runtimeClosed() : new TurnstateError('session.not_found', `session ${id} no longer exists`);
  };
  const handleFor = (host: SessionHost): SessionHandle => {
    let handle = handles.get(host.id);
    if (handle !== undefined) return handle;
    handle = dormant.get(host.id)?.deref();
    dormant.delete(host.id);
    handle ??= new SessionRef(host.id, host.record, live, (id) => hosts.get(id), registries.partTypes);
    handles.set(host.id, handle);
    return handle;
  };

  /** Under group commit the record is written with the session's first commit (at the latest at the end of this event-loop turn). */
  const createWithFirstCommit = (record: SessionRecord): SessionHandle => {
    const host = new SessionHost(deps, record, 0);
    host.writeWithFirstCommit();
    hosts.set(record.id, host);
    return handleFor(host);
  };

  /** createSession once its id is taken (`creating`): the store's check, the write, the host. */
  const create = async (record: SessionRecord, mayBeStored: boolean): Promise<SessionHandle> => {
    const id = record.id;
    if (mayBeStored && (await store.getSession(id))) throw sessionExists(id);
    if (closed) throw runtimeClosed();
    if (store.groupCommit) return createWithFirstCommit(record);
    // The host first: a session whose host could not be made is not written.
    const host = new SessionHost(deps, record, 0);
    // (Refused with store.session_exists when another runtime on the store made it first: whileOpen says session.exists.)
    await store.createSession(record);
    if (closed) {
      host.stop();
      throw runtimeClosed();
    }
    hosts.set(id, host);
    return handleFor(host);
  };

  /** deleteSession, held in `deleting` from its call (it always awaits before it can end). */
  const remove = async (id: string): Promise<boolean> => {
    const drop = () => {
      hosts.get(id)?.stop();
      for (const m of [hosts, handles, dormant]) m.delete(id);
      deps.historyCache?.drop(id);
    };
    try {
      // A session being created or activated is deleted once it is live (else it would come back).
      await creating.get(id)?.catch(() => undefined);
      const waking = loading.get(id);
      if (waking) await waking.catch(() => undefined);
      if (!(hosts.get(id)?.record ?? (await store.getSession(id)))) return false;
      drop();
      // Its artifacts first: should that fail, the session is still there to delete again.
      await artifacts.deleteSession?.(id);
      await store.deleteSession(id);
      // Whatever got a host meanwhile goes too (activation refuses an id being deleted).
      drop();
      return true;
    } catch (err) {
      throw asRuntime(err);
    } finally {
      deleting.delete(id);
    }
  };

  const runtime: TurnstateRuntime = {
    registries,
    store,
    router,
    artifacts,
    get liveSessions() {
      return hosts.size;
    },
    passivateIdle: () => passivateIdle(0),

    agentCard: (actorName: string) => agentCard(registries, actorName),

    async createSession(opts: CreateSessionOptions): Promise<SessionHandle> {
      if (closed) throw runtimeClosed();
      checkCreateSession(opts);
      if (typeof opts.actor !== 'string' || !registries.actors.has(opts.actor)) {
        const known = registries.actors.list().map((a) => a.name);
        throw new TurnstateError(
          'session.unknown_actor',
          `cannot create a session for actor "${opts?.actor}": no such actor is registered (registered: ${known.join(', ') || 'none'})`,
        );
      }
      const policy = opts.doubleTexting ?? 'queue';
      if (policy !== 'queue' && policy !== 'interrupt' && policy !== 'reject') {
        throw new TurnstateError('session.invalid_policy', `doubleTexting must be "queue", "interrupt" or "reject", not "${String(policy)}"`);
      }
      const id = opts.id ?? newId('sess');
      const record: SessionRecord = {
        id,
        actor: opts.actor,
        createdAt: clock.iso(),
        doubleTexting: policy,
        ...(opts.tenantId !== undefined ? { tenantId: opts.tenantId } : {}),
        ...(opts.metadata ? { metadata: opts.metadata } : {}),
      };
      // Taken before the first await: of two creates of one id exactly one succeeds (under group commit the store cannot tell).
      if (hosts.has(id) || creating.has(id) || deleting.has(id)) throw sessionExists(id);
      const mayBeStored = opts.id !== undefined || !freshIds;
      // A fresh id names no session and no other call knows it yet: nothing to hold.
      if (!mayBeStored) return store.groupCommit ? createWithFirstCommit(record) : create(record, false);
      const made = whileOpen(() => create(record, true));
      creating.set(id, made);
      return made.finally(() => creating.delete(id));
    },

    async session(id: string) {
      if (closed) return undefined;
      const host = await activate(id);
      return host ? handleFor(host) : undefined;
    },

    listSessions: (filter) =>
      whileOpen(() => {
        checkSessionFilter(filter);
        // Sessions created in this event-loop turn are written before they are listed.
        if (store.groupCommit) for (const h of hosts.values()) h.persistNow();
        return store.listSessions(filter);
      }),

    deleteSession(id: string) {
      if (closed) return Promise.reject(runtimeClosed());
      // A second delete while one runs answers false once that one is done (or fails as it did).
      const running = deleting.get(id);
      if (running) return running.then(() => false);
      const p = remove(id);
      deleting.set(id, p);
      return p;
    },

    async answerApproval(approvalId, answer, by, via): Promise<AnswerResult> {
      if (closed) throw new TurnstateError('runtime.closed', 'the runtime is closed; the answer was not taken');
      checkAnswer(answer, by, via);
      const record = await whileOpen(() => store.getApproval(approvalId));
      if (!record) return { ok: false, code: 'approval.not_found', message: `no approval ${approvalId}` };
      const host = await whileOpen(() => activate(record.sessionId));
      if (!host) return { ok: false, code: 'approval.not_found', message: `the session of approval ${approvalId} no longer exists` };
      return host.answerApproval(approvalId, answer, by, via);
    },

    history: (sessionId, afterSeq = 0, limit) => whileOpen(() => store.readEvents(sessionId, afterSeq, limit)),
    approvals: (filter) => whileOpen(() => store.listApprovals(filter)),
    approval: (approvalId) => whileOpen(() => store.getApproval(approvalId)),

    mayAnswerApproval(approval, by) {
      return deps.canAnswerApproval(approval, by);
    },

    recover: () =>
      whileOpen(async () => {
        const resumed: string[] = [];
        const failed: RecoverFailure[] = [];
        for (const rec of await store.listSessions()) {
          if (hosts.has(rec.id)) continue;
          // One session that cannot be restored leaves the others to resume: it is reported.
          try {
            const snap = await store.loadSnapshot(rec.id);
            const hs = snap?.host as HostState | undefined;
            if (!hs?.turn && !hs?.queue?.length && !(await store.readQueue(rec.id)).length) continue;
            const host = await activate(rec.id);
            if (host) resumed.push(rec.id);
          } catch (err) {
            if (closed || (err instanceof TurnstateError && err.code === 'store.closed')) throw err;
            const e = err instanceof TurnstateError && err.code === 'session.unrestorable' ? err : unrestorable(rec.id, err);
            failed.push({ sessionId: rec.id, code: e.code, message: e.message });
          }
        }
        return { resumed, failed };
      }),

    async close() {
      if (closed) return;
      closed = true;
      if (sweeper) clearInterval(sweeper);
      // Let committed steps finish; running turns stay recorded and resume on recover().
      for (const h of hosts.values()) h.stop();
      hosts.clear();
      handles.clear();
      dormant.clear();
      router.close();
      await store.close();
      await artifacts.close?.();
      await releaseEvaluators();
    },
  };
  return runtime;
}
