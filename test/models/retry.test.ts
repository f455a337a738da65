import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ModelError, TurnstateError } from '../../src/errors.js';
import { MAX_TIMER_MS } from '../../src/limits.js';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, resolveRetryPolicy, retryDelay, sleep } from '../../src/models/retry.js';

const h = (o: Record<string, string>) => new Headers(o);

describe('retry policy', () => {
  it('models:retry:full-jitter — delays stay within [0, min(cap, base*2^attempt)] and stop after `retries`', () => {
    const p = resolveRetryPolicy({ retries: 5, baseDelayMs: 100, maxDelayMs: 1000 });
    const err = new ModelError('model.server_error', 'x', { retryable: true });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 }), fc.double({ min: 0, max: 0.9999999, noNaN: true }), (attempt, rnd) => {
        const d = retryDelay(attempt, err, p, () => rnd)!;
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(Math.min(1000, 100 * 2 ** attempt));
      }),
    );
    expect(retryDelay(5, err, p)).toBeUndefined();
  });

  it('models:retry:eligibility — non-retryable and aborted errors get no delay; retry-after wins and is capped', () => {
    const p = resolveRetryPolicy({});
    expect(retryDelay(0, new ModelError('model.invalid_request', 'x'), p)).toBeUndefined();
    expect(retryDelay(0, new ModelError('model.aborted', 'x', { retryable: true }), p)).toBeUndefined();
    expect(retryDelay(0, new ModelError('model.rate_limited', 'x', { retryable: true, retryAfterMs: 2500 }), p)).toBe(2500);
    expect(retryDelay(0, new ModelError('model.rate_limited', 'x', { retryable: true, retryAfterMs: 61_000 }), p)).toBeUndefined();
    expect(DEFAULT_RETRY_POLICY.retries).toBe(3);
    expect(() => resolveRetryPolicy({ retries: -1 })).toThrow(expect.objectContaining({ code: 'options.invalid', message: expect.stringMatching(/^retry policy: retries must be/) }));
  });

  it(`models:retry:delay-range — "each delay is an integer from 0 to ${MAX_TIMER_MS} ms": a maxRetryAfterMs past a timer's range would sleep 1 ms and hammer a server that asked to wait days; refused naming the setting and the value received; a setting given as undefined keeps its default`, () => {
    const range = `an integer from 0 to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;
    for (const k of ['baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const) {
      for (const [v, shown] of [[4_000_000_000, '4000000000'], [Number.NaN, 'NaN'], [-1, '-1'], [1.5, '1.5'], ['500', '"500"']] as const) {
        expect(() => resolveRetryPolicy({ [k]: v }), `${k} ${String(v)}`).toThrow(
          expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: `retry policy: ${k} must be ${range}, got ${shown}` }),
        );
      }
      expect(resolveRetryPolicy({ [k]: MAX_TIMER_MS })[k]).toBe(MAX_TIMER_MS);
    }
    expect(() => resolveRetryPolicy({ retries: '3' as never })).toThrow(
      expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: 'retry policy: retries must be a finite number >= 0, got "3"' }),
    );
    expect(resolveRetryPolicy({ maxDelayMs: undefined, retries: undefined })).toEqual(DEFAULT_RETRY_POLICY);
  });

  it('models:retry:options — "one code for a factory given an option it cannot use": a policy that is not an object, or names a setting it does not have (a tool retry policy\'s attempts, a misspelt retries), is refused with TurnstateError options.invalid naming it, never ignored', () => {
    const settings = 'retries, baseDelayMs, maxDelayMs, maxRetryAfterMs';
    for (const [p, message] of [
      [{ attempts: 3 }, `retry policy: \`attempts\` is not an option; the options are ${settings}`],
      [{ maxRetries: 5 }, `retry policy: \`maxRetries\` is not an option; the options are ${settings}`],
      [{ retrys: 1 }, `retry policy: \`retrys\` is not an option (did you mean \`retries\`?); the options are ${settings}`],
      [null, `retry policy: the policy must be an object { ${settings} }, got null`],
      [[], `retry policy: the policy must be an object { ${settings} }, got []`],
    ] as const) {
      let thrown: unknown;
      try {
        resolveRetryPolicy(p as never);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, message).toBeInstanceOf(TurnstateError);
      expect(thrown, message).toMatchObject({ code: 'options.invalid', message });
    }
    expect(resolveRetryPolicy(undefined)).toEqual(DEFAULT_RETRY_POLICY);
  });

  it('models:retry:retry-after-parse — ms header, seconds, HTTP date, garbage', () => {
    expect(parseRetryAfter(h({ 'retry-after-ms': '150' }))).toBe(150);
    expect(parseRetryAfter(h({ 'retry-after': '2' }))).toBe(2000);
    expect(parseRetryAfter(h({ 'retry-after-ms': '10', 'retry-after': '2' }))).toBe(10);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(h({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
    expect(parseRetryAfter(h({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(h({}))).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  it('models:retry:sleep-abort — sleep rejects with model.aborted when the signal fires', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 10);
    await expect(sleep(10_000, ac.signal)).rejects.toMatchObject({ code: 'model.aborted' });
    await expect(sleep(1, new AbortController().signal)).resolves.toBeUndefined();
  });
});
