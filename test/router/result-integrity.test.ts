/**
 * What a call's result becomes when something about it is wrong: a view that will be persisted but
 * cannot be serialised, a handler whose returned value cannot be inspected, a handler that fails
 * for its own reason after an interrupt. dispatchTool never rejects, and the model is never told
 * a call succeeded (or was cancelled) when it did not.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { annotate } from '../../src/router/annotated.js';
import { MemoryExecutionLog } from '../../src/router/execution-log.js';
import { FilterAndDistribute } from '../../src/router/filter-distribute.js';
import { EventRouter, type RoutedResult } from '../../src/router/router.js';
import type { ToolContext } from '../../src/registries/types.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { answer, harness, part, respond, sequence, toolResultsIn, toolUse } from '../runtime/helpers.js';
import { ctx, makeTool } from './fixtures.js';

const BIG = 9007199254740993n;
const NOT_JSON = (name: string): RegExp => new RegExp(`^tool "${name}" returned a result that is not JSON-serialisable: `);

/** A row whose toJSON() hides its BigInt id: the whole record serialises, a view that copies the row's own fields does not. */
class Row {
  id = BIG;
  label = 'seat 12A';
  toJSON(): unknown {
    return { label: this.label };
  }
}

describe('router:result:persisted-views', () => {
  it('router:result:persisted-views — "every view that is persisted MUST serialise": a BigInt only the ui-stream view, the peer-response data or the execution log sees is an isError result naming the tool and the view, logged as an error and distributed to no one', async () => {
    const log = new MemoryExecutionLog();
    const delivered: string[] = [];
    const fad = new FilterAndDistribute();
    fad.register({ id: 'cache', deliver: (_v, m) => void delivered.push(m.callId) });
    const router = new EventRouter({ filterAndDistribute: fad, executionLog: log });
    const results: RoutedResult[] = [];
    router.results$.subscribe((r) => void results.push(r));
    const cases: [name: string, scope: 'generalist' | 'specialist', make: () => unknown, names: RegExp][] = [
      ['ui_only_bigint', 'generalist', () => annotate({ price: 12, rowId: BIG }, { fields: { '/rowId': ['ui-stream', 'cache'] } }), /its ui-stream view: .*BigInt/],
      ['peer_only_bigint', 'generalist', () => annotate({ price: 12, rowId: BIG }, { fields: { '/rowId': ['peer-response'] } }), /its peer-response view: .*BigInt/],
      ['audit_only_bigint', 'generalist', () => annotate({ price: 12, rowId: BIG }, { fields: { '/rowId': ['audit'] } }), /the whole record \(kept by the execution log\): .*BigInt/],
      ['specialist_ui_bigint', 'specialist', () => annotate({ price: 12, rowId: BIG }, { fields: { '/rowId': ['ui-stream'] } }), /its ui-stream view: .*BigInt/],
      // The whole record serialises (Row.toJSON hides the id), the ui-stream view (a copy of the row's own fields) does not.
      ['ui_copy_bigint', 'generalist', () => annotate({ row: new Row() }, { fields: { '/row/label': ['llm-session', 'cache'], '/row/id': ['ui-stream'] } }), /its ui-stream view: .*BigInt/],
    ];
    for (const [name, scope, make, names] of cases) {
      const out = await router.dispatchTool(makeTool({ name, scope, handler: make as () => unknown }), {}, ctx({ callId: name }));
      expect(out, name).toMatchObject({ isError: true, execution: { outcome: 'error', isError: true } });
      expect(out.llmContent, name).toMatch(NOT_JSON(name));
      expect(out.llmContent, name).toMatch(names);
      expect(out.uiView, name).toBe(out.llmContent);
      expect(out.data, name).toBeUndefined();
      expect(JSON.parse(out.execution.result), name).toEqual({ error: out.llmContent });
    }
    expect(log.list().map((r) => r.outcome)).toEqual(cases.map(() => 'error'));
    expect(delivered).toEqual([]);
    expect(results.every((r) => r.isError && r.record === undefined)).toBe(true);

    // Views that are plain JSON: a success, the whole record logged, distributed as before.
    const fine = makeTool({ name: 'ui_only_fine', scope: 'generalist', handler: () => annotate({ price: 12, rowId: 7 }, { fields: { '/rowId': ['ui-stream', 'cache'] } }) });
    const ok = await router.dispatchTool(fine, {}, ctx({ callId: 'fine' }));
    expect(ok).toMatchObject({ isError: false, llmContent: '{"price":12}', uiView: { price: 12, rowId: 7 }, data: { price: 12 } });
    expect(JSON.parse(ok.execution.result)).toMatchObject({ kind: 'annotated-record', data: { price: 12, rowId: 7 } });
    expect(delivered).toEqual(['fine']);
  });

  it('router:result:persisted-views — through a runtime on SQLite, a BigInt only the UI sees fails the call, "before distribution", and the turn settles (the group commit is not poisoned)', async () => {
    const { rt, model } = harness(
      sequence([answer(toolUse('mixed', { q: 'a' }, 'toolu_m')), answer(respond([part('response', 'done')], 'complete'))]),
      { store: createSqliteStore({ path: ':memory:' }) },
    );
    try {
      rt.registries.tools.register({
        name: 'mixed',
        description: 'The mixed tool',
        inputSchema: { type: 'object' },
        scope: 'generalist',
        handler: () => annotate({ price: 12, rowId: BIG }, { fields: { '/rowId': ['ui-stream'] } }),
      });
      rt.registries.actors.register({ name: 'a', tools: ['mixed'] });
      const s = await rt.createSession({ actor: 'a' });
      const r = await s.send('go');
      const timeout = new Promise((resolve) => setTimeout(() => resolve('never settled'), 5_000).unref());
      const settled = await Promise.race([r.settled, timeout]);
      expect(settled, JSON.stringify(settled)).toMatchObject({ finalizedBy: "complete" });
      const told = toolResultsIn(model.requests[1]!);
      expect(told).toHaveLength(1);
      expect(told[0]).toMatchObject({ is_error: true });
      expect(JSON.stringify(told[0].content)).toMatch(/tool \\"mixed\\" returned a result that is not JSON-serialisable: its ui-stream view/);
      expect((await s.executions()).map((e) => e.outcome)).toEqual(['error']);
    } finally {
      await rt.close();
    }
  });
});

