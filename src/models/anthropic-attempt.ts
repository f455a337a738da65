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
   * The SDK middleware (`Middleware` of @anthropic-ai/sdk, whose shape this is: the file stays free
   * of the SDK) of this attempt's request, given only with a watchdog: every chunk of the
   * response body touches it. The SDK drops `ping` events before they reach the adapter, so
   * without this a stream kept alive by pings alone (the API's keep-alive while the model works,
   * e.g. on a tool's input) would read as silent.
   */
  readonly middleware = async <R>(request: R, next: (request: R) => Promise<Response>): Promise<Response> => {
    const response = await next(request);
    const body = response.body;
    if (body === null) return response;
    const touch = (): void => this.touch();
    const seen = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        touch();
        out.enqueue(chunk);
      },
    });
    return new Response(body.pipeThrough(seen), response);
  };

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
