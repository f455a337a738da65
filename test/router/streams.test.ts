/**
 * The router as observable streams: calls$ / results$, FilterAndDistribute as an operator with one
 * stream per destination, and the bounded buffer that keeps a slow destination off the turn's path.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Subject, config, filter, lastValueFrom, mergeMap, map, toArray, type GroupedObservable } from 'rxjs';
import { annotate } from '../../src/router/annotated.js';
import { deliverBounded, type DeliveryOutcome } from '../../src/router/bounded-delivery.js';
import { filterAndDistribute } from '../../src/router/distribute-operator.js';
import { FilterAndDistribute, type DistributedView, type DistributionMeta } from '../../src/router/filter-distribute.js';
import { EventRouter, type RoutedCall, type RoutedResult } from '../../src/router/router.js';
import { ctx, makeTool } from './fixtures.js';

const offer = (n: number) =>
  annotate(
    { flight: `F${n}`, price: 100 + n, supplierCost: 70 + n, render: { card: 'flight' } },
    { kind: 'flights', fields: { '/supplierCost': ['audit'], '/render': ['ui-stream'] }, default: ['llm-session', 'ui-stream', 'audit', 'cache'] },
  );
const search = makeTool({ name: 'flight_search', scope: 'generalist', handler: (a: { n: number }) => offer(a.n) });
const privateScan = makeTool({ name: 'mailbox_scan', scope: 'specialist', handler: () => annotate({ subject: 'Invoice', raw: 'X' }, { fields: { '/raw': ['audit'] } }) });
const inline = makeTool({ name: 'extract_inline', scope: 'specialist', routing: 'bypass', handler: () => ({ ok: 1 }) });

const meta = (n: number): DistributionMeta => ({ sessionId: 's', turnId: 't', actor: 'a', tool: 'flight_search', callId: `c${n}`, scope: 'generalist' });

/** A deliver whose promises the test settles one by one. */
function gatedSink() {
  const got: unknown[] = [];
  const gates: (() => void)[] = [];
  return {
    got,
    gates,
    deliver: (view: unknown) => {
      got.push(view);
      return new Promise<void>((r) => gates.push(r));
    },
    /** Settles the oldest open delivery, then lets its continuation run. */
    async release() {
      gates.shift()!();
      await new Promise((r) => setImmediate(r));
    },
  };
}

const rxjsHook = config.onUnhandledError;
afterEach(() => {
  vi.restoreAllMocks();
  config.onUnhandledError = rxjsHook;
});

/**
 * What RxJS would throw into the process (in a timer) while the test runs: a probe on RxJS's own
 * hook, set by the test only (the router never sets it; afterEach restores it), so an escape
 * fails the test, not the run.
 */
function unhandledErrors() {
  const seen: unknown[] = [];
  config.onUnhandledError = (e) => void seen.push(e);
  return {
    /** What escaped, once RxJS's timer has run. */
    async settle(): Promise<unknown[]> {
      await new Promise((r) => setTimeout(r, 0));
      return seen;
    },
  };
}

