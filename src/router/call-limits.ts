/**
 * The time limits of one routed call: a per-attempt deadline (`timeoutMs`), the race of a pending
 * handler against its signal, and the wait between retries. Timers are plain setTimeout (fake
 * timers drive them in tests); a deadline or a backoff costs only the calls of tools that have one.
 */
import type { RetryPolicy } from '../registries/types.js';

/** Rejection of a pending handler whose signal aborted (the handler is not awaited further). */
export class Cancelled extends Error {}

/** A timeout for one attempt: its signal aborts at the deadline or when `parent` aborts. */
export class Deadline {
  readonly signal: AbortSignal;
  expired = false;
  private readonly ctl = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  private readonly onParent: (() => void) | undefined;

  constructor(
    private readonly parent: AbortSignal | undefined,
    ms: number,
  ) {
    this.signal = this.ctl.signal;
    this.timer = setTimeout(() => {
      this.expired = true;
      this.ctl.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError'));
    }, ms);
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
  const ms = retry.backoffMs * retry.backoffFactor ** (n - 1);
  if (ms <= 0) return true;
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

export function raceAbort(p: PromiseLike<unknown>, signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new Cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
