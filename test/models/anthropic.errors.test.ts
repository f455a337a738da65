import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelError, TurnstateError } from '../../src/errors.js';
import { MAX_TIMER_MS } from '../../src/limits.js';
import type { ModelErrorCode } from '../../src/errors.js';
import { Attempt } from '../../src/models/anthropic-attempt.js';
import { createAnthropicModel } from '../../src/models/anthropic.js';
import type { LoopbackTurn } from '../../src/models/loopback-server.js';
import { startLoopbackMessagesServer } from '../../src/models/loopback-server.js';
import { asModelError, collect, request, respondInput, rig, TEST_KEY } from './helpers.js';
import type { Rig } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.server.close();
  r = undefined;
});

const ok = (): LoopbackTurn => ({ content: [{ type: 'tool_use', name: 'respond', input: respondInput('Two options found.'), id: 'toolu_ok' }], split: 4 });
const never = () => new AbortController().signal;

/** Every error a test produced, checked for the key at the end. */
const seen: unknown[] = [];
function expectNoKey(e: unknown): void {
  seen.push(e);
  const err = e as Error;
  for (const s of [err.message, err.stack ?? '', JSON.stringify(err), inspect(err, { depth: 20, showHidden: true }), String((err as { cause?: unknown }).cause)]) {
    expect(s).not.toContain(TEST_KEY);
  }
}

