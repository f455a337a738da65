/**
 * The bounded per-subscriber outbound buffer shared by the SSE and WebSocket transports.
 *
 * Contract:
 * - Frames go straight to the sink while it accepts them; once the sink asks to wait
 *   (`write()` returned false), frames queue here until `drain()` is called.
 * - Held bytes (queued here plus `sink.buffered()`) never exceed `maxBufferedBytes`, with one
 *   exception: a single frame larger than the bound is written when nothing else is held, so a
 *   large event is never undeliverable.
 * - Bytes a sink holds back on its own (an HTTP response keeps what was written until the end of
 *   the tick) are on their way, not held for a slow reader: before the sink counts as asking to
 *   wait, and before a frame that would cross the bound (one larger than it, or one a little
 *   smaller behind the events just written), it is flushed (`Sink.flush`). Counted, they would
 *   block a reader that keeps up and refuse every large frame, again on each resume.
 * - Under pressure (the next frame would cross the bound) streaming-only events are compacted:
 *   a `part.delta` followed in the queue by the `part.received` of the same part is dropped,
 *   consecutive `part.delta` of the same part are merged (text concatenated, last `seq` kept),
 *   and a streaming-only `part.received` (ack, thinking, progress) is dropped when a later one
 *   of the same part type for the same session is queued. Nothing else is ever dropped.
 * - When compaction does not bring the held bytes under the bound, `onOverflow` is called once
 *   and the subscriber stops accepting; the client resumes from the last seq it received.
 */
import type { SessionEvent, SessionEventOf } from '../../types.js';

/** Where a subscriber's frames go: an HTTP response or a WebSocket. */
export interface Sink {
  /** Write one frame. False means: stop and wait until `drain()` is called. */
  write(frame: Buffer): boolean;
  /** Bytes accepted by the sink but not yet handed to the kernel. */
  buffered(): number;
  /**
   * While the sink has not asked to wait, it holds fewer bytes than this (Node's writable
   * highWaterMark). Lets a frame skip the `buffered()` check when it fits anyway.
   */
  readonly highWaterMark?: number;
  /**
   * Keep writing after the sink asked to wait while it holds fewer bytes than this (default: its
   * highWaterMark). A little slack absorbs short bursts without queueing; frames past it queue
   * here, where they can be compacted.
   */
  readonly slack?: number;
  /** Optional batching: frames written between cork() and uncork() leave in one system call. */
  cork?(): void;
  uncork?(): void;
  /**
   * Optional: hand what the sink holds back on its own (an HTTP response holds its writes until
   * the end of the tick) to the socket now, so `buffered()` counts only what the socket could not
   * take.
   */
  flush?(): void;
}

/** How the compaction may treat an event. */
export const Coalesce = {
  /** Never dropped, never merged. */
  Keep: 0,
  /** A `part.delta`: mergeable with the next delta of the same part, droppable before its part.received. */
  Delta: 1,
  /** A streaming-only `part.received`: droppable when a later one of the same part type is queued. */
  Supersede: 2,
} as const;
export type Coalesce = (typeof Coalesce)[keyof typeof Coalesce];

/** Turns an event into a frame; implementations cache per event object so fan-out encodes once. */
/** Bytes a sink adds around a frame (WebSocket header, HTTP chunk size line); counted with each frame. */
export const FRAME_OVERHEAD = 16;

export type Encode = (sessionId: string, event: SessionEvent) => Buffer;
export type Classify = (event: SessionEvent) => Coalesce;

interface Queued {
  sessionId: string;
  /** Undefined for control frames (never coalesced). */
  event: SessionEvent | undefined;
  frame: Buffer;
  kind: Coalesce;
}

export interface BoundedSubscriberOptions {
  sink: Sink;
  encode: Encode;
  classify: Classify;
  maxBufferedBytes: number;
  /** Called once when the subscriber stays over the bound; the transport disconnects it. */
  onOverflow: () => void;
}

export class BoundedSubscriber {
  private readonly sink: Sink;
  private readonly encode: Encode;
  private readonly classify: Classify;
  private readonly max: number;
  private readonly onOverflow: () => void;
  /** Upper bound of the sink's own buffer while it accepts frames (Infinity: always ask it). */
  private readonly sinkBound: number;
  /** See Sink.slack. */
  private readonly slack: number;
  private queue: Queued[] = [];
  private head = 0;
  private queuedBytes = 0;
  private blocked = false;
  private overflowed = false;
  private closed = false;
  private writableWaiters: (() => void)[] = [];
  /** Events handed to the sink (after compaction), for stats and tests. */
  delivered = 0;
  /** Events removed or merged by compaction. */
  coalesced = 0;
  /** Highest held byte count seen (queued plus sink-buffered; on the direct path, the sink's bound is counted). */
  peakHeldBytes = 0;

