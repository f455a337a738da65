/**
 * Follows one session into a bounded subscriber: a paced replay from the store, then live.
 *
 * Contract:
 * - Events after `after` are delivered in seq order, each once, under the streaming delivery rules.
 * - The replay reads the store page by page and waits whenever the subscriber's sink asks to wait,
 *   so resuming a long session never floods the buffer.
 * - Live events come from one `SessionHandle.events()` subscription per session (a hub) shared by
 *   every local follower, so fanning one event out costs one runtime emission, not one per
 *   subscriber. A follower joins the hub once its replay has reached the hub's last seq; events
 *   the store holds beyond it are read first, and anything at or below the follower's cursor is
 *   ignored, so nothing is missed or repeated.
 * - When some part type is dropped on streaming, a delta that does not name its part type yet is
 *   held (with everything after it) until a later delta of the same part names it (then sent or
 *   discarded with it) or the part arrives whole.
 */
import type { SessionHandle } from '../../api.js';
import type { SessionEvent } from '../../types.js';
import type { StreamsContext } from './context.js';
import { SessionHub, type HubFollower } from './hub.js';
import type { BoundedSubscriber } from './subscriber.js';

const PAGE = 256;

export interface Follow {
  stop(): void;
}

export interface FollowHandlers {
  error(e: unknown): void;
  complete(): void;
}

class Follower implements Follow, HubFollower {
  /** The last seq taken from the replay or the hub (delivered, or dropped by the delivery rules). */
  private cursor: number;
  private stopped = false;
  private hub: SessionHub | undefined;
  // Events held (in order) behind deltas whose part type is not known yet.
  private pending: SessionEvent[] | undefined;
  private readonly unresolved = new Set<string>();
  private readonly dropped = new Set<string>();

  constructor(
    private readonly ctx: StreamsContext,
    private readonly session: SessionHandle,
    after: number,
    private readonly sub: BoundedSubscriber,
    private readonly on: FollowHandlers,
  ) {
    this.cursor = after;
  }

  async run(): Promise<void> {
    const { runtime } = this.ctx;
    const id = this.session.id;
    let exhausted = false;
    for (;;) {
      // Stopped, or its subscriber closed, during the last page (an overflow ends the connection,
      // which stops this follower from inside a push): it must not join the hub after that.
      if (this.stopped || this.sub.isClosed) return;
      if (exhausted) {
        // Caught up with the store: join the hub if it is not ahead of us (no await from check to join).
        const hub = this.ctx.hubs.get(id);
        if (hub === undefined) {
          this.hub = new SessionHub(this.ctx.hubs, this.session, this.cursor);
          this.hub.add(this);
          this.hub.start();
          return;
        }
        if (this.cursor >= hub.lastSeq) {
          this.hub = hub;
          hub.add(this);
          return;
        }
      }
      const page = await runtime.history(id, this.cursor, PAGE);
      if (this.stopped || this.sub.isClosed) return;
      if (exhausted && page.length === 0) {
        // The hub is ahead of the store (cannot happen while events are stored before they are published).
        exhausted = false;
        this.cursor = this.ctx.hubs.get(id)?.lastSeq ?? this.cursor;
        continue;
      }
      for (const event of page) {
        if (event.seq <= this.cursor) continue;
        this.cursor = event.seq;
        this.push(event);
        if (this.sub.isBlocked) {
          await this.sub.whenWritable();
          if (this.stopped || this.sub.isClosed) return;
        }
      }
      exhausted = page.length < PAGE;
    }
  }

  live(event: SessionEvent): void {
    if (event.seq <= this.cursor) return;
    this.cursor = event.seq;
    this.push(event);
  }

  failed(e: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.on.error(e);
  }

  completed(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.on.complete();
  }

  stop(): void {
    this.stopped = true;
    this.hub?.leave(this);
    this.hub = undefined;
  }

  private emit(event: SessionEvent): void {
    const visible = this.ctx.codec.visible(event);
    if (visible !== undefined) this.sub.push(this.session.id, visible);
  }

  private push(event: SessionEvent): void {
    const codec = this.ctx.codec;
    let pending = this.pending;
    if (pending === undefined) {
      if (event.type === 'part.delta' && event.partType === undefined && codec.dropsAny()) {
        this.pending = [event];
        this.unresolved.add(partKey(event.callId, event.index));
        return;
      }
      this.emit(event);
      return;
    }
    pending.push(event);
    const { unresolved, dropped } = this;
    if (event.type === 'part.delta') {
      const key = partKey(event.callId, event.index);
      if (event.partType === undefined) unresolved.add(key);
      else if (unresolved.delete(key) && codec.drops(event.partType)) dropped.add(key);
    } else if (event.type === 'part.received') {
      const key = partKey(event.callId, event.index);
      if (unresolved.delete(key) && codec.drops(event.part.metadata.partType)) dropped.add(key);
    } else if (event.type === 'part.retracted') {
      // Held deltas of a retracted call never go out (nor does anything need taking back).
      const prefix = event.callId + '\u0000';
      for (const key of unresolved) {
        if (key.startsWith(prefix)) {
          unresolved.delete(key);
          dropped.add(key);
        }
      }
    } else if (event.type === 'turn.settled') {
      // Deltas of a call that never became parts (a rejected respond()) are discarded.
      for (const key of unresolved) dropped.add(key);
      unresolved.clear();
    }
    if (unresolved.size > 0) return;
    this.pending = undefined;
    for (const e of pending) {
      if (e.type === 'part.delta' && dropped.has(partKey(e.callId, e.index))) continue;
      this.emit(e);
    }
    dropped.clear();
    pending = undefined;
  }
}

export function follow(ctx: StreamsContext, session: SessionHandle, after: number, sub: BoundedSubscriber, on: FollowHandlers): Follow {
  const f = new Follower(ctx, session, after, sub, on);
  f.run().catch((e: unknown) => f.failed(e));
  return f;
}

function partKey(callId: string, index: number): string {
  return callId + '\u0000' + index;
}