describe('EventRouter streams', () => {
  it('router:streams:calls-results — calls$ carries a routed call as it starts, results$ as it settles; public ones only', async () => {
    const router = new EventRouter();
    const calls: RoutedCall[] = [];
    const results: RoutedResult[] = [];
    router.calls$.subscribe((c) => void calls.push(c));
    router.results$.subscribe((r) => void results.push(r));
    let callsSeenByHandler = -1;
    const probe = makeTool({ name: 'probe', scope: 'generalist', handler: () => ((callsSeenByHandler = calls.length), 'ok') });
    const c = ctx({ sessionId: 's1' });
    await router.dispatchTool(probe, { q: 1 }, c);
    expect(callsSeenByHandler).toBe(1);
    expect(calls).toEqual([{ sessionId: 's1', turnId: c.turnId, callId: c.callId, actor: 'triage', tool: 'probe', scope: 'generalist', args: { q: 1 }, private: false }]);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ call: calls[0], isError: false, outcome: 'ok', attempts: 1, view: 'ok' });
    expect(results[0]!.execution).toMatchObject({ callId: c.callId, attempt: 1 });
    // A routed specialist call is private; a bypass call never passes the router.
    await router.dispatchTool(privateScan, {}, ctx({ sessionId: 's1' }));
    await router.dispatchTool(inline, {}, ctx({ sessionId: 's1' }));
    expect(calls).toHaveLength(1);
    expect(results).toHaveLength(1);
  });

  it('router:streams:in-session — inSession(id) adds that session\'s private calls, and nothing of other sessions', async () => {
    const router = new EventRouter();
    const mine = router.inSession('s1');
    const calls: string[] = [];
    const results: RoutedResult[] = [];
    mine.calls$.subscribe((c) => void calls.push(`${c.sessionId}:${c.tool}`));
    mine.results$.subscribe((r) => void results.push(r));
    await router.dispatchTool(privateScan, {}, ctx({ sessionId: 's1' }));
    await router.dispatchTool(privateScan, {}, ctx({ sessionId: 's2' }));
    await router.dispatchTool(search, { n: 1 }, ctx({ sessionId: 's1' }));
    await router.dispatchTool(inline, {}, ctx({ sessionId: 's1' }));
    expect(calls).toEqual(['s1:mailbox_scan', 's1:flight_search']);
    // A specialist's record is never handed out whole (specialists own their internals).
    expect(results[0]!.record).toBeUndefined();
    expect(results[0]!.view).toEqual({ subject: 'Invoice' });
    expect(results[1]!.record).toMatchObject({ kind: 'annotated-record', dataKind: 'flights' });
    expect(() => router.inSession(42 as unknown as string)).toThrow(/sessionId must be a string/);
  });

  it('router:streams:calls-results — a results$ subscriber added while a call runs gets that call\'s result when it settles', async () => {
    const router = new EventRouter();
    let release!: (v: unknown) => void;
    const slow = makeTool({ name: 'slow_lookup', scope: 'generalist', handler: () => new Promise((r) => (release = r)) });
    const c = ctx({ sessionId: 's1' });
    const p = router.dispatchTool(slow, { q: 1 }, c);
    // Both attached after the call started (e.g. an audit consumer wired up late).
    const results: RoutedResult[] = [];
    const mine: RoutedResult[] = [];
    router.results$.subscribe((r) => void results.push(r));
    router.inSession('s1').results$.subscribe((r) => void mine.push(r));
    release({ ok: true });
    await p;
    const call = { sessionId: 's1', turnId: c.turnId, callId: c.callId, actor: 'triage', tool: 'slow_lookup', scope: 'generalist', args: { q: 1 }, private: false };
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ call, isError: false, outcome: 'ok', attempts: 1, view: { ok: true } });
    expect(mine).toHaveLength(1);
    expect(mine[0]!.call).toEqual(call);
  });

  it('router:streams:errors-contained — A throwing subscriber of calls$ or results$ (piped, inSession\'s, a filterAndDistribute() group\'s) MUST NOT affect the call, other subscribers or the process; the error goes to onError', async () => {
    const escaped = unhandledErrors();
    const errs: string[] = [];
    const router = new EventRouter({ onError: (e, where) => void errs.push(`${where}: ${(e as Error).message}`) });
    router.calls$.subscribe(() => {
      throw new Error('calls$');
    });
    // The documented alerting example, with a broken alerting backend.
    router.results$.pipe(filter((r) => !r.isError)).subscribe(() => {
      throw new Error('results$ piped');
    });
    router.results$.subscribe({
      next() {
        throw new Error('results$ observer');
      },
    });
    router.inSession('s1').results$.subscribe(() => {
      throw new Error('inSession');
    });
    router.results$.pipe(filterAndDistribute(['audit'])).subscribe((g) =>
      g.subscribe(() => {
        throw new Error('group');
      }),
    );
    // An operator that throws errors its stream; with no error callback that is contained too.
    router.results$
      .pipe(
        map(() => {
          throw new Error('operator');
        }),
      )
      .subscribe();
    const good: string[] = [];
    router.results$.subscribe((r) => void good.push(r.call.callId));
    for (const n of [1, 2]) {
      const out = await router.dispatchTool(search, { n }, ctx({ sessionId: 's1', callId: `k${n}` }));
      expect(out).toMatchObject({ isError: false, llmContent: JSON.stringify({ flight: `F${n}`, price: 100 + n }) });
    }
    // Every subscriber stays subscribed (the one whose stream errored excepted).
    expect(good).toEqual(['k1', 'k2']);
    const perCall = ['observer: results$ piped', 'observer: results$ observer', 'observer: inSession', 'observer: group'];
    expect(errs).toEqual(['observer: calls$', ...perCall, 'observer: operator', 'observer: calls$', ...perCall]);
    expect(await escaped.settle()).toEqual([]);
  });

  it('router:streams:errors-contained — A throwing views$(id) subscriber MUST NOT affect distribute(), the destination\'s deliver or the process; the error goes to onError with the view\'s meta', async () => {
    const escaped = unhandledErrors();
    const errs: string[] = [];
    const fad = new FilterAndDistribute({ onError: (e, dest, m) => void errs.push(`${dest}:${m.callId}:${(e as Error).message}`) });
    const delivered: unknown[] = [];
    fad.register({ id: 'cache', deliver: (v) => void delivered.push(v) });
    fad.views$('cache').subscribe(() => {
      throw new Error('views$');
    });
    fad.views$('llm-session')
      .pipe(map((v) => v.view))
      .subscribe(() => {
        throw new Error('views$ piped');
      });
    const { views } = fad.distribute(offer(1), meta(1));
    expect(views.get('llm-session')).toEqual({ flight: 'F1', price: 101 });
    expect(delivered).toEqual([{ flight: 'F1', price: 101 }]);
    expect(errs).toEqual(['llm-session:c1:views$ piped', 'cache:c1:views$']);
    expect(await escaped.settle()).toEqual([]);
  });

  it('router:streams:errors-contained — "A subscriber of calls$, results$ (piped or not, through inSession() or a filterAndDistribute() group) or views$(id) that throws MUST NOT affect [...] the process": piped through deliverBounded() too, the error goes to onError', async () => {
    const escaped = unhandledErrors();
    const errs: string[] = [];
    const fad = new FilterAndDistribute({ onError: (e, dest) => void errs.push(`${dest}: ${(e as Error).message}`) });
    fad.register({ id: 'cache' });
    const router = new EventRouter({ filterAndDistribute: fad, onError: (e, where) => void errs.push(`${where}: ${(e as Error).message}`) });
    const thrower = (what: string) => () => {
      throw new Error(what);
    };
    // A synchronous consumer (the outcome is emitted inside the dispatch) and an async one (emitted
    // later, from the promise's callback): both are contained.
    router.results$.pipe(deliverBounded(() => {})).subscribe(thrower('results$ bounded'));
    router.results$.pipe(deliverBounded(async () => {}), map((o) => o.kind)).subscribe({ next: thrower('results$ bounded async, piped') });
    router.inSession('s1').results$.pipe(deliverBounded(() => {})).subscribe(thrower('inSession bounded'));
    fad.views$('cache').pipe(deliverBounded(() => {})).subscribe(thrower('views$ bounded'));
    router.results$
      .pipe(
        filterAndDistribute(['cache']),
        mergeMap((dest$) => dest$.pipe(deliverBounded(() => {}))),
      )
      .subscribe(thrower('group bounded'));
    const good: string[] = [];
    router.results$.pipe(deliverBounded(async () => {})).subscribe((o) => void good.push(`${o.kind}:${o.value.call.callId}`));
    const out = await router.dispatchTool(search, { n: 1 }, ctx({ sessionId: 's1', callId: 'k1' }));
    expect(out).toMatchObject({ isError: false, llmContent: JSON.stringify({ flight: 'F1', price: 101 }) });
    await new Promise((r) => setImmediate(r));
    expect(good).toEqual(['delivered:k1']);
    expect(errs.sort()).toEqual(
      ['cache: views$ bounded', 'observer: group bounded', 'observer: inSession bounded', 'observer: results$ bounded', 'observer: results$ bounded async, piped'].sort(),
    );
    expect(await escaped.settle()).toEqual([]);
  });

  it('router:streams:close — close() completes calls$ and results$', async () => {
    const router = new EventRouter();
    const done: string[] = [];
    router.calls$.subscribe({ complete: () => void done.push('calls') });
    router.results$.subscribe({ complete: () => void done.push('results') });
    router.close();
    expect(done).toEqual(['calls', 'results']);
  });

  it('router:distribute:operator — results$.pipe(filterAndDistribute(ids)) yields one stream per destination with its own view', async () => {
    const router = new EventRouter();
    const byDest = new Map<string, unknown[]>();
    const keys: string[] = [];
    router.results$.pipe(filterAndDistribute(['audit', 'cache', 'formatter:email'])).subscribe((dest$: GroupedObservable<string, DistributedView>) => {
      keys.push(dest$.key);
      dest$.subscribe((v) => void (byDest.get(dest$.key) ?? byDest.set(dest$.key, []).get(dest$.key)!).push(v.view));
    });
    await router.dispatchTool(search, { n: 1 }, ctx());
    await router.dispatchTool(search, { n: 2 }, ctx());
    await router.dispatchTool(privateScan, {}, ctx());
    await router.dispatchTool(makeTool({ name: 'plain', scope: 'generalist', handler: () => ({ a: 1 }) }), {}, ctx());
    // formatter:email may see nothing of an offer: no stream is opened for it.
    expect(keys).toEqual(['audit', 'cache']);
    expect(byDest.get('audit')).toEqual([
      { flight: 'F1', price: 101, supplierCost: 71 },
      { flight: 'F2', price: 102, supplierCost: 72 },
    ]);
    expect(byDest.get('cache')).toEqual([
      { flight: 'F1', price: 101 },
      { flight: 'F2', price: 102 },
    ]);
    expect(() => filterAndDistribute(['formatter:*'])).toThrow(/destination id "formatter:\*" is invalid/);
  });

  it('router:distribute:views-stream — views$(id) is a destination\'s stream, built-ins included; unknown ids are refused', async () => {
    const fad = new FilterAndDistribute();
    fad.register({ id: 'cache' });
    const llm: unknown[] = [];
    const cache: DistributedView[] = [];
    fad.views$('llm-session').subscribe((v) => void llm.push(v.view));
    fad.views$('cache').subscribe((v) => void cache.push(v));
    const { views } = fad.distribute(offer(3), meta(3));
    expect(llm).toEqual([views.get('llm-session')]);
    expect(cache).toEqual([{ destination: 'cache', view: { flight: 'F3', price: 103 }, meta: meta(3) }]);
    expect(() => fad.views$('audit')).toThrow(expect.objectContaining({ code: 'router.destination_unknown' }));
  });
});

