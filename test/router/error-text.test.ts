/**
 * What the model reads when a call fails: the text keeps what the thrown value says (a symbol, a
 * bigint, `undefined`, an Error subclass thrown without a message), and names an attempt only
 * when a retry could have followed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryExecutionLog } from '../../src/router/execution-log.js';
import { EventRouter } from '../../src/router/router.js';
import { ctx, makeTool } from './fixtures.js';

class RateLimitError extends Error {
  override name = 'RateLimitError';
}

afterEach(() => {
  vi.useRealTimers();
});

describe('router:errors:are-results', () => {
  it('router:errors:are-results — "a handler\'s throw (or rejected promise) becomes an isError result whose content is `tool "<name>" failed: <message>`": the message keeps what a symbol, a bigint, `undefined` or an Error without a message says', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const thrown: [string, () => unknown, string][] = [
      ['symbol', () => Symbol('rate limited'), 'Symbol(rate limited)'],
      ['undefined', () => undefined, 'threw undefined'],
      ['bigint', () => 5n, '5'],
      ['subclass', () => new RateLimitError(), 'RateLimitError'],
      ['bare_error', () => new Error(), 'Error'],
      // Unchanged: a message wins over the name, and other values are their JSON.
      ['with_message', () => new RateLimitError('slow down'), 'slow down'],
      ['null', () => null, 'null'],
      ['object', () => ({ code: 503 }), '{"code":503}'],
    ];
    let k = 0;
    for (const [what, value, text] of thrown) {
      // Thrown and rejected; on the one-attempt path and on the timed one (timeoutMs never reached).
      const handlers = [() => { throw value(); }, async () => { throw value(); }];
      for (const handler of handlers) {
        for (const extra of [undefined, { timeoutMs: 60_000 }]) {
          const name = `err_${what}_${++k}`;
          const out = await router.dispatchTool(makeTool({ name, scope: 'generalist', handler, ...(extra === undefined ? {} : { extra }) }), {}, ctx());
          const expected = `tool "${name}" failed: ${text}`;
          expect(out, name).toMatchObject({ isError: true, llmContent: expected, execution: { outcome: 'error' } });
          expect(JSON.parse(out.execution.result), name).toEqual({ error: expected });
        }
      }
    }
    expect(log.list()).toHaveLength(k);
  });
});

describe('router:retry:exhausted', () => {
  it('router:retry:exhausted — "When every attempt fails the result is the last error, naming the attempt": an interrupted call of a retry-configured tool that fails for its own reason (or times out) names no attempt, since no retry follows', async () => {
    vi.useFakeTimers();
    const router = new EventRouter();
    const retry = { idempotent: true, retry: { attempts: 3 } };
    let runs = 0;
    // The handler is interrupted while it runs, ignores it, and fails for its own reason.
    const interrupted = (turn: AbortController) => async () => {
      runs += 1;
      turn.abort();
      await Promise.resolve();
      throw new Error('card declined');
    };
    for (const [name, extra] of [['pay_retry', retry], ['pay_retry_timed', { ...retry, timeoutMs: 60_000 }]] as const) {
      runs = 0;
      const turn = new AbortController();
      const tool = makeTool({ name, scope: 'generalist', handler: interrupted(turn), extra });
      const out = await router.dispatchTool(tool, {}, ctx({ signal: undefined, interrupt: turn.signal }));
      expect(out, name).toMatchObject({ isError: true, llmContent: `tool "${name}" failed: card declined`, execution: { outcome: 'error', attempt: 1 } });
      expect(runs, name).toBe(1);
    }
    // Interrupted, ignored, then out of time: a timeout, not retried, no attempt named.
    const turn = new AbortController();
    const stuck = makeTool({
      name: 'pay_stuck', scope: 'generalist', extra: { ...retry, timeoutMs: 50 },
      handler: () => {
        runs += 1;
        turn.abort();
        return new Promise(() => {});
      },
    });
    runs = 0;
    const p = router.dispatchTool(stuck, {}, ctx({ signal: undefined, interrupt: turn.signal }));
    await vi.advanceTimersByTimeAsync(50);
    const out = await p;
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "pay_stuck" timed out after 50 ms', execution: { outcome: 'timeout', attempt: 1 } });
    expect(runs).toBe(1);
    // Not interrupted: the attempt is named, a retry follows (and the last one says so too).
    runs = 0;
    const flaky = makeTool({ name: 'rates_flaky', scope: 'generalist', extra: retry, handler: () => { runs += 1; throw new Error(`flake ${runs}`); } });
    const q = router.dispatchTool(flaky, {}, ctx());
    await vi.runAllTimersAsync();
    const failed = await q;
    expect(failed.executions.map((e) => JSON.parse(e.result).error)).toEqual([1, 2, 3].map((n) => `tool "rates_flaky" failed: flake ${n} (attempt ${n} of 3)`));
  });
});
