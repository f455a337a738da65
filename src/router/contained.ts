/**
 * ContainedObservable: the router's streams (`calls$`, `results$`, `views$(id)`) and a session's
 * `events()` (host/journal.ts containSubscribers) as observables whose subscribers cannot throw
 * into the process.
 *
 * RxJS catches a subscriber's throw and rethrows it in a timer (an uncaught exception: the process
 * dies), and an error notification nobody handles goes the same way. The only global remedy is
 * `config.onUnhandledError`, which is the application's, not a library's. So each subscriber is
 * wrapped as it subscribes: its `next` / `complete` / `error` callbacks run in a try, a missing
 * `error` callback is supplied, and what they throw goes to `contain` (the router's `onError`,
 * like a throwing `observe()` callback). Operators build their observable through `lift`, which
 * this class keeps contained, so `results$.pipe(filter(...)).subscribe(fn)` is covered as well.
 * The cost is paid at subscribe time and per delivered value only: nothing while no one subscribes.
 */
import { Observable, Subscriber, type Observer, type Operator, type Subscription } from 'rxjs';

export class ContainedObservable<T> extends Observable<T> {
  constructor(
    /** Where a subscriber's throw (or an error no callback handles) goes; must not throw. `ended`: the subscription is over (an error or completion), else it goes on. */
    readonly contain: (error: unknown, ended: boolean) => void,
    source?: Observable<T>,
  ) {
    super();
    if (source !== undefined) this.source = source;
  }

  override lift<R>(operator?: Operator<T, R>): Observable<R> {
    const o = new ContainedObservable<R>(this.contain);
    o.source = this;
    o.operator = operator;
    return o;
  }

  override subscribe(
    observerOrNext?: Partial<Observer<T>> | ((value: T) => void) | null,
    error?: ((error: any) => void) | null,
    complete?: (() => void) | null,
  ): Subscription {
    // An operator (or a chain lifted from this one) subscribes with a Subscriber of its own:
    // plumbing, passed on as it is; the callbacks at the end of the chain are the ones wrapped.
    if (isSubscriber(observerOrNext)) return super.subscribe(observerOrNext);
    const contain = this.contain;
    let o: Partial<Observer<T>>;
    if (typeof observerOrNext === 'function' || observerOrNext == null) {
      o = { next: observerOrNext ?? undefined, error: error ?? undefined, complete: complete ?? undefined };
    } else {
      o = observerOrNext;
    }
    // Called as methods of `o`: an observer object keeps its `this`.
    return super.subscribe({
      next: (v) => {
        try {
          o.next?.(v);
        } catch (e) {
          contain(e, false);
        }
      },
      error: (err: unknown) => {
        if (o.error === undefined) return contain(err, true);
        try {
          o.error(err);
        } catch (e) {
          contain(e, true);
        }
      },
      complete: () => {
        try {
          o.complete?.();
        } catch (e) {
          contain(e, true);
        }
      },
    });
  }
}

/** RxJS's own test (`isSubscriber`), duck-typed for a Subscriber of another copy of RxJS. */
function isSubscriber(x: unknown): x is Subscriber<unknown> {
  if (x instanceof Subscriber) return true;
  if (typeof x !== 'object' || x === null) return false;
  const s = x as Record<string, unknown>;
  return (
    typeof s.next === 'function' &&
    typeof s.error === 'function' &&
    typeof s.complete === 'function' &&
    typeof s.unsubscribe === 'function' &&
    typeof s.add === 'function' &&
    typeof s.remove === 'function' &&
    'closed' in s
  );
}