describe('bounded delivery of slow destinations', () => {
  it('router:distribute:bounded-drop-oldest — a slow async destination never holds up distribution; past its buffer the oldest waiting view is dropped and counted', async () => {
    const audit = gatedSink();
    const overflow: [string, number, string][] = [];
    const fad = new FilterAndDistribute({ onOverflow: (d, n, m) => void overflow.push([d, n, m.callId]) });
    fad.register({ id: 'audit', deliver: audit.deliver, bufferSize: 2 });
    const router = new EventRouter({ filterAndDistribute: fad });
    // Five calls while the audit writer is stuck on the first: every call settles at once.
    for (let n = 1; n <= 5; n++) {
      const out = await router.dispatchTool(search, { n }, ctx({ callId: `c${n}` }));
      expect(out.llmContent).toBe(JSON.stringify({ flight: `F${n}`, price: 100 + n }));
    }
    expect(audit.got.map((v) => (v as { flight: string }).flight)).toEqual(['F1']);
    // F2 and F3 were waiting when F4 and F5 came: they were dropped, oldest first.
    expect(overflow).toEqual([['audit', 1, 'c2'], ['audit', 2, 'c3']]);
    expect(fad.stats('audit')).toEqual({ delivered: 0, failed: 0, dropped: 2, pending: 3 });
    await audit.release();
    await audit.release();
    await audit.release();
    expect(audit.got.map((v) => (v as { flight: string }).flight)).toEqual(['F1', 'F4', 'F5']);
    expect(fad.stats('audit')).toEqual({ delivered: 3, failed: 0, dropped: 2, pending: 0 });
  });

  it('router:distribute:bounded-drop-newest — with overflow drop-newest the views already waiting are kept', async () => {
    const cache = gatedSink();
    const fad = new FilterAndDistribute({ onOverflow: () => {} });
    fad.register({ id: 'cache', deliver: cache.deliver, bufferSize: 1, overflow: 'drop-newest' });
    for (let n = 1; n <= 4; n++) fad.distribute(offer(n), meta(n));
    for (let i = 0; i < 2; i++) await cache.release();
    expect(cache.got.map((v) => (v as { flight: string }).flight)).toEqual(['F1', 'F2']);
    expect(fad.stats('cache')).toMatchObject({ delivered: 2, dropped: 2, pending: 0 });
  });

  it('router:distribute:overflow-warning — by default one process warning per overflow burst names the destination', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const audit = gatedSink();
    const fad = new FilterAndDistribute();
    fad.register({ id: 'audit', deliver: audit.deliver, bufferSize: 1 });
    for (let n = 1; n <= 6; n++) fad.distribute(offer(n), meta(n));
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/destination "audit" is slower than the router: its buffer \(1\) is full/);
    expect(warn.mock.calls[0]![1]).toMatchObject({ code: 'TURNSTATE_DESTINATION_OVERFLOW' });
    await audit.release();
    await audit.release();
    // The burst is over (nothing waits); the next overflow warns again.
    for (let n = 7; n <= 9; n++) fad.distribute(offer(n), meta(n));
    expect(warn).toHaveBeenCalledTimes(2);
  });

  it('router:distribute:overflow-warning — a burst ends when the buffer is empty again, though the destination is still busy: the next overflow warns again', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const audit = gatedSink();
    const fad = new FilterAndDistribute();
    fad.register({ id: 'audit', deliver: audit.deliver, bufferSize: 1 });
    // 1 in flight, 2 waiting; 3 drops 2.
    for (let n = 1; n <= 3; n++) fad.distribute(offer(n), meta(n));
    expect(warn).toHaveBeenCalledTimes(1);
    // 1 done: 3 is delivered now and the buffer is empty; the destination stays busy.
    await audit.release();
    expect(fad.stats('audit')).toMatchObject({ dropped: 1, pending: 1 });
    // 4 waits, 5 drops it: a new burst.
    for (let n = 4; n <= 5; n++) fad.distribute(offer(n), meta(n));
    expect(fad.stats('audit')).toMatchObject({ dropped: 2 });
    expect(warn).toHaveBeenCalledTimes(2);
  });

  it('router:distribute:delivery-options — bad buffer options are refused at registration, naming the field', () => {
    const fad = new FilterAndDistribute();
    expect(() => fad.register({ id: 'audit', deliver: () => {}, bufferSize: -1 })).toThrow(/"audit".*bufferSize must be a non-negative integer/);
    expect(() => fad.register({ id: 'audit', deliver: () => {}, overflow: 'block' as never })).toThrow(/overflow must be 'drop-oldest' or 'drop-newest'/);
    expect(() => fad.register({ id: 'audit', deliver: () => {}, concurrency: 0 })).toThrow(/concurrency must be a positive integer/);
    expect(fad.has('audit')).toBe(false);
  });

  it('router:distribute:unregister-discards — removing a destination completes its stream and drops its waiting views', async () => {
    const audit = gatedSink();
    const fad = new FilterAndDistribute();
    const remove = fad.register({ id: 'audit', deliver: audit.deliver });
    let completed = false;
    fad.views$('audit').subscribe({ complete: () => void (completed = true) });
    fad.distribute(offer(1), meta(1));
    fad.distribute(offer(2), meta(2));
    remove();
    expect(completed).toBe(true);
    await audit.release();
    expect(audit.got).toHaveLength(1);
    expect(fad.has('audit')).toBe(false);
  });
});

