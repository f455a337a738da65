/**
 * The one `SessionHandle.events()` subscription of a session, shared by every local follower of
 * the streams transport: fanning an event out costs one runtime emission, not one per follower.
 * A hub registers itself in the transport's `hubs` map and leaves it when its last follower
 * leaves or the session's stream ends.
 */
import type { Subscription } from 'rxjs';
import type { SessionHandle } from '../../api.js';
import type { SessionEvent } from '../../types.js';

/** What a hub calls on each of its followers. */
export interface HubFollower {
  /** A live event (at most once per seq; a follower ignores what its replay already took). */
  live(event: SessionEvent): void;
  /** The session's stream failed: the hub has ended. */
  failed(e: unknown): void;
  /** The session's stream completed (session stopped or deleted): the hub has ended. */
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
      error: (e: unknown) => this.end((f) => f.failed(e)),
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