describe('anthropic adapter: error mapping', () => {
  const cases: Array<[string, LoopbackTurn, ModelErrorCode, boolean, number | undefined]> = [
    ['429', { fail: { status: 429, retryAfter: 2, message: 'Number of request tokens has exceeded your per-minute rate limit' } }, 'model.rate_limited', true, 429],
    ['529', { fail: { status: 529, message: 'Overloaded' } }, 'model.overloaded', true, 529],
    ['500', { fail: { status: 500, message: 'Internal server error' } }, 'model.server_error', true, 500],
    ['503', { fail: { status: 503 } }, 'model.server_error', true, 503],
    ['400', { fail: { status: 400, message: 'messages.1: Did not find 1 `tool_result` block(s) at the beginning' } }, 'model.invalid_request', false, 400],
    ['401', { fail: { status: 401, message: `invalid x-api-key: ${TEST_KEY}` } }, 'model.authentication', false, 401],
    ['403', { fail: { status: 403 } }, 'model.permission', false, 403],
    ['404', { fail: { status: 404, message: 'model: claude-nope' } }, 'model.not_found', false, 404],
  ];
  it.each(cases)('models:error:%s — HTTP failure maps to its ModelError code', async (_n, turn, code, retryable, status) => {
    r = await rig([turn], { retry: { retries: 0 } });
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(events).toEqual([]);
    const e = asModelError(error);
    expect(e.code).toBe(code);
    expect(e.retryable).toBe(retryable);
    expect(e.status).toBe(status);
    expect(r.server.requests).toHaveLength(1);
    expectNoKey(e);
  });

  it('models:error:retry-after — a 429 carries retry-after (seconds and ms headers) as retryAfterMs', async () => {
    r = await rig([{ fail: { status: 429, retryAfter: 7 } }, { fail: { status: 429, retryAfterMs: 1234 } }], { retry: { retries: 0 } });
    const a = asModelError((await collect(r.model.stream(request(), never()))).error);
    const b = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(a.retryAfterMs).toBe(7000);
    expect(b.retryAfterMs).toBe(1234);
  });

  it('models:retry:honours-retry-after — the retry waits at least retry-after, then succeeds', async () => {
    r = await rig([{ fail: { status: 429, retryAfterMs: 150 } }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(events.at(-1)?.type).toBe('message.stop');
    const [a, b] = r.server.requests;
    expect(b!.receivedAt - a!.receivedAt).toBeGreaterThanOrEqual(145);
  });

  it('models:retry:too-long — a retry-after beyond maxRetryAfterMs is not waited for', async () => {
    r = await rig([{ fail: { status: 429, retryAfter: 120 } }, ok()], { retry: { maxRetryAfterMs: 1000 } });
    const t0 = Date.now();
    const e = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(e.code).toBe('model.rate_limited');
    expect(e.retryAfterMs).toBe(120_000);
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:retry:recovers — 529 then 500 then success: three requests, one clean event stream', async () => {
    r = await rig([{ fail: { status: 529 } }, { fail: { status: 500 } }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(r.server.requests).toHaveLength(3);
    expect(events.filter((e) => e.type === 'block.start')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'message.stop')).toHaveLength(1);
  });

  it('models:retry:bounded — retries stop after the configured count (1 + retries requests)', async () => {
    r = await rig(Array.from({ length: 6 }, () => ({ fail: { status: 500 } })), { retry: { retries: 3 } });
    const e = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(e.code).toBe('model.server_error');
    expect(r.server.requests).toHaveLength(4);
    expect(r.server.pending).toBe(2);
  });

  it('models:retry:non-retryable — a 400 is never retried', async () => {
    r = await rig([{ fail: { status: 400 } }, ok()], { retry: { retries: 3 } });
    const e = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(e.code).toBe('model.invalid_request');
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:error:stream-error-early — an overloaded error event before any block is retried', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, streamError: { afterEvents: 1, type: 'overloaded_error' } }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(r.server.requests).toHaveLength(2);
    expect(events.filter((e) => e.type === 'block.start')).toHaveLength(1);
  });

  it('models:error:stream-error-after-block-start — "retried only while none of the failed attempt\'s events has been yielded": an overloaded error right after a block\'s start (a thinking block, before any of its text) has given the consumer nothing, so it is retried, and the consumer sees one response', async () => {
    const thinking = (): LoopbackTurn => ({
      content: [
        { type: 'thinking', thinking: 'Weighing the fares.', signature: 'sig' },
        { type: 'tool_use', name: 'respond', input: respondInput('Two options found.'), id: 'toolu_ok' },
      ],
      split: 4,
      pingEvery: 0,
    });
    // Events: message_start, content_block_start (thinking), then the error.
    r = await rig([{ ...thinking(), streamError: { afterEvents: 2, type: 'overloaded_error' } }, thinking()], { retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(r.server.requests).toHaveLength(2);
    expect(events.filter((e) => e.type === 'block.start').map((e) => (e.type === 'block.start' ? e.block.type : ''))).toEqual(['thinking', 'tool_use']);
    expect(events.at(-1)?.type).toBe('message.stop');
  });

  it('models:error:stream-error-late — an error event after events were yielded is thrown, not retried', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, streamError: { afterEvents: 5, type: 'overloaded_error', message: 'Overloaded' } }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    const e = asModelError(error);
    expect(e.code).toBe('model.stream_error');
    expect(e.retryable).toBe(true);
    expect(e.status).toBeUndefined();
    expect(events.length).toBeGreaterThan(0);
    expect(events.some((x) => x.type === 'message.stop')).toBe(false);
    expect(r.server.requests).toHaveLength(1);
    expectNoKey(e);
  });

  it('models:error:stream-error-fatal — an invalid_request_error event is a non-retryable stream_error', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, streamError: { afterEvents: 1, type: 'invalid_request_error', message: 'bad' } }, ok()]);
    const e = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(e.code).toBe('model.stream_error');
    expect(e.retryable).toBe(false);
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:error:dropped-late — a connection dropped mid-stream after events is model.connection, not retried', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, dropAfterEvents: 6 }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    const e = asModelError(error);
    expect(e.code).toBe('model.connection');
    expect(events.length).toBeGreaterThan(0);
    expect(r.server.requests).toHaveLength(1);
    expectNoKey(e);
  });

  it.each([
    ['an error event', { streamError: { afterEvents: 10_000, type: 'api_error' } }],
    ['a dropped connection', { dropAfterEvents: 10_000 }],
  ])('models:error:after-stop — %s after message_stop changes nothing: the call completes', async (_n, fault) => {
    r = await rig([{ ...ok(), ...fault }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(events.at(-1)?.type).toBe('message.stop');
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:error:dropped-early — a connection dropped before any block is retried', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, dropAfterEvents: 1 }, ok()]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(events.at(-1)?.type).toBe('message.stop');
    expect(r.server.requests).toHaveLength(2);
  });

  it('models:error:connection — an unreachable server is model.connection (retryable)', async () => {
    const server = await startLoopbackMessagesServer();
    const url = server.url;
    await server.close();
    const model = createAnthropicModel({ apiKey: TEST_KEY, baseURL: url, retry: { retries: 1, baseDelayMs: 1 } });
    const e = asModelError((await collect(model.stream(request(), never()))).error);
    expect(e.code).toBe('model.connection');
    expect(e.retryable).toBe(true);
    expect(e.message).toContain('ECONNREFUSED');
    expectNoKey(e);
  });

  it('models:error:timeout — no response headers within `timeout` is model.timeout (retryable)', async () => {
    r = await rig([{ ...ok(), delayMs: 2000 }], { timeout: 100, retry: { retries: 0 } });
    const e = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(e.code).toBe('model.timeout');
    expect(e.retryable).toBe(true);
  });

  it('models:error:idle-timeout — a stream that stalls longer than idleTimeout is model.timeout', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, stallAfterEvents: 5 }], { idleTimeout: 150, retry: { retries: 0 } });
    const { events, error } = await collect(r.model.stream(request(), never()));
    const e = asModelError(error);
    expect(e.code).toBe('model.timeout');
    expect(events.length).toBeGreaterThan(0);
  });

  it('models:error:x-should-retry — the API\'s `x-should-retry` header decides over the status, as in the SDK\'s own retries (which the adapter turns off): a 529 it says not to retry is not retried, a 400 it says to retry is', async () => {
    r = await rig([{ fail: { status: 529, shouldRetry: false } }, ok()], { retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    const refused = await collect(r.model.stream(request(), never()));
    const e = asModelError(refused.error);
    expect({ code: e.code, retryable: e.retryable, requests: r.server.requests.length }).toEqual({ code: 'model.overloaded', retryable: false, requests: 1 });
    await r.server.close();
    r = await rig([{ fail: { status: 400, shouldRetry: true } }, ok()], { retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    const retried = await collect(r.model.stream(request(), never()));
    expect(retried.error).toBeUndefined();
    expect(retried.events.at(-1)?.type).toBe('message.stop');
    expect(r.server.requests).toHaveLength(2);
  });

  it('models:error:idle-pings — "abort when the stream delivers no event for this many ms": a `ping` is an event (the API\'s keep-alive while the model works); a pause filled with pings is not silence, the same pause without them is', async () => {
    // 600 ms without a content event, idleTimeout 200: pings every 50 ms keep the attempt alive.
    const pause = { afterEvents: 4, ms: 600 };
    r = await rig([{ ...ok(), pingEvery: 0, pause: { ...pause, pingEveryMs: 50 } }], { idleTimeout: 200, retry: { retries: 0 } });
    const alive = await collect(r.model.stream(request(), never()));
    expect(alive.error).toBeUndefined();
    expect(alive.events.at(-1)?.type).toBe('message.stop');
    expect(r.server.requests).toHaveLength(1);
    await r.server.close();
    r = await rig([{ ...ok(), pingEvery: 0, pause }], { idleTimeout: 200, retry: { retries: 0 } });
    const silent = await collect(r.model.stream(request(), never()));
    expect(asModelError(silent.error).code).toBe('model.timeout');
  });

  it(`models:options:idle-timeout — "idleTimeout is an integer from 0 (off) to ${MAX_TIMER_MS}": a string, NaN or a negative would leave a stalled stream unwatched, and a value past a timer's range fire after 1 ms; refused by createAnthropicModel naming idleTimeout and the value received`, () => {
    const range = `an integer from 0 to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days; 0: no idle limit)`;
    for (const [v, shown] of [['300', '"300"'], [Number.NaN, 'NaN'], [-1, '-1'], [2 ** 31, '2147483648'], [1.5, '1.5'], [Number.POSITIVE_INFINITY, 'Infinity']] as const) {
      expect(() => createAnthropicModel({ apiKey: TEST_KEY, idleTimeout: v as number }), String(v)).toThrow(
        expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: `createAnthropicModel: idleTimeout must be ${range}, got ${shown}` }),
      );
    }
    for (const idleTimeout of [0, 1, MAX_TIMER_MS]) expect(createAnthropicModel({ apiKey: TEST_KEY, idleTimeout }).name).toBe('anthropic');
  });

  it(`models:options:timeout — "timeout is an integer from 1 to ${MAX_TIMER_MS}", checked as idleTimeout is: NaN, a negative or a string reached the SDK, which refused it at every call (never at createAnthropicModel), and 0 aborted every attempt at once; refused (options.invalid) naming timeout and the value received`, () => {
    const range = `an integer from 1 to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;
    for (const [v, shown] of [[Number.NaN, 'NaN'], [-1, '-1'], [2 ** 31, '2147483648'], ['1000', '"1000"'], [0, '0'], [1.5, '1.5'], [Number.POSITIVE_INFINITY, 'Infinity']] as const) {
      let thrown: unknown;
      try {
        createAnthropicModel({ apiKey: TEST_KEY, timeout: v as number });
      } catch (e) {
        thrown = e;
      }
      expect(thrown, String(v)).toBeInstanceOf(TurnstateError);
      expect(thrown, String(v)).toMatchObject({ code: 'options.invalid', message: `createAnthropicModel: timeout must be ${range}, got ${shown}` });
    }
    for (const timeout of [1, 600_000, MAX_TIMER_MS]) expect(createAnthropicModel({ apiKey: TEST_KEY, timeout }).name).toBe('anthropic');
  });

  it('models:options:numbers — "one code for a factory given an option it cannot use": maxTokens is an integer of at least 1 and the retry policy an object of its own settings (a tool retry policy\'s `attempts` was ignored, silently); every refusal is options.invalid naming the option as the caller wrote it (retry.baseDelayMs)', () => {
    const range = `an integer from 0 to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;
    const cases: [Record<string, unknown>, string][] = [
      [{ maxTokens: 0 }, 'createAnthropicModel: maxTokens must be an integer of at least 1, got 0'],
      [{ maxTokens: '4096' }, 'createAnthropicModel: maxTokens must be an integer of at least 1, got "4096"'],
      [{ maxTokens: Number.NaN }, 'createAnthropicModel: maxTokens must be an integer of at least 1, got NaN'],
      [{ retry: { baseDelayMs: -1 } }, `createAnthropicModel: retry.baseDelayMs must be ${range}, got -1`],
      [{ retry: { maxRetryAfterMs: 2 ** 31 } }, `createAnthropicModel: retry.maxRetryAfterMs must be ${range}, got 2147483648`],
      [{ retry: { retries: '3' } }, 'createAnthropicModel: retry.retries must be a finite number >= 0, got "3"'],
      [{ retry: { attempts: 3 } }, 'createAnthropicModel: retry: `attempts` is not an option; the options are retries, baseDelayMs, maxDelayMs, maxRetryAfterMs'],
      [{ retry: { retrys: 3 } }, 'createAnthropicModel: retry: `retrys` is not an option (did you mean `retries`?); the options are retries, baseDelayMs, maxDelayMs, maxRetryAfterMs'],
      [{ retry: 3 }, 'createAnthropicModel: `retry` must be an object { retries, baseDelayMs, maxDelayMs, maxRetryAfterMs }, got 3'],
    ];
    for (const [opts, message] of cases) {
      let thrown: unknown;
      try {
        createAnthropicModel({ apiKey: TEST_KEY, ...opts });
      } catch (e) {
        thrown = e;
      }
      expect(thrown, message).toBeInstanceOf(TurnstateError);
      expect(thrown, message).toMatchObject({ code: 'options.invalid', message });
    }
    expect(createAnthropicModel({ apiKey: TEST_KEY, maxTokens: 1, retry: { retries: 0, baseDelayMs: 0, maxDelayMs: MAX_TIMER_MS, maxRetryAfterMs: 0 } }).name).toBe('anthropic');
  });

  it('models:error:idle-from-last-event — "abort when the stream delivers no event for this many ms": counted from the last event, not from the watchdog\'s last check', () => {
    vi.useFakeTimers();
    try {
      const a = new Attempt(new AbortController().signal, 500);
      vi.advanceTimersByTime(400);
      a.touch(); // an event at 400 ms
      vi.advanceTimersByTime(499);
      expect(a.signal.aborted).toBe(false);
      vi.advanceTimersByTime(1); // 500 ms of silence since the event
      expect(a.idleFired).toBe(true);
      expect(a.signal.aborted).toBe(true);
      a.dispose();
    } finally {
      vi.useRealTimers();
    }
  });

  it('models:error:idle-not-consumer-time — "abort when the stream delivers no event for this many ms": time the consumer spends on an event (a slow commit) is not the stream\'s silence', () => {
    vi.useFakeTimers();
    try {
      const a = new Attempt(new AbortController().signal, 200);
      a.consuming = true; // the consumer holds an event for 300 ms
      vi.advanceTimersByTime(300);
      expect(a.signal.aborted).toBe(false);
      a.consuming = false;
      a.touch(); // the stream is read again
      vi.advanceTimersByTime(199);
      expect(a.signal.aborted).toBe(false);
      vi.advanceTimersByTime(201); // real silence now
      expect(a.idleFired).toBe(true);
      a.dispose();
    } finally {
      vi.useRealTimers();
    }
  });

  it('models:error:idle-before-headers — the idle limit also covers the wait for the response, and retries', async () => {
    r = await rig([{ ...ok(), delayMs: 2000 }, ok()], { idleTimeout: 100, retry: { retries: 1 } });
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(events.at(-1)?.type).toBe('message.stop');
    expect(r.server.requests).toHaveLength(2);
  });

  it('models:stream:early-return — leaving the loop early closes the stream at once', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, stallAfterEvents: 4 }]);
    const t0 = Date.now();
    let n = 0;
    for await (const _ev of r.model.stream(request(), never())) {
      n++;
      break;
    }
    expect(n).toBe(1);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('models:error:refusal — stop_reason refusal arrives as message.stop, not an error', async () => {
    r = await rig([{ content: [], stopReason: 'refusal' }]);
    const { events, error } = await collect(r.model.stream(request(), never()));
    expect(error).toBeUndefined();
    expect(events).toEqual([{ type: 'message.stop', stopReason: 'refusal', usage: expect.any(Object), content: [] }]);
  });

  it('models:error:no-key — creating the adapter without any key fails clearly', () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      expect(() => createAnthropicModel({})).toThrow(/no API key/);
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});