describe('deliverBounded', () => {
  const outcomes = <T>(o: DeliveryOutcome<T>[]) => o.map((x) => `${x.kind}:${String(x.value)}`);

  it('router:delivery:sync-consumer — a consumer that returns nothing is called at once, in order, and never buffers', async () => {
    const src = new Subject<number>();
    const seen: number[] = [];
    const out: DeliveryOutcome<number>[] = [];
    src.pipe(deliverBounded((v) => void seen.push(v), { bufferSize: 0 })).subscribe((o) => void out.push(o));
    for (let i = 1; i <= 3; i++) src.next(i);
    expect(seen).toEqual([1, 2, 3]);
    expect(outcomes(out)).toEqual(['delivered:1', 'delivered:2', 'delivered:3']);
  });

  it('router:delivery:concurrency-and-drain — up to `concurrency` deliveries run at once; completion waits for the buffer to drain; failures are outcomes', async () => {
    const src = new Subject<number>();
    const open: { v: number; settle: (ok: boolean) => void }[] = [];
    const result = lastValueFrom(
      src.pipe(
        deliverBounded((v) => new Promise<void>((res, rej) => open.push({ v, settle: (ok) => (ok ? res() : rej(new Error(`bad ${v}`))) })), { concurrency: 2 }),
        map((o) => (o.kind === 'failed' ? `failed:${o.value}:${(o.error as Error).message}` : `${o.kind}:${o.value}`)),
        toArray(),
      ),
    );
    for (let i = 1; i <= 4; i++) src.next(i);
    src.complete();
    expect(open.map((o) => o.v)).toEqual([1, 2]);
    open.shift()!.settle(true);
    await new Promise((r) => setImmediate(r));
    expect(open.map((o) => o.v)).toEqual([2, 3]);
    open.shift()!.settle(false);
    await new Promise((r) => setImmediate(r));
    while (open.length) {
      open.shift()!.settle(true);
      await new Promise((r) => setImmediate(r));
    }
    expect(await result).toEqual(['delivered:1', 'failed:2:bad 2', 'delivered:3', 'delivered:4']);
  });

  it('router:delivery:composes — the operator composes with a destination stream of the router', async () => {
    const router = new EventRouter();
    const written: string[] = [];
    const sub = router.results$
      .pipe(
        filterAndDistribute(['cache']),
        mergeMap((dest$) => dest$.pipe(deliverBounded(async (v) => void written.push(`${dest$.key}:${(v.view as { flight: string }).flight}`), { bufferSize: 10 }))),
      )
      .subscribe();
    await router.dispatchTool(search, { n: 7 }, ctx());
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual(['cache:F7']);
    sub.unsubscribe();
  });
});

