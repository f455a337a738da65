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

export type OverflowPolicy = 'drop-oldest' | 'drop-newest';

export interface BoundedDeliveryOptions {
  /** Values that may wait while the consumer is busy (default 1024; 0 drops every value that finds it busy). */
  bufferSize?: number;
  /** Which value goes when the buffer is full (default `drop-oldest`). */
  overflow?: OverflowPolicy;
  /** Deliveries in flight at once (default 1: in order, one at a time). */
  concurrency?: number;
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

export function deliverBounded<T>(deliver: (value: T) => void | PromiseLike<void>, opts?: BoundedDeliveryOptions): OperatorFunction<T, DeliveryOutcome<T>> {
  if (typeof deliver !== 'function') throw new TurnstateError('router.delivery_invalid', 'deliverBounded(): deliver must be a function');
  const { bufferSize, overflow, concurrency } = boundedDeliveryOptions(opts);
  return (source) =>
    new Observable<DeliveryOutcome<T>>((out) => {
      // The buffer: queue[head..] waits; the consumed prefix is cut off now and then.
      let queue: T[] = [];
      let head = 0;
      let inFlight = 0;
      let dropped = 0;
      let sourceDone = false;

      const finishIfDone = (): void => {
        if (sourceDone && inFlight === 0 && head === queue.length) out.complete();
      };
      const settled = (outcome: DeliveryOutcome<T>): void => {
        inFlight--;
        if (out.closed) return;
        out.next(outcome);
        pump();
      };
      const run = (value: T): void => {
        let r: void | PromiseLike<void>;
        try {
          r = deliver(value);
        } catch (error) {
          out.next({ kind: 'failed', value, error });
          return;
        }
        if (r !== undefined && r !== null && typeof (r as PromiseLike<void>).then === 'function') {
          inFlight++;
          (r as PromiseLike<void>).then(
            () => settled({ kind: 'delivered', value }),
            (error: unknown) => settled({ kind: 'failed', value, error }),
          );
        } else {
          out.next({ kind: 'delivered', value });
        }
      };
      const pump = (): void => {
        while (inFlight < concurrency && head < queue.length && !out.closed) {
          const v = queue[head]!;
          queue[head++] = undefined as T;
          run(v);
        }
        if (head === queue.length) {
          queue = [];
          head = 0;
        } else if (head > 256 && head * 2 > queue.length) {
          queue = queue.slice(head);
          head = 0;
        }
        finishIfDone();
      };

      const sub = source.subscribe({
        next(value) {
          if (inFlight < concurrency && head === queue.length) {
            run(value);
            return;
          }
          if (queue.length - head < bufferSize) {
            queue.push(value);
            return;
          }
          if (overflow === 'drop-newest' || bufferSize === 0) {
            out.next({ kind: 'dropped', value, dropped: ++dropped });
            return;
          }
          const oldest = queue[head]!;
          queue[head++] = undefined as T;
          queue.push(value);
          out.next({ kind: 'dropped', value: oldest, dropped: ++dropped });
        },
        error(e: unknown) {
          out.error(e);
        },
        complete() {
          sourceDone = true;
          finishIfDone();
        },
      });
      return () => {
        sub.unsubscribe();
        queue = [];
        head = 0;
      };
    });
}
