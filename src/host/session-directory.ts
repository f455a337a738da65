/**
 * The runtime's sessions in memory: which are live (a SessionHost each), which are being woken,
 * created or deleted, and the one handle per session callers hold. Sessions are virtual actors:
 * a session with no turn in flight may be passivated (its live actor stopped, its state in the
 * store) and is woken from the store on its next use. Every race between a create, a wake and a
 * delete of one id is decided here: an id is held from the call, before any await, by a create
 * (another create of it fails; a wake or a delete waits for it) and by a delete (nothing wakes
 * it; another delete waits).
 */
import type { ArtifactStore, SessionHandle, SessionStore } from '../api.js';
import { TurnstateError } from '../errors.js';
import type { PartTypeRegistryApi } from '../registries/types.js';
import { sameTenant, type Principal, type SessionRecord } from '../types.js';
import type { LiveSubject } from './journal.js';
import { SessionHost, type HostDeps, type HostState } from './session-host.js';
import { SessionRef } from './session-ref.js';

/** A session whose stored state this runtime cannot restore, named, with the cause. */
export function unrestorable(id: string, err: unknown): TurnstateError {
  return new TurnstateError('session.unrestorable', `session ${id} cannot be restored from the store: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
    details: { sessionId: id },
  });
}

/** The id is taken: a live or stored session, or one being created or deleted right now. */
const sessionExists = (id: string, cause?: unknown) => new TurnstateError('session.exists', `a session with id "${id}" already exists`, cause === undefined ? undefined : { cause });
export const runtimeClosed = () => new TurnstateError('runtime.closed', 'the runtime is closed');

export class SessionDirectory {
  private readonly hosts = new Map<string, SessionHost>();
  private readonly loading = new Map<string, Promise<SessionHost | undefined>>();
  private readonly creating = new Map<string, Promise<unknown>>();
  private readonly deleting = new Map<string, Promise<boolean>>();
  // One handle per session. A live session's handle is held here strongly (no weak reference on
  // the turn path: a WeakRef keeps its target through young-generation collections and a
  // FinalizationRegistry cell per session cost ~20 µs a turn in GC); a passivated session's is
  // held weakly while someone else holds it, and dead entries are swept as that map grows.
  private readonly handles = new Map<string, SessionHandle>();
  private readonly dormant = new Map<string, WeakRef<SessionHandle>>();
  /**
   * The events() subscribers of a session whose host gave way after a failed write, until the
   * session is woken again: its new host adopts them, so a failed write never ends a subscription
   * (**store:failure:events-follow**). Completed when the session is deleted or the runtime closes;
   * dropped when the last of them unsubscribes (nobody is left to hand on).
   */
  private readonly followers = new Map<string, LiveSubject>();
  private sweepAt = 1024;
  private isClosed = false;
  private readonly store: SessionStore;

  constructor(
    private readonly deps: HostDeps,
    private readonly artifacts: ArtifactStore,
    private readonly partTypes: PartTypeRegistryApi,
  ) {
    this.store = deps.store;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Sessions live in memory (not passivated). */
  get liveCount(): number {
    return this.hosts.size;
  }

  /** The live host of `id`, if it has one (nothing is woken). */
  peek(id: string): SessionHost | undefined {
    return this.hosts.get(id);
  }

  /**
   * The live host of `id` if it can still write: a host whose write failed is ahead of the store
   * and gives way here, whichever call meets it first, so the next call wakes a fresh one from the
   * store instead of meeting the failed write's error again (**store:failure:host-replaced**).
   */
  private usable(id: string): SessionHost | undefined {
    const h = this.hosts.get(id);
    if (h === undefined || !h.journal.failed()) return h;
    this.evict(h);
    return undefined;
  }

  /** The store's errors as the runtime's: `store.closed` once closed is `runtime.closed` (as for every method after close()), `store.session_exists` is `session.exists`. */
  asRuntime(err: unknown): unknown {
    if (!(err instanceof TurnstateError)) return err;
    if (err.code === 'store.session_exists') return sessionExists(String(err.details?.sessionId), err);
    return this.isClosed && err.code === 'store.closed' ? runtimeClosed() : err;
  }

  /** `f`, refused once closed, its store errors as the runtime's. */
  async whileOpen<T>(f: () => T | Promise<T>): Promise<T> {
    if (this.isClosed) throw runtimeClosed();
    try {
      return await f();
    } catch (err) {
      throw this.asRuntime(err);
    }
  }

  /** Stops every idle, unwatched session last active at or before `cutoff` (epoch ms); how many. */
  passivateIdle(cutoff: number): number {
    let n = 0;
    for (const [id, h] of this.hosts) {
      if (!h.busy && !h.watched && h.lastActive <= cutoff && h.turnState() === 'idle') {
        h.stop();
        this.hosts.delete(id);
        this.putDormant(id);
        n++;
      }
    }
    return n;
  }

  /** A host whose commit failed leaves memory (its session is woken from the store on next use); its subscribers wait for that. */
  evict(h: { readonly id: string }): void {
    const host = this.hosts.get(h.id);
    if (host !== h || host === undefined) return;
    if (this.parkFollowers(host)) {
      // A session whose first write failed was never stored: no host will ever adopt them.
      void Promise.resolve()
        .then(() => this.store.getSession(host.id))
        .then((stored) => {
          if (stored === undefined && !this.hosts.has(host.id)) this.endFollowers(host.id);
        }, () => undefined);
    }
    const cause = host.journal.failure();
    host.stop({
      code: 'store.write_failed',
      message: `a write of session ${host.id} failed${cause instanceof Error ? ` (${cause.message})` : ''}; its turn was not finished here and goes on from what the store holds when the session is next used`,
    });
    this.hosts.delete(host.id);
    this.putDormant(host.id);
  }

  /** The live host of `id`, woken (and recovered) from the store if need be; undefined if there is no such session. */
  async activate(id: string, visibleTo?: Principal): Promise<SessionHost | undefined> {
    const live = this.usable(id);
    if (live) return visibleTo === undefined || sameTenant(visibleTo, live.record.tenantId) ? live : undefined;
    if (visibleTo !== undefined) {
      // Live once created, as for any caller: a create under way is waited for first.
      const made = this.creating.get(id);
      if (made) {
        await made.catch(() => undefined);
        return this.activate(id, visibleTo);
      }
      // Another tenant's session is not woken for the asking: its stored record decides first.
      const record = await this.store.getSession(id);
      if (record === undefined || !sameTenant(visibleTo, record.tenantId)) return undefined;
      return this.activate(id);
    }
    // Not woken while being deleted (session:delete:during-activation); live once created.
    if (this.deleting.has(id)) return undefined;
    const made = this.creating.get(id);
    if (made) return made.then(() => this.activate(id), () => this.activate(id));
    const pending = this.loading.get(id);
    if (pending) return pending;
    const p = this.wake(id);
    this.loading.set(id, p);
    try {
      return await p;
    } finally {
      this.loading.delete(id);
    }
  }

  private async wake(id: string): Promise<SessionHost | undefined> {
    const store = this.store;
    const record = await store.getSession(id);
    // Checked after every await: a delete that began meanwhile wins, and nothing is restored.
    if (!record || this.deleting.has(id) || this.isClosed) {
      if (!record) this.endFollowers(id);
      return undefined;
    }
    let host: SessionHost | undefined;
    try {
      const [snapshot, lastSeq, queued] = await Promise.all([store.loadSnapshot(id), store.lastSeq(id), store.readQueue(id)]);
      if (this.deleting.has(id) || this.isClosed) return undefined;
      host = new SessionHost(this.deps, record, lastSeq, snapshot);
      const following = this.followers.get(id);
      if (following) {
        this.followers.delete(id);
        host.journal.adopt(following);
      }
      this.hosts.set(id, host);
      const hostState = snapshot?.host as HostState | undefined;
      if (host.turnState() !== 'idle' || queued.length || hostState?.queue?.length) await host.recover(hostState, queued);
      // Deleted (or closed) while it recovered: the delete stops it; the caller gets nothing.
      if (this.deleting.has(id) || this.hosts.get(id) !== host) return undefined;
      return host;
    } catch (err) {
      // A session whose stored state this runtime cannot restore (a damaged row, a turn state
      // no longer registered) is left as stored, and the error says which session it is.
      if (host !== undefined && this.hosts.get(id) === host) {
        // Its subscribers wait for the next try.
        this.parkFollowers(host);
        host.stop();
        this.hosts.delete(id);
      }
      if (err instanceof TurnstateError && (err.code === 'store.closed' || err.code === 'session.unrestorable')) throw err;
      // Closed (or deleted) while it recovered: what stopped it was the close, not the stored data.
      if (this.isClosed) throw runtimeClosed();
      if (this.deleting.has(id)) return undefined;
      throw unrestorable(id, err);
    }
  }

  /** The live host of `id`, woken if need be; throws `session.not_found` (or `runtime.closed`). */
  private readonly live = async (id: string): Promise<SessionHost> => {
    const h = this.usable(id) ?? (await this.whileOpen(() => this.activate(id)));
    if (h) return h;
    throw this.isClosed ? runtimeClosed() : new TurnstateError('session.not_found', `session ${id} no longer exists`);
  };

  private readonly peekFn = (id: string) => this.usable(id);

  /** The one handle of `host`'s session (a dormant one taken back if a caller still holds it). */
  handleFor(host: SessionHost): SessionHandle {
    let handle = this.handles.get(host.id);
    if (handle !== undefined) return handle;
    handle = this.dormant.get(host.id)?.deref();
    this.dormant.delete(host.id);
    handle ??= new SessionRef(host.id, host.record, this.live, this.peekFn, this.partTypes);
    this.handles.set(host.id, handle);
    return handle;
  }

  /**
   * A new session from its checked record. `mayBeStored`: the id came from the caller (or a
   * custom id source), so the store is asked whether it is taken; a fresh built-in id names no
   * session and no other call knows it yet: nothing to hold.
   */
  create(record: SessionRecord, mayBeStored: boolean): Promise<SessionHandle> {
    const id = record.id;
    // Taken before the first await: of two creates of one id exactly one succeeds (under group commit the store cannot tell).
    if (this.hosts.has(id) || this.creating.has(id) || this.deleting.has(id)) return Promise.reject(sessionExists(id));
    if (!mayBeStored) return this.store.groupCommit ? Promise.resolve(this.createWithFirstCommit(record)) : this.createStored(record, false);
    const made = this.whileOpen(() => this.createStored(record, true));
    this.creating.set(id, made);
    return made.finally(() => this.creating.delete(id));
  }

  /** Under group commit the record is written with the session's first commit (at the latest at the end of this event-loop turn). */
  private createWithFirstCommit(record: SessionRecord): SessionHandle {
    const host = new SessionHost(this.deps, record, 0);
    host.writeWithFirstCommit();
    this.hosts.set(record.id, host);
    return this.handleFor(host);
  }

  /** createSession once its id is held (`creating`): the store's check, the write, the host. */
  private async createStored(record: SessionRecord, mayBeStored: boolean): Promise<SessionHandle> {
    const id = record.id;
    if (mayBeStored && (await this.store.getSession(id))) throw sessionExists(id);
    if (this.isClosed) throw runtimeClosed();
    if (this.store.groupCommit) return this.createWithFirstCommit(record);
    // The host first: a session whose host could not be made is not written.
    const host = new SessionHost(this.deps, record, 0);
    // (Refused with store.session_exists when another runtime on the store made it first: whileOpen says session.exists.)
    await this.store.createSession(record);
    if (this.isClosed) {
      host.stop();
      throw runtimeClosed();
    }
    this.hosts.set(id, host);
    return this.handleFor(host);
  }

  /** deleteSession: true if there was a session. A second delete while one runs answers false once that one is done (or fails as it did). */
  delete(id: string): Promise<boolean> {
    if (this.isClosed) return Promise.reject(runtimeClosed());
    const running = this.deleting.get(id);
    if (running) return running.then(() => false);
    const p = this.remove(id);
    this.deleting.set(id, p);
    return p;
  }

  /** Held in `deleting` from its call (it always awaits before it can end). */
  private async remove(id: string): Promise<boolean> {
    const drop = () => {
      this.hosts.get(id)?.stop();
      this.endFollowers(id);
      for (const m of [this.hosts, this.handles, this.dormant]) m.delete(id);
      this.deps.historyCache?.drop(id);
    };
    try {
      // A session being created or activated is deleted once it is live (else it would come back).
      await this.creating.get(id)?.catch(() => undefined);
      const waking = this.loading.get(id);
      if (waking) await waking.catch(() => undefined);
      if (!(this.hosts.get(id)?.record ?? (await this.store.getSession(id)))) {
        this.endFollowers(id);
        return false;
      }
      drop();
      // Its artifacts first: should that fail, the session is still there to delete again.
      await this.artifacts.deleteSession?.(id);
      await this.store.deleteSession(id);
      // Whatever got a host meanwhile goes too (activation refuses an id being deleted).
      drop();
      return true;
    } catch (err) {
      throw this.asRuntime(err);
    } finally {
      this.deleting.delete(id);
    }
  }

  /** A host that gives way hands its live subscribers to the session's next host (see `followers`); whether it had any. */
  private parkFollowers(host: SessionHost): boolean {
    const id = host.id;
    const live = host.journal.handOver(() => {
      if (this.followers.get(id) === live) this.followers.delete(id);
    });
    if (live) this.followers.set(id, live);
    return live !== null;
  }

  /** The subscribers waiting for `id`'s next host, when it has none to come (never stored, or gone): their streams complete. */
  private endFollowers(id: string): void {
    this.followers.get(id)?.complete();
    this.followers.delete(id);
  }

  /** Sessions created in this event-loop turn are written now (under group commit, before a listing). */
  persistAll(): void {
    // (A host whose write failed holds nothing more to write: it gives way on its next use.)
    for (const h of this.hosts.values()) if (!h.journal.failed()) h.persistNow();
  }

  /** Refuses everything from now on and stops every live host: committed steps finish; running turns stay recorded and resume on recover(). */
  close(): void {
    this.isClosed = true;
    for (const h of this.hosts.values()) h.stop();
    for (const f of this.followers.values()) f.complete();
    this.hosts.clear();
    this.handles.clear();
    this.dormant.clear();
    this.followers.clear();
    // After the hosts stopped (a stopping host hands its mailbox to the cache): a closed runtime
    // that is still referenced keeps no conversation in memory.
    this.deps.historyCache?.clear();
  }

  private putDormant(id: string): void {
    const h = this.handles.get(id);
    if (h === undefined) return;
    this.handles.delete(id);
    this.dormant.set(id, new WeakRef(h));
    if (this.dormant.size >= this.sweepAt) {
      for (const [k, ref] of this.dormant) if (ref.deref() === undefined) this.dormant.delete(k);
      this.sweepAt = Math.max(1024, this.dormant.size * 2);
    }
  }
}
