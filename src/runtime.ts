/**
 * The composition root: `createRuntime({ model, store, ... })` wires the registries, the
 * respond() parser, the router, the store and the model into session hosts, and gives the
 * public Runtime API. Which sessions are live, woken, created or deleted is the session
 * directory's (host/session-directory.ts).
 */
import type {
  ArtifactStore,
  CreateSessionOptions,
  RecoverFailure,
  Runtime,
  RuntimeLimits,
  RuntimeOptions,
  SessionHandle,
  SessionStore,
} from './api.js';
import { createActor } from 'xstate';
import { usePolicyEvaluators } from './approvals/policy.js';
import { createRegistries } from './create-registries.js';
import { agentCard } from './envelope/agent-card.js';
import { artifactPartCheck } from './envelope/artifacts.js';
import { produceLlmContext } from './envelope/llm-context.js';
import { REASONING_TRACES } from './envelope/reasoning.js';
import { surfacePartCheck } from './envelope/surface-check.js';
import { TurnstateError } from './errors.js';
import { checkAnswer } from './host/approval-answers.js';
import { createClock, createIdSource } from './host/clock.js';
import { HistoryCache } from './host/history-cache.js';
import { containInspector } from './host/inspector.js';
import { checkCreateSession, checkSessionFilter, runtimeLimits } from './host/input-checks.js';
import { checkRuntimeOptions } from './host/runtime-options.js';
import { runtimeClosed, SessionDirectory, unrestorable } from './host/session-directory.js';
import type { HostDeps, HostState } from './host/session-host.js';
import { createToolCatalog } from './host/tool-catalog.js';
import { sessionMachineLimits } from './limits.js';
import { createSessionMachine, type SessionMachine } from './machines/session.machine.js';
import { createRespondParser } from './respond/index.js';
import { EventRouter } from './router/router.js';
import { createMemoryArtifactStore } from './stores/artifacts-memory.js';
import { createMemoryStore } from './stores/memory.js';
import type { AnswerResult, ApprovalRecord, Principal, SessionRecord } from './types.js';

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

export function createRuntime(options: RuntimeOptions): TurnstateRuntime {
  checkRuntimeOptions(options);
  const reasoningTraces = options.reasoningTraces ?? 'keep';
  if (!REASONING_TRACES.includes(reasoningTraces)) {
    throw new TurnstateError('options.invalid', `reasoningTraces must be ${REASONING_TRACES.map((m) => `"${m}"`).join(', ')}, not ${JSON.stringify(reasoningTraces)}`);
  }
  const registries = options.registries ?? createRegistries();
  const store: SessionStore = options.store ?? createMemoryStore();
  const limits: RuntimeLimits = runtimeLimits(options.limits);
  const clock = createClock(options.now);
  const newId = options.newId ?? createIdSource();
  // The default store mints ids and `createdAt` from the runtime's own source and clock (an id of
  // the built-in source already has the artifact form); a store passed in keeps its own.
  const artifacts: ArtifactStore = options.artifacts ?? createMemoryArtifactStore({ now: clock.now, newId });
  // An id of the built-in source is 128 random bits: it names no stored session, so a session
  // created with one skips the store's existence check (a read per session on SQLite).
  const freshIds = options.newId === undefined;
  // The runtime's clock stamps execution records (`at`), as it stamps events; `durationMs` stays measured.
  const router = new EventRouter({ maxResultChars: limits.executionResultMaxChars, now: clock.now });
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

  const deps: HostDeps = {
    registries,
    store,
    model: options.model,
    contextModel: options.contextModel ?? options.model,
    router,
    parser: createRespondParser(registries, { partChecks: { 'a2ui-surface': surfacePartCheck, artifact: artifactPartCheck(artifacts) } }),
    artifacts,
    catalog: createToolCatalog(registries, limits.maxHandoffsPerTurn > 0),
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
    onWriteFailed: (h) => sessions.evict(h),
    historyCache: new HistoryCache(limits.historyCacheEntries),
    ...(options.inspect ? { inspect: containInspector(options.inspect) } : {}),
  };

  const sessions = new SessionDirectory(deps, artifacts, registries.partTypes);
  const whileOpen = <T>(f: () => T | Promise<T>): Promise<T> => sessions.whileOpen(f);
  const passivateIdle = (olderThanMs = 0): number => sessions.passivateIdle(clock.now() - olderThanMs);
  const passivateAfterMs = options.passivateAfterMs ?? 0;
  let sweeper: ReturnType<typeof setInterval> | undefined;
  if (passivateAfterMs > 0) {
    sweeper = setInterval(() => passivateIdle(passivateAfterMs), Math.max(10, Math.min(passivateAfterMs, 60_000)));
    sweeper.unref();
  }

  const runtime: TurnstateRuntime = {
    registries,
    store,
    router,
    artifacts,
    get liveSessions() {
      return sessions.liveCount;
    },
    get closed() {
      return sessions.closed;
    },
    passivateIdle: () => passivateIdle(0),

    agentCard: (actorName: string) => agentCard(registries, actorName),

    async createSession(opts: CreateSessionOptions): Promise<SessionHandle> {
      if (sessions.closed) throw runtimeClosed();
      checkCreateSession(opts);
      if (typeof opts.actor !== 'string' || !registries.actors.has(opts.actor)) {
        const known = registries.actors.list().map((a) => a.name);
        throw new TurnstateError(
          'actor.unknown',
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
      return sessions.create(record, opts.id !== undefined || !freshIds);
    },

    async session(id: string, opts?: { visibleTo?: Principal | undefined }) {
      if (sessions.closed) return undefined;
      const host = await sessions.activate(id, opts?.visibleTo);
      return host ? sessions.handleFor(host) : undefined;
    },

    listSessions: (filter) =>
      whileOpen(() => {
        checkSessionFilter(filter);
        // Sessions created in this event-loop turn are written before they are listed.
        if (store.groupCommit) sessions.persistAll();
        return store.listSessions(filter);
      }),

    deleteSession: (id: string) => sessions.delete(id),

    async answerApproval(approvalId, answer, by, via): Promise<AnswerResult> {
      if (sessions.closed) throw new TurnstateError('runtime.closed', 'the runtime is closed; the answer was not taken');
      checkAnswer(answer, by, via);
      const record = await whileOpen(() => store.getApproval(approvalId));
      if (!record) return { ok: false, code: 'approval.not_found', message: `no approval ${approvalId}` };
      const host = await whileOpen(() => sessions.activate(record.sessionId));
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
          if (sessions.peek(rec.id)) continue;
          // One session that cannot be restored leaves the others to resume: it is reported.
          try {
            const snap = await store.loadSnapshot(rec.id);
            const hs = snap?.host as HostState | undefined;
            if (!hs?.turn && !hs?.queue?.length && !(await store.readQueue(rec.id)).length) continue;
            const host = await sessions.activate(rec.id);
            if (host) resumed.push(rec.id);
          } catch (err) {
            if (sessions.closed || (err instanceof TurnstateError && err.code === 'store.closed')) throw err;
            const e = err instanceof TurnstateError && err.code === 'session.unrestorable' ? err : unrestorable(rec.id, err);
            failed.push({ sessionId: rec.id, code: e.code, message: e.message });
          }
        }
        return { resumed, failed };
      }),

    async close() {
      if (sessions.closed) return;
      sessions.close();
      if (sweeper) clearInterval(sweeper);
      router.close();
      await store.close();
      await artifacts.close?.();
      await releaseEvaluators();
    },
  };
  return runtime;
}