describe('anthropic adapter: abort', () => {
  it.each([0, 5])('models:abort:mid-stream — aborting yields model.aborted and no further events (event gap %i ms)', async (gap) => {
    // gap 0: the whole stream arrives in one chunk, so the SDK already holds the later events.
    r = await rig([{ ...ok(), split: 2, eventDelayMs: gap }]);
    const ac = new AbortController();
    const seenEvents: string[] = [];
    let after = 0;
    let error: unknown;
    try {
      for await (const ev of r.model.stream(request(), ac.signal)) {
        if (ac.signal.aborted) after++;
        seenEvents.push(ev.type);
        if (ev.type === 'input.delta' && seenEvents.length === 4) ac.abort();
      }
    } catch (e) {
      error = e;
    }
    const e = asModelError(error);
    expect(e.code).toBe('model.aborted');
    expect(e.retryable).toBe(false);
    expect(after).toBe(0);
    expect(seenEvents).toHaveLength(4);
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:abort:stalled — an abort while the stream is stalled ends the iterator promptly', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, stallAfterEvents: 4 }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const t0 = Date.now();
    const { events, error } = await collect(r.model.stream(request(), ac.signal));
    expect(asModelError(error).code).toBe('model.aborted');
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(events.length).toBeGreaterThan(0);
  });

  it('models:abort:before-headers — an abort while waiting for the response is model.aborted, never retried', async () => {
    r = await rig([{ ...ok(), delayMs: 3000 }, ok()]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 80);
    const { events, error } = await collect(r.model.stream(request(), ac.signal));
    expect(asModelError(error).code).toBe('model.aborted');
    expect(events).toEqual([]);
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:abort:during-backoff — an abort during a retry wait ends at once', async () => {
    r = await rig([{ fail: { status: 529, retryAfter: 20 } }, ok()]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 80);
    const t0 = Date.now();
    const { error } = await collect(r.model.stream(request(), ac.signal));
    expect(asModelError(error).code).toBe('model.aborted');
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(r.server.requests).toHaveLength(1);
  });

  it('models:abort:already — an already-aborted signal sends nothing', async () => {
    r = await rig([ok()]);
    const ac = new AbortController();
    ac.abort();
    const { error } = await collect(r.model.stream(request(), ac.signal));
    expect(asModelError(error).code).toBe('model.aborted');
    expect(r.server.requests).toHaveLength(0);
  });
});

