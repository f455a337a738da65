/**
 * The mailboxes of recently active sessions and the model histories derived from them, kept
 * across a session's sleep between turns and its passivation, within a budget of mailbox
 * entries (`RuntimeLimits.historyCacheEntries`; least recently used first out). A session that
 * wakes takes its view back and reads only the entries written after it (`readMailbox(id, n)`),
 * so a turn costs the same at the 10th and at the 5,000th turn of a conversation.
 *
 * Only mailboxes of at least MIN_KEPT_ENTRIES entries are kept: a shorter one is read again when
 * its session wakes, a read bounded by that size, so an idle short session costs no memory here.
 *
 * A view is owned by one party at a time: the awake host (which appends to it as it commits) or
 * this cache (while the session sleeps). A session deleted, or whose write failed, is dropped;
 * every view goes when the runtime closes (SessionDirectory.close).
 */
import type { LiveSurfaces } from '../envelope/live-surfaces.js';
import type { HistoryView } from '../machines/mailbox.js';
import type { SessionStore } from '../machines/ports.js';
import type { MailboxEntry } from '../types.js';
import { isPromise } from './turn.js';

export interface MailboxView {
  /** The session's whole mailbox, in order. */
  entries: MailboxEntry[];
  /** Incremental model history per actor, derived from `entries`. */
  histories: Map<string, HistoryView> | null;
  /** The live A2UI surfaces when the session slept (caught up from the store when it wakes). */
  surfaces?: LiveSurfaces | null;
}

/** Mailboxes shorter than this are not kept (re-reading at most this many entries is cheap). */
export const MIN_KEPT_ENTRIES = 256;

export class HistoryCache {
  /** Views by session id; Map order is least recently put first. */
  private readonly views = new Map<string, MailboxView>();
  private held = 0;

  /**
   * `budget`: mailbox entries kept at most, over every sleeping session (0 keeps none);
   * `minEntries`: shorter mailboxes are not kept.
   */
  constructor(
    readonly budget: number,
    readonly minEntries = MIN_KEPT_ENTRIES,
  ) {}

  /** Entries held now (for tests and operators). */
  get size(): number {
    return this.held;
  }

  /** Take a sleeping session's view (it leaves the cache: the caller owns it now). */
  take(sessionId: string): MailboxView | undefined {
    const v = this.views.get(sessionId);
    if (v === undefined) return undefined;
    this.views.delete(sessionId);
    this.held -= v.entries.length;
    return v;
  }

  /** Keep a sleeping session's view; the least recently kept go while over budget. */
  put(sessionId: string, view: MailboxView): void {
    this.drop(sessionId);
    const n = view.entries.length;
    if (n < this.minEntries || n > this.budget) return;
    this.views.set(sessionId, view);
    this.held += view.entries.length;
    while (this.held > this.budget) {
      const oldest = this.views.keys().next().value as string;
      this.drop(oldest);
    }
  }

  drop(sessionId: string): void {
    const v = this.views.get(sessionId);
    if (v === undefined) return;
    this.views.delete(sessionId);
    this.held -= v.entries.length;
  }

  /** Drop every view (the runtime closes: a closed runtime still referenced holds no mailbox). */
  clear(): void {
    this.views.clear();
    this.held = 0;
  }
}

/**
 * A waking session's mailbox view: its kept view completed with what the store holds after it,
 * else the whole mailbox read from the store. Synchronous for synchronous stores.
 */
export function wakeMailbox(cache: HistoryCache | undefined, store: SessionStore, sessionId: string): MailboxView | Promise<MailboxView> {
  const kept = cache?.take(sessionId);
  const r = store.readMailbox(sessionId, kept?.entries.length ?? 0);
  const done = (fresh: MailboxEntry[]): MailboxView => {
    if (kept === undefined) return { entries: fresh.slice(), histories: null };
    for (let i = 0; i < fresh.length; i++) kept.entries.push(fresh[i]!);
    return kept;
  };
  return isPromise(r) ? (r as Promise<MailboxEntry[]>).then(done) : done(r);
}