describe('router:errors:are-results', () => {
  it('router:errors:are-results — "dispatchTool MUST NOT reject": a returned value whose `then` cannot be read (a throwing getter, a revoked Proxy) is a failed result, logged, on every path', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const throwingThen = () => ({
      get then(): never {
        throw new Error('then getter boom');
      },
    });
    const revoked = () => {
      const p = Proxy.revocable({}, {});
      p.revoke();
      return p.proxy;
    };
    const cases: [string, () => unknown, Record<string, unknown> | undefined, Partial<Parameters<typeof ctx>[0]>][] = [
      ['then_getter', throwingThen, undefined, {}],
      ['then_getter_nosignal', throwingThen, undefined, { signal: undefined }],
      ['then_revoked', revoked, undefined, {}],
      ['then_getter_timed', throwingThen, { timeoutMs: 1_000 }, {}],
    ];
    for (const [name, handler, extra, over] of cases) {
      const tool = makeTool({ name, scope: 'generalist', handler, ...(extra === undefined ? {} : { extra }) });
      const out = await router.dispatchTool(tool, {}, ctx(over));
      expect(out, name).toMatchObject({ isError: true, execution: { outcome: 'error', isError: true } });
      expect(out.llmContent, name).toMatch(new RegExp(`^tool "${name}" failed: `));
    }
    const bypass = makeTool({ name: 'then_bypass', scope: 'specialist', routing: 'bypass', handler: throwingThen });
    expect(await router.dispatchTool(bypass, {}, ctx())).toMatchObject({ isError: true, llmContent: 'tool "then_bypass" failed: then getter boom' });
    expect(log.list().map((r) => [r.tool, r.outcome])).toEqual([...cases.map(([n]) => [n, 'error']), ['then_bypass', 'error']]);
  });

  it('router:errors:are-results — "a handler\'s throw (or rejected promise) becomes an isError result": a `then` that throws when called, or a thrown value that cannot be read, fails the call and leaves no listener on the caller\'s signal', async () => {
    const router = new EventRouter();
    const throwsWhenCalled = () => ({ then: () => { throw new Error('then call boom'); } });
    const caller = new AbortController();
    for (const [name, extra] of [['then_call', undefined], ['then_call_timed', { timeoutMs: 1_000 }]] as const) {
      const tool = makeTool({ name, scope: 'generalist', handler: throwsWhenCalled, ...(extra === undefined ? {} : { extra }) });
      expect(await router.dispatchTool(tool, {}, ctx({ signal: caller.signal })), name).toMatchObject({ isError: true, llmContent: `tool "${name}" failed: then call boom` });
    }
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    const unreadable = () => {
      const p = Proxy.revocable(new Error('x'), {});
      p.revoke();
      return p.proxy;
    };
    const cases: [string, () => unknown][] = [
      ['throws_revoked', () => { throw unreadable(); }],
      ['rejects_revoked', async () => { throw unreadable(); }],
      ['throws_bad_message', () => { throw Object.defineProperty(new Error(), 'message', { get() { throw new Error('no'); } }); }],
      ['throws_no_proto', () => { throw Object.create(null); }],
    ];
    for (const [name, handler] of cases) {
      const out = await router.dispatchTool(makeTool({ name, scope: 'generalist', handler }), {}, ctx());
      expect(out, name).toMatchObject({ isError: true, execution: { outcome: 'error' } });
      expect(out.llmContent, name).toMatch(new RegExp(`^tool "${name}" failed: `));
    }
  });
});

