/**
 * The time limits of one routed call: a per-attempt deadline (`timeoutMs`), the race of a pending
 * handler against that deadline and the caller's cancel signal, and the wait between retries. An
 * interrupt (DispatchContext.interrupt) aborts the handler's signal but is not raced: a handler
 * that ignores it runs to its end and its result counts. Timers are plain setTimeout (fake timers
 * drive them in tests); a deadline or a backoff costs only the calls of tools that have one.
 */
import { MAX_TIMER_MS } from '../limits.js';
import type { RetryPolicy } from '../registries/types.js';

// MAX_TIMER_MS (limits.ts): registration refuses longer timeouts and retry waits; the router
// clamps as well, for a RegisteredTool built by hand.

/** Rejection of a pending handler whose cancel signal or deadline aborted (it is not awaited further). */
export class Cancelled extends Error {}

/**
 * A timeout for one attempt: its signal aborts at the deadline or when `parent` aborts;
 * `expiry` aborts only at the deadline (what the router races a pending handler against).
 */
export class Deadline {
  readonly signal: AbortSignal;
  readonly expiry: AbortSignal;
  expired = false;
  private readonly ctl = new AbortController();
  private readonly expiryCtl = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  private readonly onParent: (() => void) | undefined;

  constructor(
    private readonly parent: AbortSignal | undefined,
    ms: number,
  ) {
    this.signal = this.ctl.signal;
    this.expiry = this.expiryCtl.signal;
    this.timer = setTimeout(
      () => {
        this.expired = true;
        const reason = new DOMException(`timed out after ${ms} ms`, 'TimeoutError');
        this.ctl.abort(reason);
        this.expiryCtl.abort(reason);
      },
      ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms,
    );
    if (parent !== undefined) {
      const onParent = (): void => this.ctl.abort(parent.reason);
      parent.addEventListener('abort', onParent, { once: true });
      this.onParent = onParent;
    }
  }

  clear(): void {
    clearTimeout(this.timer);
    if (this.onParent !== undefined) this.parent!.removeEventListener('abort', this.onParent);
  }
}

/**
 * Waits out the backoff before attempt `n + 1`; false when `signal` aborts first (the call is
 * not tried again).
 */
export function backoff(retry: Readonly<Required<RetryPolicy>>, n: number, signal: AbortSignal | undefined): Promise<boolean> | boolean {
  if (signal?.aborted) return false;
  let ms = retry.backoffMs * retry.backoffFactor ** (n - 1);
  if (!(ms > 0)) return true; // 0, or NaN from a policy built by hand: no wait
  if (ms > MAX_TIMER_MS) ms = MAX_TIMER_MS; // never the 1 ms Node gives an overlong timer
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const ONCE = { once: true } as const;

/**
 * `p`, or a `Cancelled` rejection as soon as `a` or `b` aborts (the handler is not awaited
 * further). Costs two listener calls per signal: only calls that can be cancelled are raced.
 */
export function raceAbort(p: PromiseLike<unknown>, a: AbortSignal, b: AbortSignal | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    // Either signal firing removes the listener from both: a handler that never settles would
    // otherwise leave one on the other signal (the caller's, when the deadline fired) per call.
    const onAbort = (): void => {
      a.removeEventListener('abort', onAbort);
      b?.removeEventListener('abort', onAbort);
      reject(new Cancelled());
    };
    a.addEventListener('abort', onAbort, ONCE);
    b?.addEventListener('abort', onAbort, ONCE);
    try {
      p.then(
        (v) => {
          a.removeEventListener('abort', onAbort);
          b?.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          a.removeEventListener('abort', onAbort);
          b?.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    } catch (e) {
      // A thenable whose `then` throws when called: a failed call, and no listener is left behind.
      a.removeEventListener('abort', onAbort);
      b?.removeEventListener('abort', onAbort);
      reject(e);
    }
  });
}
