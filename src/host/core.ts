/**
 * What every part of the session host shares: its dependencies (wired by runtime.ts), the
 * session's journal and live machine, and the turn in flight. Each host file takes this core and
 * does one job with it; the session facade (session-host.ts) owns it.
 */
import type { RuntimeLimits, SendOptions } from '../api.js';
import type { ArtifactStore, ModelPort, SessionRecord, SessionStore } from '../machines/ports.js';
import type { SessionMachine } from '../machines/session.machine.js';
import type { LiveSurfaceView, Registries } from '../registries/types.js';
import type { RespondParser } from '../respond/index.js';
import type { EventRouter } from '../router/router.js';
import type { ReasoningTraces } from '../envelope/reasoning.js';
import type { ApprovalRecord, Part, Principal, Usage } from '../types.js';
import type { Clock } from './clock.js';
import type { HistoryCache } from './history-cache.js';
import type { Inspector } from './inspector.js';
import type { Journal } from './journal.js';
import type { LiveMachine } from './live-machine.js';
import type { ToolCatalog } from './tool-catalog.js';
import type { ActiveTurn } from './turn.js';

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
  inspect?: Inspector;
  produceLlmContext?: (
    model: ModelPort,
    input: { sessionId: string; turnId: string; actor: string; parts: Part[]; data: unknown[]; signal: AbortSignal },
  ) => Promise<{ part: Part; usage: Usage }>;
  onActivity: (host: { lastActive: number }) => void;
  /**
   * The store refused a write and the turn ended without it: the host's memory is ahead of the
   * store, so the runtime replaces it (stopped; the next use restores the session as stored).
   */
  onWriteFailed?: (host: { readonly id: string; stop(): void }) => void;
  /** Where tools store artifacts (`ctx.artifacts`); none: handlers get no `ctx.artifacts`. */
  artifacts?: ArtifactStore;
  /** Mailboxes and histories of sleeping sessions (see history-cache.ts); none kept without it. */
  historyCache?: HistoryCache;
  /** What becomes of the model's thinking: kept, redacted or dropped (absent: kept). */
  reasoningTraces?: ReasoningTraces;
}

export interface HostCore {
  readonly id: string;
  readonly record: SessionRecord;
  readonly deps: HostDeps;
  readonly journal: Journal;
  readonly machine: LiveMachine;
  /** The turn in flight, if any. */
  readonly turn: ActiveTurn | null;
  /** Stopped (runtime closed, session deleted, passivated): nothing more is recorded. */
  readonly closed: boolean;
  /** The controller for the next model call (reused until one is aborted: they are costly to create). */
  modelAbort(): AbortController;
  /**
   * The signal the turn's tool handlers share: aborted when the turn is interrupted, the session
   * is deleted or the runtime closes.
   */
  toolSignal(t: ActiveTurn): AbortSignal;
}

/** The principal a turn acts for: the send's, else the message's. */
export function principalOf(t: { opts: SendOptions; input: { principal?: Principal } }): Principal | undefined {
  return t.opts.principal ?? t.input.principal;
}

/**
 * Who a respond() call's content checks run for (artifact references are tenant-scoped), and the
 * session's live surfaces as kept now (read them first with `journal.liveSurfaces()`: `needsSurfaces`).
 */
export function sessionOf(core: HostCore): { sessionId: string; tenantId?: string; surfaces?: LiveSurfaceView } {
  const s: { sessionId: string; tenantId?: string; surfaces?: LiveSurfaceView } = { sessionId: core.id };
  if (core.record.tenantId !== undefined) s.tenantId = core.record.tenantId;
  const surfaces = core.journal.surfaces;
  if (surfaces !== undefined) s.surfaces = surfaces;
  return s;
}

/** Whether respond() input (or a peer's parts) holds an a2ui-surface part, whose check reads the live surfaces. */
export function needsSurfaces(parts: unknown): boolean {
  return Array.isArray(parts) && parts.some((p) => p !== null && typeof p === 'object' && (p as { metadata?: { partType?: unknown } }).metadata?.partType === 'a2ui-surface');
}