describe('router:cancel:interrupt', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('router:cancel:interrupt — "one that ignores it finishes and its result counts": a handler that ignores the interrupt and then fails for its own reason is reported as failed, with its message', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const pay = makeTool({
      name: 'pay', scope: 'generalist',
      handler: async () => {
        await sleep(20);
        throw new Error('card declined');
      },
    });
    for (const over of [{ signal: undefined }, { signal: new AbortController().signal }]) {
      const turn = new AbortController();
      const p = router.dispatchTool(pay, {}, ctx({ ...over, interrupt: turn.signal }));
      setTimeout(() => turn.abort(), 5);
      const out = await p;
      expect(out).toMatchObject({ isError: true, llmContent: 'tool "pay" failed: card declined', execution: { outcome: 'error' } });
      expect(JSON.parse(out.execution.result)).toEqual({ error: 'tool "pay" failed: card declined' });
    }
    // The same under a timeout (the other dispatch path), and a retry policy that must not retry an interrupted call.
    let runs = 0;
    const payTimed = makeTool({
      name: 'pay_timed', scope: 'generalist', extra: { timeoutMs: 5_000, idempotent: true, retry: { attempts: 3 } },
      handler: async () => {
        runs += 1;
        await sleep(20);
        throw new Error('card declined');
      },
    });
    const turn = new AbortController();
    const p = router.dispatchTool(payTimed, {}, ctx({ signal: undefined, interrupt: turn.signal }));
    setTimeout(() => turn.abort(), 5);
    const out = await p;
    // No "(attempt 1 of 3)": the call was interrupted, so no retry follows (router:retry:exhausted).
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "pay_timed" failed: card declined', execution: { outcome: 'error' } });
    expect(runs).toBe(1);
  });

  it('router:cancel:interrupt — "a handler that honours it (rejects) settles as cancelled": the signal\'s reason, an AbortError, a TimeoutError, or an error caused by the reason', async () => {
    const router = new EventRouter();
    const honours: [string, (c: ToolContext) => unknown][] = [
      ['honours_reason', (c) => c.signal.reason],
      ['honours_aborterror', () => Object.assign(new Error('The operation was aborted'), { name: 'AbortError' })],
      ['honours_domabort', () => new DOMException('aborted', 'AbortError')],
      ['honours_timeouterror', () => new DOMException('signal timed out', 'TimeoutError')],
      ['honours_cause', (c) => new Error('request aborted', { cause: c.signal.reason })],
    ];
    for (const [name, reject] of honours) {
      const tool = makeTool({
        name, scope: 'specialist',
        handler: (_a: unknown, c: ToolContext) => new Promise((_r, rej) => c.signal.addEventListener('abort', () => rej(reject(c)), { once: true })),
      });
      const turn = new AbortController();
      const p = router.dispatchTool(tool, {}, ctx({ signal: undefined, interrupt: turn.signal }));
      turn.abort(new Error('turn interrupted'));
      expect(await p, name).toMatchObject({ isError: true, llmContent: `tool "${name}" was cancelled`, execution: { outcome: 'cancelled' } });
    }
    // An AbortError with no interrupt at all is the handler's own failure.
    const own = makeTool({ name: 'own_abort', scope: 'generalist', handler: async () => { throw new DOMException('inner fetch aborted', 'AbortError'); } });
    expect(await router.dispatchTool(own, {}, ctx())).toMatchObject({ isError: true, llmContent: 'tool "own_abort" failed: inner fetch aborted', execution: { outcome: 'error' } });
  });
});