  constructor(opts: BoundedSubscriberOptions) {
    this.sink = opts.sink;
    this.encode = opts.encode;
    this.classify = opts.classify;
    this.max = opts.maxBufferedBytes;
    this.onOverflow = opts.onOverflow;
    const hwm = opts.sink.highWaterMark;
    this.slack = Math.max(hwm ?? 0, opts.sink.slack ?? 0);
    this.sinkBound = hwm === undefined ? Number.POSITIVE_INFINITY : this.slack;
  }

  /** Queued here plus buffered in the sink. */
  heldBytes(): number {
    return this.queuedBytes + this.sink.buffered();
  }

  get queuedCount(): number {
    return this.queue.length - this.head;
  }

  get isOverflowed(): boolean {
    return this.overflowed;
  }

  /** Whether the sink asked to wait; frames queue until `drain()`. */
  get isBlocked(): boolean {
    return this.blocked;
  }

  /** Resolves when the sink takes frames again (at once when it does, or when the subscriber is closed). */
  whenWritable(): Promise<void> {
    if (!this.blocked || this.closed || this.overflowed) return Promise.resolve();
    return new Promise((resolve) => this.writableWaiters.push(resolve));
  }

  /** Offer one event. Returns false once the subscriber has overflowed or is closed. */
  push(sessionId: string, event: SessionEvent): boolean {
    if (this.closed || this.overflowed) return false;
    return this.offer(sessionId, event, this.encode(sessionId, event));
  }

  /** Offer a control frame, kept in order with the events and never coalesced. */
  pushFrame(frame: Buffer, sessionId = ''): boolean {
    if (this.closed || this.overflowed) return false;
    return this.offer(sessionId, undefined, frame);
  }

  /** Remove the queued (not yet written) events of one session. */
  purge(sessionId: string): void {
    const rest: Queued[] = [];
    let bytes = 0;
    for (let i = this.head; i < this.queue.length; i++) {
      const it = this.queue[i]!;
      if (it.event !== undefined && it.sessionId === sessionId) continue;
      rest.push(it);
      bytes += it.frame.byteLength + FRAME_OVERHEAD;
    }
    this.queue = rest;
    this.head = 0;
    this.queuedBytes = bytes;
  }

  private offer(sessionId: string, event: SessionEvent | undefined, frame: Buffer): boolean {
    const size = frame.byteLength + FRAME_OVERHEAD;
    if (!this.blocked && this.head === this.queue.length && size + this.sinkBound <= this.max) {
      // Nothing queued and the sink holds under its highWaterMark: the bound holds without asking.
      this.delivered++;
      if (!this.sink.write(frame)) this.blocked = this.mustWait();
      if (size + this.sinkBound > this.peakHeldBytes) this.peakHeldBytes = size + this.sinkBound;
      return true;
    }
    const alone = size > this.max;
    let held = this.queuedBytes + this.sink.buffered();
    // The frame would cross the bound while nothing is queued here: bytes the sink merely holds
    // until the end of the tick (the `retry:` line, the events just before) leave first, so only
    // what the socket could not take counts. (Never for a small frame: one that fits beside the
    // sink's highWaterMark took the direct path above, and a blocked sink was flushed when it
    // asked to wait.)
    if (held > 0 && held + size > this.max && !this.blocked && this.head === this.queue.length && this.sink.flush !== undefined) {
      this.sink.flush();
      held = this.sink.buffered();
    }
    if (held + size > this.max && held > 0) {
      const item: Queued = { sessionId, event, frame, kind: event === undefined ? Coalesce.Keep : this.classify(event) };
      this.queue.push(item);
      this.queuedBytes += size;
      this.compact();
      if (this.heldBytes() > this.max) return this.overflow();
      if (!this.blocked) this.drain();
      return true;
    }
    if (!this.blocked && this.head === this.queue.length) {
      this.delivered++;
      const ok = this.sink.write(frame);
      // A frame past the bound goes out at once: an event right behind it (the envelope repeating
      // a large part) finds the sink holding only what the socket could not take.
      if (alone) this.sink.flush?.();
      if (!ok) this.blocked = this.mustWait();
      this.notePeak();
      return true;
    }
    this.queue.push({ sessionId, event, frame, kind: event === undefined ? Coalesce.Keep : this.classify(event) });
    this.queuedBytes += size;
    this.notePeak();
    return true;
  }

  /**
   * The sink asked to wait: whether it really holds its slack. A sink that holds writes back on
   * its own (an HTTP response, until the end of the tick) is flushed first, so the bytes the
   * socket takes at once do not block (and queue, and cut) a reader that keeps up.
   */
  private mustWait(): boolean {
    if (this.sink.buffered() < this.slack) return false;
    if (this.sink.flush === undefined) return true;
    this.sink.flush();
    return this.sink.buffered() >= this.slack;
  }