describe('deliverBounded: memory', () => {
  /** The slots behind a buffer's waiting values (what a stuck destination holds on to). */
  const slots = (q: unknown) => (q as { queue: unknown[] }).queue.length;

  it('router:distribute:bounded-drop-oldest — "views arriving while it is busy wait in its buffer (bufferSize [...]), and past that the oldest waiting view is dropped": a destination that never catches up holds bufferSize slots however many views are dropped, and delivers the newest in order', async () => {
    const { BoundedDelivery } = await import('../../src/router/bounded-delivery.js');
    const gate = gatedSink();
    const outcomes: string[] = [];
    const q = new BoundedDelivery<number>((v) => gate.deliver(v), { bufferSize: 10 }, (kind, v) => void outcomes.push(`${kind}:${v}`));
    const N = 5_000;
    for (let i = 0; i < N; i++) q.push(i);
    expect(q.waiting).toBe(10);
    expect(slots(q)).toBeLessThanOrEqual(10);
    expect(outcomes.filter((o) => o.startsWith('dropped'))).toHaveLength(N - 11);
    // In flight: 0. Waiting: the newest ten, in order, though the ring has wrapped many times over.
    while (gate.gates.length) await gate.release();
    expect(gate.got).toEqual([0, ...Array.from({ length: 10 }, (_, i) => N - 10 + i)]);
    expect(slots(q)).toBe(0);

    // The same through a FilterAndDistribute destination whose deliver never settles (a stuck audit writer).
    const dropped: number[] = [];
    const fad = new FilterAndDistribute({ onOverflow: (_d, n) => void dropped.push(n) });
    fad.register({ id: 'audit', bufferSize: 10, deliver: () => new Promise<void>(() => {}) });
    for (let i = 0; i < N; i++) fad.distribute(offer(1), meta(i));
    expect(fad.stats('audit')).toEqual({ delivered: 0, failed: 0, dropped: N - 11, pending: 11 });
    expect(slots((fad as unknown as { entries: Map<string, { delivery: unknown }> }).entries.get('audit')!.delivery)).toBeLessThanOrEqual(10);
  });
});