/**
 * An undici Agent like the one behind Node's built-in fetch, with its own limits. undici is not a
 * dependency: the global dispatcher (set once fetch has loaded) lends its class.
 */
async function undiciAgent(opts: { bodyTimeout?: number; headersTimeout?: number }): Promise<{ close(): Promise<void> }> {
  const key = Symbol.for('undici.globalDispatcher.1');
  const g = globalThis as unknown as Record<symbol, { constructor: new (o: unknown) => { close(): Promise<void> } } | undefined>;
  if (g[key] === undefined) await fetch('data:,').catch(() => undefined);
  const Agent = g[key]!.constructor;
  expect(Agent.name).toBe('Agent');
  return new Agent(opts);
}

type CauseChain = Error & { code?: string; cause?: CauseChain };
const causeCodes = (e: unknown): Array<string | undefined> => {
  const out: Array<string | undefined> = [];
  for (let c = (e as CauseChain).cause; c !== undefined; c = c.cause) out.push(c.code);
  return out;
};

describe('anthropic adapter: transport failures named', () => {
  it('models:error:body-timeout — "a silent stream ... neither a timeout nor the cause is named": undici\'s body timeout (Node fetch\'s default stall limit) is model.timeout, naming UND_ERR_BODY_TIMEOUT', async () => {
    const agent = await undiciAgent({ bodyTimeout: 100 });
    const server = await startLoopbackMessagesServer({ script: [{ ...ok(), pingEvery: 0, stallAfterEvents: 3 }] });
    try {
      const client = new Anthropic({ baseURL: server.url, apiKey: TEST_KEY, maxRetries: 0, fetchOptions: { dispatcher: agent } as never });
      const model = createAnthropicModel({ client, retry: { retries: 0 } });
      const { events, error } = await collect(model.stream(request(), never()));
      const e = asModelError(error);
      expect(events.length).toBeGreaterThan(0);
      expect(e.code).toBe('model.timeout');
      expect(e.retryable).toBe(true);
      expect(e.message).toContain('UND_ERR_BODY_TIMEOUT');
      expect(e.message).toContain('terminated: Body Timeout Error');
      expect(causeCodes(e)).toContain('UND_ERR_BODY_TIMEOUT');
      expectNoKey(e);
    } finally {
      await server.close();
      await agent.close();
    }
  });

  it('models:error:dropped-cause — "the undici cause (other side closed) is dropped": a connection cut mid-stream is model.connection naming why, with the cause chain kept', async () => {
    r = await rig([{ ...ok(), pingEvery: 0, dropAfterEvents: 6 }], { retry: { retries: 0 } });
    const e = asModelError((await collect(r.model.stream(request(), never()))).error);
    expect(e.code).toBe('model.connection');
    expect(e.message).toBe('model stream failed: terminated (other side closed)');
    expect((e.cause as CauseChain).message).toBe('terminated');
    expect(causeCodes(e)).toContain('UND_ERR_SOCKET');
    expectNoKey(e);
  });

  it('models:secrets:cause-chain — a cause deep in the chain that echoes the key is redacted in the message and in every sanitised cause', async () => {
    const fetchFails = async (): Promise<Response> => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error(`proxy refused key ${TEST_KEY}`), { code: 'EPROXY' }) });
    };
    const client = new Anthropic({ baseURL: 'http://127.0.0.1:9', apiKey: TEST_KEY, maxRetries: 0, fetch: fetchFails });
    const e = asModelError((await collect(createAnthropicModel({ client, retry: { retries: 0 } }).stream(request(), never()))).error);
    expect(e.code).toBe('model.connection');
    expect(e.message).toBe('model connection failed: Connection error. (fetch failed: proxy refused key [redacted])');
    expect(causeCodes(e)).toEqual([undefined, undefined, 'EPROXY']);
    expectNoKey(e);
  });

  it.each([
    ['application/json', JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 3 } })],
    ['text/html; charset=utf-8', '<html><body>gateway</body></html>'],
  ])('models:error:not-event-stream — "a 200 response that is not text/event-stream": %s fails at once, not retried, naming the content type', async (contentType, body) => {
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': contentType });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = new Anthropic({ baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: TEST_KEY, maxRetries: 0 });
      const model = createAnthropicModel({ client, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
      const { events, error } = await collect(model.stream(request(), never()));
      const e = asModelError(error);
      expect(events).toEqual([]);
      expect(requests).toBe(1);
      expect(e.code).toBe('model.stream_error');
      expect(e.retryable).toBe(false);
      expect(e.status).toBe(200);
      expect(e.message).toContain(`content-type ${JSON.stringify(contentType)}`);
      expect(e.message).toContain('text/event-stream');
      expectNoKey(e);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('anthropic adapter: secrets', () => {
  it('models:secrets:never-leak — the API key appears in no error, cause, stack or event', async () => {
    // A proxy that echoes the key in its error message, with a client built from options.
    const server = await startLoopbackMessagesServer({
      script: [{ fail: { status: 401, message: `key ${TEST_KEY} is invalid` } }, { fail: { status: 400, message: `bad ${TEST_KEY}` } }, ok()],
    });
    try {
      const model = createAnthropicModel({ apiKey: TEST_KEY, baseURL: server.url, model: 'claude-test' });
      for (let i = 0; i < 2; i++) {
        const { error } = await collect(model.stream(request(), never()));
        const e = asModelError(error);
        expect(e.message).toContain('[redacted]');
        expectNoKey(e);
      }
      const { events } = await collect(model.stream(request(), never()));
      expect(JSON.stringify(events)).not.toContain(TEST_KEY);
      expect(inspect(model, { depth: 10 })).not.toContain(TEST_KEY);
      expect(JSON.stringify(server.requests)).not.toContain(TEST_KEY);
    } finally {
      await server.close();
    }
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.every((e) => e instanceof ModelError)).toBe(true);
  });
});
