/**
 * The one `SessionHandle.events()` subscription of a session, shared by every local follower of
 * the streams transport: fanning an event out costs one runtime emission, not one per follower.
 * A hub registers itself in the transport's `hubs` map and leaves it when its last follower
 * leaves or the session's stream ends. The stream ends (`completed`) when the session is stopped or
 * deleted, also when it was deleted before the hub subscribed; any other error is `failed`.
 */
import type { Subscription } from 'rxjs';
import type { SessionHandle } from '../../api.js';
import { TurnstateError } from '../../errors.js';
import type { SessionEvent } from '../../types.js';

/** What a hub calls on each of its followers. */
export interface HubFollower {
  /** A live event (at most once per seq; a follower ignores what its replay already took). */
  live(event: SessionEvent): void;
  /** The session's stream failed: the hub has ended. */
  failed(e: unknown): void;
  /** The session's stream completed (session stopped or deleted, even before the hub subscribed): the hub has ended. */
  completed(): void;
}

/** The one runtime subscription of a session, fanned out to local followers. */
export class SessionHub {
  /** The highest seq received from the runtime (the start seq before the first event). */
  lastSeq: number;
  private readonly followers = new Set<HubFollower>();
  private subscription: Subscription | undefined;
  private ended = false;

  constructor(
    private readonly hubs: Map<string, SessionHub>,
    private readonly session: SessionHandle,
    start: number,
  ) {
    this.lastSeq = start;
    hubs.set(session.id, this);
  }

  start(): void {
    this.subscription = this.session.events(this.lastSeq).subscribe({
      next: (event) => {
        this.lastSeq = event.seq;
        for (const f of this.followers) f.live(event);
      },
      // A session deleted before the hub subscribed (a follower still replaying when it went) has
      // ended like one deleted while followed, not failed.
      error: (e: unknown) => this.end(sessionGone(e) ? (f) => f.completed() : (f) => f.failed(e)),
      complete: () => this.end((f) => f.completed()),
    });
    if (this.ended) this.subscription.unsubscribe();
  }

  add(f: HubFollower): void {
    this.followers.add(f);
  }

  leave(f: HubFollower): void {
    this.followers.delete(f);
    if (this.followers.size === 0) this.end(() => undefined);
  }

  private end(notify: (f: HubFollower) => void): void {
    if (this.ended) return;
    this.ended = true;
    this.subscription?.unsubscribe();
    if (this.hubs.get(this.session.id) === this) this.hubs.delete(this.session.id);
    const followers = [...this.followers];
    this.followers.clear();
    for (const f of followers) notify(f);
  }
}

/** The session no longer exists: it was deleted after its follower found it. */
function sessionGone(e: unknown): boolean {
  return e instanceof TurnstateError && e.code === 'session.not_found';
}