describe('deliverBounded: property', () => {
  it('router:delivery:property — under any interleaving of arrivals and settlements the buffer starts and drops exactly what the stated policy says, one outcome per value, never more than bufferSize waiting', async () => {
    const fc = await import('fast-check');
    const { BoundedDelivery } = await import('../../src/router/bounded-delivery.js');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4 }),
        fc.constantFrom('drop-oldest' as const, 'drop-newest' as const),
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.oneof(fc.constant('push' as const), fc.constant('ok' as const), fc.constant('fail' as const)), { maxLength: 60 }),
        (bufferSize, overflow, concurrency, steps) => {
          const open: { v: number; settle: (ok: boolean) => void }[] = [];
          const outcomes = new Map<number, string>();
          const started: number[] = [];
          const q = new BoundedDelivery<number>(
            (v) => {
              started.push(v);
              // Settled synchronously by the test through plain callbacks (no microtask needed).
              const thenable = { then: (res: () => void, rej: (e: unknown) => void) => void open.push({ v, settle: (ok) => (ok ? res() : rej(new Error('x'))) }) };
              return thenable as unknown as PromiseLike<void>;
            },
            { bufferSize, overflow, concurrency },
            (kind, v) => {
              expect(outcomes.has(v), `one outcome for ${v}`).toBe(false);
              outcomes.set(v, kind);
            },
          );
          // The reference: the policy stated plainly, on an array.
          const model = { inFlight: 0, queue: [] as number[], started: [] as number[], dropped: [] as number[] };
          const modelStart = (v: number) => (model.inFlight++, model.started.push(v));
          const modelPush = (v: number) => {
            if (model.inFlight < concurrency && model.queue.length === 0) modelStart(v);
            else if (model.queue.length < bufferSize) model.queue.push(v);
            else if (overflow === 'drop-newest' || bufferSize === 0) model.dropped.push(v);
            else (model.dropped.push(model.queue.shift()!), model.queue.push(v));
          };
          const modelSettle = () => {
            model.inFlight--;
            while (model.inFlight < concurrency && model.queue.length) modelStart(model.queue.shift()!);
          };
          let next = 0;
          const settle = (ok: boolean) => {
            open.shift()!.settle(ok);
            modelSettle();
          };
          for (const s of steps) {
            if (s === 'push') {
              modelPush(next);
              q.push(next++);
            } else if (open.length) settle(s === 'ok');
            expect(open.length).toBeLessThanOrEqual(concurrency);
            expect(q.waiting).toBeLessThanOrEqual(bufferSize);
            expect(started).toEqual(model.started);
          }
          while (open.length) settle(true);
          expect(started).toEqual(model.started);
          expect([...outcomes].filter(([, k]) => k === 'dropped').map(([v]) => v).sort((a, b) => a - b)).toEqual([...model.dropped].sort((a, b) => a - b));
          // Every value ended exactly once, and nothing is left waiting.
          expect(q.waiting).toBe(0);
          for (let v = 0; v < next; v++) expect(outcomes.has(v), `outcome of ${v}`).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