  /** The sink can take more: write queued frames until it asks to wait again. */
  drain(): void {
    this.blocked = false;
    if (this.closed || this.overflowed) return;
    const q = this.queue;
    const batch = q.length - this.head > 1 && this.sink.cork !== undefined;
    if (batch) this.sink.cork!();
    while (this.head < q.length) {
      const item = q[this.head]!;
      q[this.head] = undefined as unknown as Queued;
      this.head++;
      this.queuedBytes -= item.frame.byteLength + FRAME_OVERHEAD;
      this.delivered++;
      if (!this.sink.write(item.frame) && this.mustWait()) {
        this.blocked = true;
        break;
      }
    }
    if (batch) this.sink.uncork!();
    if (this.head === q.length) {
      this.queue = [];
      this.head = 0;
    }
    if (!this.blocked) this.wake();
  }

  private wake(): void {
    if (this.writableWaiters.length === 0) return;
    const waiters = this.writableWaiters;
    this.writableWaiters = [];
    for (const w of waiters) w();
  }

  /** Drop everything held here; the subscriber accepts nothing more. */
  close(): void {
    this.closed = true;
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.wake();
  }

  get isClosed(): boolean {
    return this.closed || this.overflowed;
  }

  private overflow(): false {
    this.overflowed = true;
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.wake();
    this.onOverflow();
    return false;
  }

  private notePeak(): void {
    const held = this.queuedBytes + this.sink.buffered();
    if (held > this.peakHeldBytes) this.peakHeldBytes = held;
  }

  /** Apply the compaction rules to the queue (see the module comment). */
  private compact(): void {
    const items: (Queued | undefined)[] = this.queue.slice(this.head);
    let removed = 0;

    // Backward pass: deltas superseded by their part.received; streaming-only parts superseded by a later one.
    const finals = new Set<string>();
    const laterStreamingOnly = new Set<string>();
    for (let i = items.length - 1; i >= 0; i--) {
      const it = items[i]!;
      const ev = it.event;
      if (ev === undefined) continue;
      if (ev.type === 'part.received') {
        finals.add(partKey(it.sessionId, ev.callId, ev.index));
        if (it.kind === Coalesce.Supersede) {
          const k = it.sessionId + '\u0000' + ev.part.metadata.partType;
          if (laterStreamingOnly.has(k)) {
            items[i] = undefined;
            removed++;
            continue;
          }
          laterStreamingOnly.add(k);
        }
      } else if (it.kind === Coalesce.Delta && ev.type === 'part.delta') {
        if (finals.has(partKey(it.sessionId, ev.callId, ev.index))) {
          items[i] = undefined;
          removed++;
        }
      }
    }

    // Forward pass: merge deltas of the same part that are consecutive within their session.
    const lastOfSession = new Map<string, number>();
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it === undefined) continue;
      const prevIdx = lastOfSession.get(it.sessionId);
      const b = it.event;
      if (prevIdx !== undefined && it.kind === Coalesce.Delta && b?.type === 'part.delta') {
        const prev = items[prevIdx]!;
        const a = prev.event;
        if (prev.kind === Coalesce.Delta && a?.type === 'part.delta' && a.callId === b.callId && a.index === b.index) {
          const merged = mergeDeltas(a, b);
          items[prevIdx] = { sessionId: it.sessionId, event: merged, frame: this.encode(it.sessionId, merged), kind: Coalesce.Delta };
          items[i] = undefined;
          removed++;
          continue;
        }
      }
      lastOfSession.set(it.sessionId, i);
    }

    if (removed === 0) return;
    const next: Queued[] = [];
    let bytes = 0;
    for (const it of items) {
      if (it === undefined) continue;
      next.push(it);
      bytes += it.frame.byteLength + FRAME_OVERHEAD;
    }
    this.coalesced += removed;
    this.queue = next;
    this.head = 0;
    this.queuedBytes = bytes;
  }
}

function partKey(sessionId: string, callId: string, index: number): string {
  return sessionId + '\u0000' + callId + '\u0000' + index;
}

/** Two consecutive deltas of one part as one: text concatenated, the later seq and time kept. */
export function mergeDeltas(a: SessionEventOf<'part.delta'>, b: SessionEventOf<'part.delta'>): SessionEventOf<'part.delta'> {
  const merged: SessionEventOf<'part.delta'> = { ...b, text: a.text + b.text };
  if (merged.partType === undefined && a.partType !== undefined) merged.partType = a.partType;
  return merged;
}
