/**
 * Timeouts, retries and cancellation of routed calls (spec 002 "Routed specialist ... Cancellation,
 * retry, and audit instrumentation still apply"), at the router: every attempt is logged.
 */
import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryExecutionLog } from '../../src/router/execution-log.js';
import { EventRouter, type RoutedResult } from '../../src/router/router.js';
import type { ToolContext } from '../../src/registries/types.js';
import { ctx, makeTool } from './fixtures.js';

/** A handler that fails `failures` times, then answers; records the signal of every run. */
function flaky(failures: number) {
  const runs: AbortSignal[] = [];
  return {
    runs,
    handler: async (_args: unknown, c: ToolContext) => {
      runs.push(c.signal);
      if (runs.length <= failures) throw new Error(`flake ${runs.length}`);
      return { ok: true, run: runs.length };
    },
  };
}

/** A handler that never settles unless its signal aborts (then it rejects, as fetch does). */
function hanging() {
  const seen: AbortSignal[] = [];
  return {
    seen,
    handler: (_args: unknown, c: ToolContext) =>
      new Promise((_resolve, reject) => {
        seen.push(c.signal);
        c.signal.addEventListener('abort', () => reject(c.signal.reason));
      }),
  };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('routed calls: timeouts', () => {
  it('router:timeout:error-result — a call over its timeoutMs aborts its signal and settles as an isError result naming the timeout', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const h = hanging();
    const tool = makeTool({ name: 'slow_search', scope: 'generalist', handler: h.handler, extra: { timeoutMs: 40 } });
    const p = router.dispatchTool(tool, { q: 'x' }, ctx());
    await vi.advanceTimersByTimeAsync(39);
    expect(h.seen[0]!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const out = await p;
    expect(h.seen[0]!.aborted).toBe(true);
    expect((h.seen[0]!.reason as Error).name).toBe('TimeoutError');
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "slow_search" timed out after 40 ms', uiView: 'tool "slow_search" timed out after 40 ms' });
    expect(out.data).toBeUndefined();
    expect(log.list()).toMatchObject([{ tool: 'slow_search', attempt: 1, outcome: 'timeout', isError: true, result: '{"error":"tool \\"slow_search\\" timed out after 40 ms"}' }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('router:timeout:in-time — a call that answers within its timeout is an ordinary result and leaves no timer behind', async () => {
    const router = new EventRouter();
    const tool = makeTool({
      name: 'quick', scope: 'generalist', extra: { timeoutMs: 1000 },
      handler: () => new Promise((r) => setTimeout(() => r({ ok: 1 }), 10)),
    });
    const p = router.dispatchTool(tool, {}, ctx());
    await vi.advanceTimersByTimeAsync(10);
    expect(await p).toMatchObject({ isError: false, llmContent: '{"ok":1}', execution: { attempt: 1, outcome: 'ok' } });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('router:timeout:no-listener-left — A timed-out call MUST leave no listener on the caller\'s signal, even when its handler never settles', async () => {
    const router = new EventRouter();
    const tool = makeTool({ name: 'never_settles', scope: 'generalist', extra: { timeoutMs: 20 }, handler: () => new Promise(() => {}) });
    // A long-lived cancel signal (a server's shutdown signal) shared by every call.
    const shutdown = new AbortController();
    for (let i = 0; i < 3; i++) {
      const p = router.dispatchTool(tool, {}, ctx({ signal: shutdown.signal }));
      await vi.advanceTimersByTimeAsync(20);
      expect(await p).toMatchObject({ isError: true, execution: { outcome: 'timeout' } });
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('router:timeout:turn-signal-wins — the caller aborting a timed call cancels it (not a timeout), and the handler sees the abort', async () => {
    const router = new EventRouter();
    const h = hanging();
    const tool = makeTool({ name: 'slow_b', scope: 'generalist', handler: h.handler, extra: { timeoutMs: 500 } });
    const turn = new AbortController();
    const p = router.dispatchTool(tool, {}, ctx({ signal: turn.signal }));
    await vi.advanceTimersByTimeAsync(5);
    turn.abort();
    const out = await p;
    expect(h.seen[0]!.aborted).toBe(true);
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "slow_b" was cancelled', execution: { outcome: 'cancelled' } });
    expect(vi.getTimerCount()).toBe(0);
  });
  it('router:timeout:interrupt-still-races — a handler that ignores an interrupt is awaited only until its timeoutMs', async () => {
    const router = new EventRouter();
    const signals: AbortSignal[] = [];
    const tool = makeTool({
      name: 'deaf', scope: 'generalist', extra: { timeoutMs: 500 },
      handler: (_a: unknown, c: ToolContext) => {
        signals.push(c.signal);
        return new Promise(() => {});
      },
    });
    const turn = new AbortController();
    let settled = false;
    const p = router.dispatchTool(tool, {}, ctx({ signal: undefined, interrupt: turn.signal })).then((d) => ((settled = true), d));
    await vi.advanceTimersByTimeAsync(5);
    turn.abort();
    await vi.advanceTimersByTimeAsync(100);
    expect(signals[0]!.aborted).toBe(true);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(395);
    expect(await p).toMatchObject({ isError: true, llmContent: 'tool "deaf" timed out after 500 ms', execution: { outcome: 'timeout' } });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('routed calls: retries', () => {
  it('router:retry:idempotent — an idempotent tool that fails twice then succeeds is run three times, after its backoff, and every attempt is logged', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const f = flaky(2);
    const tool = makeTool({
      name: 'rates', scope: 'generalist', handler: f.handler,
      extra: { idempotent: true, retry: { attempts: 3, backoffMs: 10, backoffFactor: 3 } },
    });
    const c = ctx();
    const p = router.dispatchTool(tool, { q: 'EUR' }, c);
    await vi.advanceTimersByTimeAsync(0);
    expect(f.runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(9);
    expect(f.runs).toHaveLength(1); // the first backoff is 10 ms
    await vi.advanceTimersByTimeAsync(1);
    expect(f.runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(29);
    expect(f.runs).toHaveLength(2); // the second is 10 * 3 ms
    await vi.advanceTimersByTimeAsync(1);
    const out = await p;
    expect(f.runs).toHaveLength(3);
    expect(out).toMatchObject({ isError: false, llmContent: '{"ok":true,"run":3}', data: { ok: true, run: 3 } });
    expect(out.executions.map((x) => [x.attempt, x.outcome, x.callId])).toEqual([
      [1, 'error', c.callId],
      [2, 'error', c.callId],
      [3, 'ok', c.callId],
    ]);
    expect(out.executions[0]!.result).toBe('{"error":"tool \\"rates\\" failed: flake 1 (attempt 1 of 3)"}');
    expect(out.execution).toBe(out.executions[2]);
    expect(log.list()).toEqual(out.executions);
  });

  it('router:retry:exhausted — when every attempt fails the model gets the last error, saying which attempt it was', async () => {
    const router = new EventRouter();
    const f = flaky(99);
    const tool = makeTool({ name: 'rates_b', scope: 'generalist', handler: f.handler, extra: { idempotent: true, retry: { attempts: 2 } } });
    const p = router.dispatchTool(tool, {}, ctx());
    await vi.runAllTimersAsync();
    const out = await p;
    expect(f.runs).toHaveLength(2);
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "rates_b" failed: flake 2 (attempt 2 of 2)' });
    expect(out.executions.map((x) => x.outcome)).toEqual(['error', 'error']);
  });

  it('router:retry:timeouts-retried — a timed-out attempt of an idempotent tool is retried with a fresh signal', async () => {
    const router = new EventRouter();
    let n = 0;
    const signals: AbortSignal[] = [];
    const tool = makeTool({
      name: 'lookup_t', scope: 'specialist', extra: { idempotent: true, timeoutMs: 20, retry: { attempts: 2 } },
      handler: (_a: unknown, c: ToolContext) => {
        signals.push(c.signal);
        return ++n === 1 ? new Promise(() => {}) : { ok: 'second' };
      },
    });
    const p = router.dispatchTool(tool, {}, ctx());
    await vi.advanceTimersByTimeAsync(20);
    const out = await p;
    expect(out).toMatchObject({ isError: false, llmContent: '{"ok":"second"}' });
    expect(out.executions.map((x) => [x.attempt, x.outcome, x.kind])).toEqual([
      [1, 'timeout', 'specialist_execution'],
      [2, 'ok', 'specialist_execution'],
    ]);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[1]!.aborted).toBe(false);
  });

  it('router:retry:non-idempotent-never — a tool not declared idempotent runs once, whatever happens', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const f = flaky(1);
    const tool = makeTool({ name: 'book', scope: 'generalist', handler: f.handler });
    const out = await router.dispatchTool(tool, {}, ctx());
    expect(f.runs).toHaveLength(1);
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "book" failed: flake 1' });
    expect(log.list().map((x) => [x.attempt, x.outcome])).toEqual([[1, 'error']]);
  });

  it('router:retry:not-on-cancel — a cancelled call is not retried, and a cancel during the backoff stops the retries', async () => {
    const router = new EventRouter();
    const f = flaky(99);
    const tool = makeTool({ name: 'rates_c', scope: 'generalist', handler: f.handler, extra: { idempotent: true, retry: { attempts: 5, backoffMs: 100 } } });
    const turn = new AbortController();
    const p = router.dispatchTool(tool, {}, ctx({ signal: turn.signal }));
    await vi.advanceTimersByTimeAsync(50);
    turn.abort();
    const out = await p;
    expect(f.runs).toHaveLength(1);
    expect(out.executions).toHaveLength(1);
    expect(out.isError).toBe(true);
    expect(vi.getTimerCount()).toBe(0);

    const h = hanging();
    const hang = makeTool({ name: 'hang_r', scope: 'generalist', handler: h.handler, extra: { idempotent: true, retry: { attempts: 3 } } });
    const turn2 = new AbortController();
    const p2 = router.dispatchTool(hang, {}, ctx({ signal: turn2.signal }));
    turn2.abort();
    const out2 = await p2;
    expect(h.seen).toHaveLength(1);
    expect(out2.executions.map((x) => x.outcome)).toEqual(['cancelled']);
  });

  it('router:retry:output-invalid-not-retried — a result that fails its outputSchema is not retried (running it again gives the same answer)', async () => {
    const router = new EventRouter();
    const f = flaky(0);
    const tool = makeTool({
      name: 'typed', scope: 'generalist', handler: f.handler, outputSchema: { type: 'object', required: ['rate'] },
      extra: { idempotent: true, retry: { attempts: 3 } },
    });
    const out = await router.dispatchTool(tool, {}, ctx());
    expect(f.runs).toHaveLength(1);
    expect(out.isError).toBe(true);
    expect(out.llmContent).toMatch(/^tool "typed" returned output that does not match its outputSchema: .*rate/);
    expect(out.llmContent).not.toContain('attempt');
    expect(out.executions.map((x) => x.outcome)).toEqual(['error']);
  });

  it('router:retry:observed-once — observers see one tool_call and one tool_result per call, and results$ says how many attempts it took', async () => {
    const router = new EventRouter();
    const types: string[] = [];
    const results: RoutedResult[] = [];
    router.observe({}, (e) => void types.push(e.type));
    router.results$.subscribe((r) => void results.push(r));
    const f = flaky(1);
    const tool = makeTool({ name: 'rates_d', scope: 'generalist', handler: f.handler, extra: { idempotent: true, retry: { attempts: 3 } } });
    const p = router.dispatchTool(tool, {}, ctx());
    await vi.runAllTimersAsync();
    await p;
    expect(types).toEqual(['tool_call:rates_d', 'tool_result:rates_d']);
    expect(results).toMatchObject([{ attempts: 2, outcome: 'ok', isError: false, view: { ok: true, run: 2 } }]);
  });
});
