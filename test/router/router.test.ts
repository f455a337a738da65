import { describe, expect, it } from 'vitest';
import { EventRouter, type RoutedEvent, type RoutedResult, type ToolDispatch } from '../../src/router/router.js';
import { filterAndDistribute } from '../../src/router/distribute-operator.js';
import { annotate } from '../../src/router/annotated.js';
import { FilterAndDistribute } from '../../src/router/filter-distribute.js';
import { MemoryExecutionLog } from '../../src/router/execution-log.js';
import type { ExecutionRecord } from '../../src/types.js';
import { ctx, makeTool } from './fixtures.js';

const lookup = makeTool({
  name: 'person_lookup',
  scope: 'generalist',
  handler: (args: { id: string }) => ({ id: args.id, name: 'Ada' }),
});
const emailSearch = makeTool({
  name: 'email_search',
  scope: 'specialist',
  handler: async (args: { q: string }) => ({ hits: [`re: ${args.q}`] }),
});
const extract = makeTool({
  name: 'extract_dates',
  scope: 'specialist',
  routing: 'bypass',
  bypassReason: 'latency: typed extraction inline',
  handler: (args: { text: string }) => ({ dates: args.text.match(/\d{4}-\d{2}-\d{2}/g) ?? [] }),
});

function collect(router: EventRouter, filter: Parameters<EventRouter['observe']>[0]) {
  const seen: RoutedEvent[] = [];
  const sub = router.observe(filter, (e) => void seen.push(e));
  return { seen, sub };
}

const ALL_FIELDS = [
  'kind', 'sessionId', 'turnId', 'actor', 'tool', 'callId', 'args', 'result',
  'resultTruncated', 'isError', 'durationMs', 'at', 'scope', 'routing', 'attempt', 'outcome',
] as const;

function expectComplete(rec: ExecutionRecord) {
  for (const f of ALL_FIELDS) expect(rec, `field ${f}`).toHaveProperty(f);
  expect(rec.kind).toBe(rec.scope === 'specialist' ? 'specialist_execution' : 'generalist_execution');
  expect(typeof rec.result).toBe('string');
  expect(typeof rec.durationMs).toBe('number');
  expect(rec.durationMs).toBeGreaterThanOrEqual(0);
  expect(new Date(rec.at).toISOString()).toBe(rec.at);
  expect('bypassReason' in rec).toBe(rec.routing === 'bypass');
}

