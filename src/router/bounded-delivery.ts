/**
 * deliverBounded: an RxJS operator that hands each value of its source to a consumer that may be
 * slow (an async cache or audit writer) without ever holding the source up.
 *
 * A consumer that returns a promise is busy until the promise settles; at most `concurrency`
 * deliveries run at once, and values that arrive meanwhile wait, in order, in a buffer of
 * `bufferSize`. When the buffer is full the overflow policy drops one value: the oldest waiting
 * one (`drop-oldest`, the default: the consumer catches up with the newest state) or the one
 * arriving (`drop-newest`). Each value yields one outcome: `delivered`, `failed` (the consumer
 * threw or rejected) or `dropped` (with the running count of drops). A consumer that returns
 * nothing is called synchronously and never buffers.
 *
 * The output completes once the source has completed and every buffered value is delivered;
 * unsubscribing discards the buffer.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import { TurnstateError } from '../errors.js';
import { ContainedObservable } from './contained.js';

export type OverflowPolicy = 'drop-oldest' | 'drop-newest';

export interface BoundedDeliveryOptions {
  /** Values that may wait while the consumer is busy (default 1024; 0 drops every value that finds it busy). */
  bufferSize?: number | undefined;
  /** Which value goes when the buffer is full (default `drop-oldest`). */
  overflow?: OverflowPolicy | undefined;
  /** Deliveries in flight at once (default 1: in order, one at a time). */
  concurrency?: number | undefined;
}

export type DeliveryOutcome<T> =
  | { readonly kind: 'delivered'; readonly value: T }
  | { readonly kind: 'failed'; readonly value: T; readonly error: unknown }
  /** `dropped` counts every value this subscription has dropped so far, this one included. */
  | { readonly kind: 'dropped'; readonly value: T; readonly dropped: number };

export const DEFAULT_BUFFER_SIZE = 1024;

/** Checks and fills in the options; throws `router.delivery_invalid` naming the bad field. */
export function boundedDeliveryOptions(opts: BoundedDeliveryOptions = {}, where = 'deliverBounded()'): Required<BoundedDeliveryOptions> {
  const { bufferSize = DEFAULT_BUFFER_SIZE, overflow = 'drop-oldest', concurrency = 1 } = opts;
  if (!Number.isInteger(bufferSize) || bufferSize < 0) {
    throw new TurnstateError('router.delivery_invalid', `${where}: bufferSize must be a non-negative integer, got ${String(bufferSize)}`);
  }
  if (overflow !== 'drop-oldest' && overflow !== 'drop-newest') {
    throw new TurnstateError('router.delivery_invalid', `${where}: overflow must be 'drop-oldest' or 'drop-newest', got ${JSON.stringify(overflow)}`);
  }
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new TurnstateError('router.delivery_invalid', `${where}: concurrency must be a positive integer, got ${String(concurrency)}`);
  }
  return { bufferSize, overflow, concurrency };
}

/** How one value ended: `detail` is the error of a `failed` one, the running drop count of a `dropped` one. */
export type DeliveryListener<T> = (kind: DeliveryOutcome<T>['kind'], value: T, detail: unknown) => void;

/**
 * The buffer behind `deliverBounded`, for callers that push values themselves (FilterAndDistribute
 * feeds each destination's through one, with no stream in between). `push` never blocks and never
 * throws; `listener` hears one outcome per value (it must not throw).
 */
export class BoundedDelivery<T> {
  /**
   * The waiting values, a ring of at most `bufferSize` slots (grown as needed, up to that; released
   * when it empties): a drop-oldest overwrites a slot, so a destination that never catches up holds
   * `bufferSize` values, never more memory.
   */
  private queue: (T | undefined)[] = [];
  /** The slot of the oldest waiting value. */
  private head = 0;
  /** Values waiting. */
  private size = 0;
  private inFlight = 0;
  private dropped = 0;
  private ending = false;
  private stopped = false;
  readonly bufferSize: number;
  private readonly overflow: OverflowPolicy;
  private readonly concurrency: number;

  constructor(
    private readonly deliver: (value: T) => void | PromiseLike<void>,
    opts: BoundedDeliveryOptions | undefined,
    private readonly listener: DeliveryListener<T>,
    private readonly onDrained?: () => void,
  ) {
    if (typeof deliver !== 'function') throw new TurnstateError('router.delivery_invalid', 'deliverBounded(): deliver must be a function');
    ({ bufferSize: this.bufferSize, overflow: this.overflow, concurrency: this.concurrency } = boundedDeliveryOptions(opts));
  }

  /** Values waiting (not counting deliveries in flight). */
  get waiting(): number {
    return this.size;
  }

