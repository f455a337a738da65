/**
 * One attempt of an Anthropic model call: the caller's signal plus the idle watchdog
 * (`AnthropicModelOptions.idleTimeout`). Internal to anthropic.ts (not part of `turnstate/anthropic`).
 */
import { ModelError } from '../errors.js';

export function idleError(ms: number): ModelError {
  return new ModelError('model.timeout', `model stream delivered no event for ${ms} ms`, { retryable: true });
}

/** Per-attempt signal: the caller's, plus an idle watchdog when configured. */
export class Attempt {
  yielded = false;
  idleFired = false;
  /** The consumer holds the event just yielded (a slow commit): its time is not the stream's silence. */
  consuming = false;
  readonly signal: AbortSignal;
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the stream last delivered an event (Date.now()): one clock read per event, no timer reset. */
  private last = 0;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly outer: AbortSignal,
    private readonly idleMs: number,
  ) {
    if (idleMs <= 0) {
      this.signal = outer;
      return;
    }
    const c = new AbortController();
    this.controller = c;
    this.signal = c.signal;
    this.onAbort = () => c.abort(outer.reason);
    outer.addEventListener('abort', this.onAbort, { once: true });
    this.last = Date.now();
    this.arm(idleMs);
  }

  touch(): void {
    if (this.controller !== undefined) this.last = Date.now();
  }

  /**
   * Fires `idleMs` after the last event, not after the last check: the timer wakes when the
   * silence would reach the limit and re-arms for what is left of it when an event came since.
   */
  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      if (this.consuming) {
        this.arm(this.idleMs);
        return;
      }
      const left = this.last + this.idleMs - Date.now();
      if (left <= 0) {
        this.idleFired = true;
        this.controller?.abort(new Error('idle timeout'));
        return;
      }
      this.arm(left);
    }, ms);
    this.timer.unref?.();
  }

  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.onAbort !== undefined) this.outer.removeEventListener('abort', this.onAbort);
  }
}