describe('EventRouter.dispatchTool', () => {
  it('router:generalist:routed-observable — a generalist call is a tool_call event any observer sees', async () => {
    const router = new EventRouter();
    const any = collect(router, {});
    const other = collect(router, { sessionId: 's2', type: /^tool_/ });
    const byType = collect(router, { type: 'tool_call:person_lookup', source: 'actor:triage' });
    const c = ctx({ sessionId: 's1' });
    const out = await router.dispatchTool(lookup, { id: 'p1' }, c);

    expect(out).toMatchObject({ callId: c.callId, isError: false, llmContent: '{"id":"p1","name":"Ada"}', data: { id: 'p1', name: 'Ada' } });
    expect(any.seen.map((e) => e.type)).toEqual(['tool_call:person_lookup', 'tool_result:person_lookup']);
    expect(any.seen[0]).toEqual({
      source: 'actor:triage', type: 'tool_call:person_lookup', payload: { id: 'p1' },
      sessionId: 's1', private: false, turnId: 't1', callId: c.callId,
    });
    expect(any.seen[1]!.payload).toEqual({ callId: c.callId, isError: false, result: { id: 'p1', name: 'Ada' } });
    expect(byType.seen).toHaveLength(1);
    // A filter naming another session sees only that session's events.
    expect(other.seen).toHaveLength(0);
  });

  it('router:specialist:private-to-session — routed specialist events reach only the calling session\'s observers', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const global = collect(router, {});
    const globalTyped = collect(router, { type: /^tool_call:/ });
    const otherSession = collect(router, { sessionId: 's2' });
    const sameSession = collect(router, { sessionId: 's1' });
    const c = ctx({ sessionId: 's1', actorName: 'email_researcher' });
    const out = await router.dispatchTool(emailSearch, { q: 'invoice' }, c);

    expect(out.isError).toBe(false);
    expect(out.llmContent).toBe('{"hits":["re: invoice"]}');
    expect(global.seen).toEqual([]);
    expect(globalTyped.seen).toEqual([]);
    expect(otherSession.seen).toEqual([]);
    expect(sameSession.seen.map((e) => [e.type, e.source, e.private])).toEqual([
      ['tool_call:email_search', 'actor:email_researcher', true],
      ['tool_result:email_search', 'actor:email_researcher', true],
    ]);
    // ... but the execution is logged.
    expect(log.list({ sessionId: 's1' })).toEqual([out.execution]);
    expect(out.execution).toMatchObject({ kind: 'specialist_execution', scope: 'specialist', routing: 'routed', actor: 'email_researcher', tool: 'email_search' });
    expectComplete(out.execution);
  });

  it('router:specialist:private-to-session — a private event routed by hand follows the same rule', () => {
    const router = new EventRouter();
    const global = collect(router, {});
    const mine = collect(router, { sessionId: 'a' });
    router.routeEvent('actor:x', 'progress', 1, { sessionId: 'a', private: true });
    router.routeEvent('actor:x', 'progress', 2, { sessionId: 'a' });
    router.routeEvent('actor:x', 'progress', 3, { sessionId: 'b' });
    expect(global.seen.map((e) => e.payload)).toEqual([2, 3]);
    expect(mine.seen.map((e) => e.payload)).toEqual([1, 2]);
    expect(() => router.routeEvent('a', 'b', 1, {} as never)).toThrow(/opts.sessionId must be a string/);
  });

  it('router:bypass:no-routed-event — a bypass call publishes nothing but is logged with its bypassReason', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const global = collect(router, {});
    const same = collect(router, { sessionId: 's1' });
    let overridden = false;
    router.handle('tool_call:extract_dates', () => { overridden = true; return {}; });
    const out = await router.dispatchTool(extract, { text: 'fly 2026-12-01 back 2026-12-09' }, ctx({ sessionId: 's1' }));

    expect(out.llmContent).toBe('{"dates":["2026-12-01","2026-12-09"]}');
    expect(global.seen).toEqual([]);
    expect(same.seen).toEqual([]);
    expect(overridden).toBe(false);
    expect(log.size).toBe(1);
    expect(out.execution).toMatchObject({
      kind: 'specialist_execution', routing: 'bypass', bypassReason: 'latency: typed extraction inline', isError: false,
      result: '{"dates":["2026-12-01","2026-12-09"]}',
    });
    expectComplete(out.execution);
  });

  it('router:handler:override — handle() replaces the tool\'s handler for routed calls; one per type', async () => {
    const router = new EventRouter();
    const seenCtx: string[] = [];
    const off = router.handle('tool_call:person_lookup', (args: { id: string }, c) => {
      seenCtx.push(`${c.actorName}/${c.callId}`);
      return { id: args.id, name: 'Grace (from handle)' };
    });
    expect(() => router.handle('tool_call:person_lookup', () => 1)).toThrow(/already registered/);
    expect(() => router.handle('person_lookup', () => 1)).toThrow(/tool_call:<toolName>/);
    expect(() => router.handle('tool_call:', () => 1)).toThrow(/tool_call:<toolName>/);
    const c = ctx();
    const out = await router.dispatchTool(lookup, { id: 'p2' }, c);
    expect(out.llmContent).toBe('{"id":"p2","name":"Grace (from handle)"}');
    expect(seenCtx).toEqual([`triage/${c.callId}`]);
    off();
    const back = await router.dispatchTool(lookup, { id: 'p2' }, ctx());
    expect(back.llmContent).toBe('{"id":"p2","name":"Ada"}');
  });

  it('router:errors:are-results — a throw or rejection becomes an isError result; dispatchTool resolves', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const sync = makeTool({ name: 'boom', scope: 'generalist', handler: () => { throw new Error('database is down'); } });
    const asyncTool = makeTool({ name: 'boom_async', scope: 'specialist', handler: async () => Promise.reject(new TypeError('bad id')) });
    const bypass = makeTool({ name: 'boom_inline', scope: 'specialist', routing: 'bypass', handler: () => { throw 'plain string'; } });

    const a = await router.dispatchTool(sync, {}, ctx());
    const b = await router.dispatchTool(asyncTool, {}, ctx());
    const d = await router.dispatchTool(bypass, {}, ctx());
    expect(a).toMatchObject({ isError: true, llmContent: 'tool "boom" failed: database is down', uiView: 'tool "boom" failed: database is down' });
    expect(a.data).toBeUndefined();
    expect(b).toMatchObject({ isError: true, llmContent: 'tool "boom_async" failed: bad id' });
    expect(d).toMatchObject({ isError: true, llmContent: 'tool "boom_inline" failed: plain string' });
    expect(a.execution).toMatchObject({ isError: true, result: '{"error":"tool \\"boom\\" failed: database is down"}' });
    expect(log.list().map((r) => [r.tool, r.isError])).toEqual([['boom', true], ['boom_async', true], ['boom_inline', true]]);
    for (const r of log.list()) expectComplete(r);
  });

  it('router:errors:are-results — a malformed AnnotatedRecord (e.g. hand-built) is an isError result, not a rejection', async () => {
    const router = new EventRouter();
    const forged = { kind: 'annotated-record', data: { a: 1 }, fields: { a: ['audit'] }, default: ['*'] };
    const out = await router.dispatchTool(makeTool({ name: 'forged', scope: 'generalist', handler: () => forged }), {}, ctx());
    expect(out.isError).toBe(true);
    expect(out.llmContent).toMatch(/^tool "forged" returned a result that could not be processed: .*"a" is not a JSON Pointer/);
    expectComplete(out.execution);
  });

  it('router:output:schema-checked — output that violates outputSchema is an isError result naming the paths', async () => {
    const router = new EventRouter();
    const schema = { type: 'object', required: ['total'], properties: { total: { type: 'number' }, currency: { type: 'string' } } };
    const bad = makeTool({ name: 'quote', scope: 'generalist', outputSchema: schema, handler: () => ({ currency: 3 }) });
    const good = makeTool({ name: 'quote_ok', scope: 'generalist', outputSchema: schema, handler: () => ({ total: 10, currency: 'EUR' }) });
    const annotatedBad = makeTool({
      name: 'quote_annotated', scope: 'generalist', outputSchema: schema,
      handler: () => annotate({ total: 'ten' }, { fields: { '/total': ['audit'] } }),
    });

    const out = await router.dispatchTool(bad, {}, ctx());
    expect(out.isError).toBe(true);
    expect(out.llmContent).toMatch(/^tool "quote" returned output that does not match its outputSchema: /);
    expect(out.llmContent).toContain("(root) must have required property 'total'");
    expect(out.llmContent).toContain('/currency must be string');
    expect(out.data).toBeUndefined();
    expect(JSON.parse(out.execution.result)).toEqual({ error: out.llmContent, result: { currency: 3 } });

    expect((await router.dispatchTool(good, {}, ctx())).isError).toBe(false);
    const ann = await router.dispatchTool(annotatedBad, {}, ctx());
    expect(ann.isError).toBe(true);
    expect(ann.llmContent).toContain('/total must be number');
  });

  it('router:annotated:llm-view-is-result — a generalist AnnotatedRecord fans out; llm view is the result, ui view the uiView', async () => {
    const audit: unknown[] = [];
    const email: unknown[] = [];
    const fad = new FilterAndDistribute();
    fad.register({ id: 'audit', deliver: (v, m) => void audit.push({ v, tool: m.tool, kind: m.dataKind }) });
    fad.register({ id: 'formatter:email', deliver: (v) => void email.push(v) });
    const router = new EventRouter({ filterAndDistribute: fad });
    const data = { pricePerPerson: 129, internalCost: 412.5, note: 'window seats' };
    const flights = makeTool({
      name: 'flight_search', scope: 'generalist',
      handler: async () => annotate(data, {
        kind: 'flights',
        fields: { '/internalCost': ['audit'], '/pricePerPerson': ['llm-session', 'ui-stream', 'audit'], '/note': ['ui-stream', 'formatter:*'] },
        default: [],
      }),
    });
    const out = await router.dispatchTool(flights, {}, ctx());
    expect(out.isError).toBe(false);
    expect(out.llmContent).toBe('{"pricePerPerson":129}');
    expect(out.uiView).toEqual({ pricePerPerson: 129, note: 'window seats' });
    // The envelope's data is the peer-response view: nothing in this record is annotated for it.
    expect(out.data).toBeUndefined();
    expect(audit).toEqual([{ v: { pricePerPerson: 129, internalCost: 412.5 }, tool: 'flight_search', kind: 'flights' }]);
    expect(email).toEqual([{ note: 'window seats' }]);
    // The log keeps the whole record, so a replay restores an AnnotatedRecord.
    expect(JSON.parse(out.execution.result)).toMatchObject({ kind: 'annotated-record', data, dataKind: 'flights' });
  });

  it('router:annotated:specialist-filtered-not-distributed — a specialist record is filtered but reaches no other destination', async () => {
    const delivered: string[] = [];
    const fad = new FilterAndDistribute({ destinations: [{ id: 'audit', deliver: () => void delivered.push('audit') }, { id: 'cache', deliver: () => void delivered.push('cache') }] });
    const router = new EventRouter({ filterAndDistribute: fad });
    const tool = makeTool({
      name: 'mailbox_scan', scope: 'specialist',
      handler: () => annotate({ subject: 'Invoice', rawHeaders: 'X-Secret: 1' }, { fields: { '/rawHeaders': ['audit'] } }),
    });
    const out = await router.dispatchTool(tool, {}, ctx());
    expect(out.llmContent).toBe('{"subject":"Invoice"}');
    expect(out.uiView).toEqual({ subject: 'Invoice' });
    expect(delivered).toEqual([]);
  });

  it('router:result:llm-content — strings pass through; nothing visible is null; unserialisable is an error', async () => {
    const router = new EventRouter();
    const s = await router.dispatchTool(makeTool({ name: 'say', scope: 'generalist', handler: () => 'plain text' }), {}, ctx());
    expect(s).toMatchObject({ llmContent: 'plain text', uiView: 'plain text', isError: false });
    expect(s.data).toBeUndefined();
    expect(s.execution.result).toBe('"plain text"');
    const v = await router.dispatchTool(makeTool({ name: 'noop', scope: 'generalist', handler: () => undefined }), {}, ctx());
    expect(v).toMatchObject({ llmContent: 'null', isError: false });
    const hidden = await router.dispatchTool(
      makeTool({ name: 'hidden', scope: 'generalist', handler: () => annotate({ a: 1 }, { default: ['audit'] }) }), {}, ctx());
    expect(hidden).toMatchObject({ llmContent: 'null', isError: false });
    expect(hidden.uiView).toBeUndefined();
    expect(hidden.data).toBeUndefined();
    const big = await router.dispatchTool(makeTool({ name: 'big', scope: 'generalist', handler: () => ({ n: 10n }) }), {}, ctx());
    expect(big.isError).toBe(true);
    expect(big.llmContent).toMatch(/^tool "big" returned a result that is not JSON-serialisable: /);
    expect(big.data).toBeUndefined();
    expectComplete(big.execution);
  });

  it('router:result:llm-content — A result that cannot be serialised is an isError result: a function, a symbol, a toJSON() that returns nothing (never "null"); undefined stays null', async () => {
    const router = new EventRouter();
    const cases: [string, unknown][] = [
      ['returns_fn', async function fetchRates() { return 1; }],
      ['returns_symbol', Symbol('x')],
      ['returns_tojson_nothing', { toJSON: () => undefined }],
    ];
    for (const [name, value] of cases) {
      const out = await router.dispatchTool(makeTool({ name, scope: 'generalist', handler: () => value }), {}, ctx());
      expect(out, name).toMatchObject({ isError: true, execution: { outcome: 'error', isError: true } });
      expect(out.llmContent).toMatch(new RegExp(`^tool "${name}" returned a result that is not JSON-serialisable: `));
      expect(out.data).toBeUndefined();
      expectComplete(out.execution);
    }
    const nothing = await router.dispatchTool(makeTool({ name: 'returns_nothing', scope: 'generalist', handler: () => undefined }), {}, ctx());
    expect(nothing).toMatchObject({ llmContent: 'null', isError: false, execution: { outcome: 'ok' } });
  });

  it('router:distribute:failed-not-distributed — A record whose llm-session view cannot be serialised (the model is told the call failed) MUST reach no destination, and its results$ entry carries no record', async () => {
    const got: string[] = [];
    const fad = new FilterAndDistribute();
    fad.register({ id: 'cache', deliver: (_v, m) => void got.push(`deliver:${m.callId}`) });
    fad.views$('cache').subscribe((v) => void got.push(`views$:${v.meta.callId}`));
    const router = new EventRouter({ filterAndDistribute: fad });
    const results: RoutedResult[] = [];
    router.results$.subscribe((r) => void results.push(r));
    const viaOperator: string[] = [];
    router.results$.pipe(filterAndDistribute(['cache'])).subscribe((g) => g.subscribe((v) => void viaOperator.push(v.meta.callId)));
    // The llm-session view carries a BigInt; the cache view does not.
    const quote = makeTool({
      name: 'quote_bigint', scope: 'generalist',
      handler: (a: { id: bigint | number }) => annotate({ price: 10, internal: { id: a.id } }, { fields: { '/price': ['cache', 'llm-session'], '/internal': ['llm-session'] } }),
    });
    const bad = await router.dispatchTool(quote, { id: 7n }, ctx({ callId: 'q1' }));
    expect(bad.isError).toBe(true);
    expect(bad.llmContent).toMatch(/^tool "quote_bigint" returned a result that is not JSON-serialisable: /);
    expect(got).toEqual([]);
    expect(viaOperator).toEqual([]);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ isError: true, outcome: 'error' });
    expect(results[0]!.record).toBeUndefined();
    // One that serialises is distributed as before.
    const ok = await router.dispatchTool(quote, { id: 7 }, ctx({ callId: 'q2' }));
    expect(ok.isError).toBe(false);
    expect(got).toEqual(['views$:q2', 'deliver:q2']);
    expect(viaOperator).toEqual(['q2']);
    expect(results[1]!.record).toMatchObject({ kind: 'annotated-record' });
  });

  it('router:dispatch:data-peer-view — an AnnotatedRecord is data-bearing through its peer-response view only', async () => {
    const router = new EventRouter();
    const data = { to: 'Corfu', flights: [{ flight: 'EJ4521', price: 94 }], margin: 12 };
    const tool = makeTool({ name: 'search', scope: 'generalist', handler: async () => annotate(data, { fields: { '/margin': ['audit'] } }) });
    const out = await router.dispatchTool(tool, {}, ctx());
    expect(out.data).toEqual({ to: 'Corfu', flights: [{ flight: 'EJ4521', price: 94 }] });
  });

  it('router:dispatch:data — object and array results are data-bearing; primitives are not', async () => {
    const router = new EventRouter();
    const arr = await router.dispatchTool(makeTool({ name: 'list', scope: 'generalist', handler: () => [1, 2] }), {}, ctx());
    expect(arr.data).toEqual([1, 2]);
    const num = await router.dispatchTool(makeTool({ name: 'count', scope: 'generalist', handler: () => 7 }), {}, ctx());
    expect(num.data).toBeUndefined();
    expect(num.llmContent).toBe('7');
  });

  it('router:cancel:aborted — an aborted call does not run; one aborted mid-flight settles at once as cancelled', async () => {
    const router = new EventRouter();
    let ran = 0;
    const slow = makeTool({ name: 'slow', scope: 'specialist', handler: () => { ran += 1; return new Promise(() => {}); } });
    const pre = new AbortController();
    pre.abort();
    const a = await router.dispatchTool(slow, {}, ctx({ signal: pre.signal }));
    expect(a).toMatchObject({ isError: true, llmContent: 'tool "slow" was cancelled before it ran' });
    expect(ran).toBe(0);
    const mid = new AbortController();
    const p = router.dispatchTool(slow, {}, ctx({ signal: mid.signal }));
    mid.abort();
    const b = await p;
    expect(ran).toBe(1);
    expect(b).toMatchObject({ isError: true, llmContent: 'tool "slow" was cancelled' });
    expectComplete(b.execution);
  });

  it('router:cancel:interrupt — an interrupt aborts the handler\'s signal but is awaited: a handler that honours it is cancelled, one that ignores it finishes and its result counts', async () => {
    const router = new EventRouter();
    const seen: AbortSignal[] = [];
    const polite = makeTool({
      name: 'polite',
      scope: 'specialist',
      handler: (_args: unknown, c: { signal: AbortSignal }) => {
        seen.push(c.signal);
        return new Promise((_resolve, reject) => c.signal.addEventListener('abort', () => reject(c.signal.reason), { once: true }));
      },
    });
    const pre = new AbortController();
    pre.abort();
    const a = await router.dispatchTool(polite, {}, ctx({ signal: undefined, interrupt: pre.signal }));
    expect(a).toMatchObject({ isError: true, llmContent: 'tool "polite" was cancelled before it ran' });
    expect(seen).toHaveLength(0);

    const turn = new AbortController();
    const p = router.dispatchTool(polite, {}, ctx({ signal: undefined, interrupt: turn.signal }));
    turn.abort();
    const b = await p;
    expect(seen[0]).toBe(turn.signal); // the interrupt itself when it is the only signal
    expect(b).toMatchObject({ isError: true, llmContent: 'tool "polite" was cancelled', execution: { outcome: 'cancelled' } });
    expectComplete(b.execution);

    let finish!: () => void;
    let stubbornSignal: AbortSignal | undefined;
    const stubborn = makeTool({
      name: 'stubborn',
      scope: 'specialist',
      handler: (_args: unknown, c: { signal: AbortSignal }) => {
        stubbornSignal = c.signal;
        return new Promise((resolve) => (finish = () => resolve({ booked: true })));
      },
    });
    const late = new AbortController();
    let settled = false;
    const q = router.dispatchTool(stubborn, {}, ctx({ signal: undefined, interrupt: late.signal })).then((d) => ((settled = true), d));
    late.abort();
    await new Promise((r) => setImmediate(r)); // every pending callback has run: the dispatch still waits
    expect(stubbornSignal!.aborted).toBe(true);
    expect(settled).toBe(false);
    finish();
    expect(await q).toMatchObject({ isError: false, llmContent: '{"booked":true}', execution: { outcome: 'ok' } });
  });

  it('router:cancel:none — a call given neither a cancel signal nor an interrupt hands its handler a signal that never aborts, the same object on every read, kept by a spread of the context', async () => {
    const router = new EventRouter();
    const reads: { same: boolean; aborted: boolean; spread: AbortSignal; keys: string[] }[] = [];
    const plain = makeTool({
      name: 'plain',
      scope: 'generalist',
      handler: (_args: unknown, c: { signal: AbortSignal }) => {
        const copy = { ...c };
        reads.push({ same: c.signal === c.signal, aborted: c.signal.aborted, spread: copy.signal, keys: Object.keys(c) });
        expect(copy.signal).toBe(c.signal);
        return { ok: true };
      },
    });
    const out = await router.dispatchTool(plain, {}, ctx({ signal: undefined, interrupt: undefined, userId: 'u1' }));
    expect(out).toMatchObject({ isError: false, execution: { outcome: 'ok' } });
    expect(reads).toHaveLength(1);
    expect(reads[0]!.same).toBe(true);
    expect(reads[0]!.aborted).toBe(false);
    expect(reads[0]!.spread).toBeInstanceOf(AbortSignal);
    expect(reads[0]!.keys).toEqual(expect.arrayContaining(['actorName', 'sessionId', 'turnId', 'callId', 'signal', 'userId']));
  });

  it('router:dispatch:always-a-promise — dispatchTool answers with a promise even when it cannot start (a context whose interrupt is not an AbortSignal rejects; it does not throw at the caller)', async () => {
    const router = new EventRouter();
    const plain = makeTool({ name: 'plain2', scope: 'generalist', handler: () => ({ ok: true }) });
    let p: Promise<unknown> | undefined;
    expect(() => {
      p = router.dispatchTool(plain, {}, ctx({ interrupt: {} as AbortSignal }));
    }).not.toThrow();
    expect(p).toBeInstanceOf(Promise);
    await expect(p).rejects.toThrow(TypeError);
    // A handler that answers at once still resolves through a promise, never synchronously.
    let resolved = false;
    const q = router.dispatchTool(plain, {}, ctx()).then((d) => ((resolved = true), d));
    expect(resolved).toBe(false);
    expect(await q).toMatchObject({ isError: false, execution: { outcome: 'ok' } });
  });

  it('router:dispatch:no-global-getter — a routed call that answers at once never reads the global `performance` (on Node 20 a getter, run on every read), and still times itself', async () => {
    const router = new EventRouter();
    const own = Object.getOwnPropertyDescriptor(globalThis, 'performance')!;
    let reads = 0;
    const real = globalThis.performance;
    Object.defineProperty(globalThis, 'performance', {
      configurable: true,
      enumerable: true,
      get() {
        reads++;
        return real;
      },
    });
    let pending: Promise<ToolDispatch>;
    try {
      // The whole call runs in this synchronous stretch: the handler answers at once.
      pending = router.dispatchTool(lookup, { id: 'p7' }, ctx());
    } finally {
      Object.defineProperty(globalThis, 'performance', own);
    }
    const d = await pending;
    expect(reads).toBe(0);
    expect(d).toMatchObject({ isError: false, execution: { outcome: 'ok', routing: 'routed' } });
    expect(d.execution.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('router:cancel:both — given a cancel signal and an interrupt, the handler\'s signal aborts on either, and only the cancel stops the wait', async () => {
    const router = new EventRouter();
    let finish!: () => void;
    const signals: AbortSignal[] = [];
    const stubborn = makeTool({
      name: 'stubborn_both',
      scope: 'specialist',
      handler: (_args: unknown, c: { signal: AbortSignal }) => {
        signals.push(c.signal);
        return new Promise((resolve) => (finish = () => resolve({ booked: true })));
      },
    });
    const cancel1 = new AbortController();
    const turn1 = new AbortController();
    const q = router.dispatchTool(stubborn, {}, ctx({ signal: cancel1.signal, interrupt: turn1.signal }));
    turn1.abort();
    expect(signals[0]!.aborted).toBe(true);
    finish();
    expect(await q).toMatchObject({ isError: false, llmContent: '{"booked":true}' });

    const cancel2 = new AbortController();
    const turn2 = new AbortController();
    const r = router.dispatchTool(stubborn, {}, ctx({ signal: cancel2.signal, interrupt: turn2.signal }));
    cancel2.abort();
    expect(signals[1]!.aborted).toBe(true);
    expect(await r).toMatchObject({ isError: true, llmContent: 'tool "stubborn_both" was cancelled', execution: { outcome: 'cancelled' } });
    expect(turn2.signal.aborted).toBe(false);
  });

  it('router:observe:errors-contained — a throwing observer affects neither the call nor other observers', async () => {
    const errs: string[] = [];
    const router = new EventRouter({ onError: (e, where) => void errs.push(`${where}: ${(e as Error).message}`) });
    router.observe({}, () => { throw new Error('observer bug'); });
    const ok = collect(router, {});
    const out = await router.dispatchTool(lookup, { id: 'p3' }, ctx());
    expect(out.isError).toBe(false);
    expect(ok.seen).toHaveLength(2);
    expect(errs).toEqual(['observer: observer bug', 'observer: observer bug']);
  });

  it('router:every-call:logged — every call (routed, bypass, failing) is logged once with every field', async () => {
    const log = new MemoryExecutionLog();
    const sinkErrors: string[] = [];
    const router = new EventRouter({ executionLog: log, now: () => Date.UTC(2026, 10, 22, 1, 2, 3, 4) });
    const fail = makeTool({ name: 'fail', scope: 'generalist', handler: () => { throw new Error('x'); } });
    const c1 = ctx({ sessionId: 'a' });
    const c2 = ctx({ sessionId: 'b', approvalDecision: { approvalId: 'ap_1', decision: 'approved', by: { userId: 'u' }, via: 'api' } });
    await router.dispatchTool(lookup, { id: 'p' }, c1);
    await router.dispatchTool(emailSearch, { q: 'x' }, c2);
    await router.dispatchTool(extract, { text: '' }, ctx());
    await router.dispatchTool(fail, {}, ctx());
    const recs = log.list();
    expect(recs.map((r) => [r.tool, r.kind, r.routing])).toEqual([
      ['person_lookup', 'generalist_execution', 'routed'],
      ['email_search', 'specialist_execution', 'routed'],
      ['extract_dates', 'specialist_execution', 'bypass'],
      ['fail', 'generalist_execution', 'routed'],
    ]);
    for (const r of recs) {
      expectComplete(r);
      expect(r.at).toBe('2026-11-22T01:02:03.004Z');
    }
    expect(recs[0]).toMatchObject({ sessionId: 'a', turnId: 't1', actor: 'triage', callId: c1.callId, args: { id: 'p' } });
    expect(recs[1]!.approvalId).toBe('ap_1');
    expect('approvalId' in recs[0]!).toBe(false);

    // A sink that throws does not lose the result.
    const r2 = new EventRouter({ executionLog: { append: () => { throw new Error('disk full'); } }, onError: (e) => void sinkErrors.push((e as Error).message) });
    const out = await r2.dispatchTool(lookup, { id: 'q' }, ctx());
    expect(out.isError).toBe(false);
    expect(sinkErrors).toEqual(['disk full']);
  });

  it('router:execution:truncated — the logged result is cut to maxResultChars and flagged', async () => {
    const router = new EventRouter({ maxResultChars: 40 });
    const long = makeTool({ name: 'long', scope: 'generalist', handler: () => ({ text: 'x'.repeat(100) }) });
    const out = await router.dispatchTool(long, {}, ctx());
    expect(out.execution.result).toHaveLength(40);
    expect(out.execution.result).toBe(`{"text":"${'x'.repeat(31)}`);
    expect(out.execution.resultTruncated).toBe(true);
    // The tool result itself is never truncated.
    expect(out.llmContent).toBe(JSON.stringify({ text: 'x'.repeat(100) }));
    const short = await router.dispatchTool(lookup, { id: 'p' }, ctx());
    expect(short.execution.resultTruncated).toBe(false);
    expect(() => new EventRouter({ maxResultChars: -1 })).toThrow(/maxResultChars must be a non-negative integer/);
  });

  it('router:observe:filter — unsubscribing stops delivery; RegExp g flag does not skip events; close releases observers', async () => {
    const router = new EventRouter();
    const g = collect(router, { type: /tool_call:/g });
    const once = collect(router, {});
    await router.dispatchTool(lookup, { id: '1' }, ctx());
    once.sub.unsubscribe();
    await router.dispatchTool(lookup, { id: '2' }, ctx());
    expect(g.seen.map((e) => e.payload)).toEqual([{ id: '1' }, { id: '2' }]);
    expect(once.seen).toHaveLength(2);
    router.close();
    expect(g.sub.closed).toBe(true);
    await router.dispatchTool(lookup, { id: '3' }, ctx());
    expect(g.seen).toHaveLength(2);
  });
});