  push(value: T): void {
    if (this.stopped || this.ending) return;
    if (this.inFlight < this.concurrency && this.size === 0) {
      this.run(value);
      return;
    }
    if (this.size < this.bufferSize) {
      this.enqueue(value);
      return;
    }
    if (this.overflow === 'drop-newest' || this.bufferSize === 0) {
      this.listener('dropped', value, ++this.dropped);
      return;
    }
    // Full (the ring has its bufferSize slots): the newest takes the oldest's slot.
    const oldest = this.queue[this.head] as T;
    this.queue[this.head] = value;
    if (++this.head === this.queue.length) this.head = 0;
    this.listener('dropped', oldest, ++this.dropped);
  }

  /** No more values: `onDrained` runs once every buffered value is delivered. */
  end(): void {
    this.ending = true;
    this.drainedYet();
  }

  /** Discards the buffer; deliveries in flight finish unheard. */
  stop(): void {
    this.stopped = true;
    this.queue = [];
    this.head = 0;
    this.size = 0;
  }

  /** Adds a value behind the waiting ones (`size < bufferSize`), growing the ring when it is full. */
  private enqueue(value: T): void {
    let cap = this.queue.length;
    if (this.size === cap) {
      const ring = new Array<T | undefined>(Math.min(this.bufferSize, Math.max(8, cap * 2)));
      for (let i = 0; i < this.size; i++) ring[i] = this.queue[(this.head + i) % cap];
      this.queue = ring;
      this.head = 0;
      cap = ring.length;
    }
    this.queue[(this.head + this.size) % cap] = value;
    this.size++;
  }

  /** Takes the oldest waiting value out (`size > 0`). */
  private dequeue(): T {
    const value = this.queue[this.head] as T;
    this.queue[this.head] = undefined;
    if (++this.head === this.queue.length) this.head = 0;
    this.size--;
    return value;
  }

  private run(value: T): void {
    let r: void | PromiseLike<void>;
    let then: unknown;
    try {
      r = this.deliver(value);
      // Reading `then` runs the consumer's code (a getter may throw) as much as calling it does.
      if (r !== undefined && r !== null) then = (r as PromiseLike<void>).then;
    } catch (error) {
      this.listener('failed', value, error);
      return;
    }
    if (typeof then !== 'function') {
      this.listener('delivered', value, undefined);
      return;
    }
    // One outcome per value whatever the thenable does, as a promise would resolve it: the first
    // callback wins, and a then() that throws before calling one is a failed delivery.
    let done = false;
    const once = (kind: 'delivered' | 'failed', error: unknown): void => {
      if (done) return;
      done = true;
      this.settled(kind, value, error);
    };
    this.inFlight++;
    try {
      (then as PromiseLike<void>['then']).call(
        r,
        () => once('delivered', undefined),
        (error: unknown) => once('failed', error),
      );
    } catch (error) {
      // Not settled(): run() is called from its drain loop, which goes on to the next value.
      if (done) return;
      done = true;
      this.inFlight--;
      if (!this.stopped) this.listener('failed', value, error);
    }
  }

  private settled(kind: 'delivered' | 'failed', value: T, error: unknown): void {
    this.inFlight--;
    if (this.stopped) return;
    this.listener(kind, value, error);
    while (this.inFlight < this.concurrency && this.size > 0 && !this.stopped) this.run(this.dequeue());
    // Emptied: the ring goes (a burst's slots are not kept for the next one).
    if (this.size === 0 && this.queue.length > 0) {
      this.queue = [];
      this.head = 0;
    }
    this.drainedYet();
  }

  private drainedYet(): void {
    if (this.ending && !this.stopped && this.inFlight === 0 && this.size === 0) {
      this.stopped = true;
      this.onDrained?.();
    }
  }
}

export function deliverBounded<T>(deliver: (value: T) => void | PromiseLike<void>, opts?: BoundedDeliveryOptions): OperatorFunction<T, DeliveryOutcome<T>> {
  if (typeof deliver !== 'function') throw new TurnstateError('router.delivery_invalid', 'deliverBounded(): deliver must be a function');
  boundedDeliveryOptions(opts);
  return (source) => {
    const outcomes = new Observable<DeliveryOutcome<T>>((out) => {
      const q = new BoundedDelivery<T>(
        deliver,
        opts,
        (kind, value, detail) =>
          out.next(kind === 'delivered' ? { kind, value } : kind === 'failed' ? { kind, value, error: detail } : { kind, value, dropped: detail as number }),
        () => out.complete(),
      );
      const sub = source.subscribe({
        next: (value) => q.push(value),
        error: (e: unknown) => out.error(e),
        complete: () => q.end(),
      });
      return () => {
        sub.unsubscribe();
        q.stop();
      };
    });
    // Over one of the router's (contained) streams the outcomes are contained like it: a subscriber
    // that throws goes to the stream's onError, never to RxJS's timer (the process), and so does an
    // operator chained after this one (`lift` keeps the wrapping).
    return source instanceof ContainedObservable ? new ContainedObservable(source.contain, outcomes) : outcomes;
  };
}
