/**
 * Cancellation, timeouts and retries of routed tools through a real runtime (spec 002: "Cancellation,
 * retry, and audit instrumentation still apply because the framework is in the loop").
 */
import { describe, expect, it } from 'vitest';
import type { ToolContext } from '../../src/registries/types.js';
import { Recorder, addTool, answer, checkStream, harness, part, respond, settledOf, toolResultsIn, toolUse } from './helpers.js';

/** A tool handler that runs until its signal aborts; `signals` collects the signal of each call. */
function untilAborted() {
  const signals: AbortSignal[] = [];
  const aborted: unknown[] = [];
  const waiting: { n: number; resolve: () => void }[] = [];
  /** Resolves once `n` calls have started. */
  const started = (n = 1) => new Promise<void>((resolve) => (signals.length >= n ? resolve() : waiting.push({ n, resolve })));
  const handler = (_args: unknown, ctx: ToolContext) =>
    new Promise((_resolve, reject) => {
      signals.push(ctx.signal);
      for (const w of waiting) if (signals.length >= w.n) w.resolve();
      ctx.signal.addEventListener('abort', () => {
        aborted.push(ctx.signal.reason);
        // Honouring the signal as fetch does: rejecting with its reason (tools.md).
        reject(ctx.signal.reason);
      });
    });
  return { signals, aborted, handler, started };
}

const CALL_SLOW = { when: { on: 'user' as const, call: 0 }, times: 1, respond: answer(respond([part('ack', 'working on it')], 'awaiting'), toolUse('slow', { q: 'x' }, 'toolu_slow')) };
const FINISH = { respond: answer(respond([part('response', 'done')], 'complete')) };

describe('routed tools: the handler signal', () => {
  it('tools:signal:runtime-close — a running handler sees its signal abort when the runtime closes', async () => {
    const { rt } = harness({ rules: [CALL_SLOW, FINISH] });
    const slow = untilAborted();
    addTool(rt.registries, 'slow', slow.handler);

    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const r = await s.send('go');
    await slow.started();
    expect(slow.signals).toHaveLength(1);
    expect(slow.signals[0]!.aborted).toBe(false);
    await rt.close();
    expect(slow.signals[0]!.aborted).toBe(true);
    expect(await r.settled).toMatchObject({ stop: 'interrupted', error: { code: 'session.stopped' } });
    // Nothing is recorded for the call after the stop: recover() resumes the turn from the store.
    expect(rec.of('tool.result')).toEqual([]);
  });

  it('tools:signal:session-delete — a running handler sees its signal abort when its session is deleted', async () => {
    const { rt } = harness({ rules: [{ ...CALL_SLOW, times: 2 }, FINISH] });
    const slow = untilAborted();
    addTool(rt.registries, 'slow', slow.handler);
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a' });
    const other = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const recOther = new Recorder(other);
    await s.send('go');
    await other.send('go too');
    await slow.started(2);
    expect(slow.signals).toHaveLength(2);
    expect(await rt.deleteSession(s.id)).toBe(true);
    expect(slow.signals[0]!.aborted).toBe(true);
    // The other session's call is untouched.
    expect(slow.signals[1]!.aborted).toBe(false);
    await rt.close();
    expect(slow.signals[1]!.aborted).toBe(true);
  });

  it('tools:signal:interrupt — a message that interrupts the turn aborts its running tool; the model gets a cancelled result and the message', async () => {
    const { rt, model } = harness({ rules: [CALL_SLOW, FINISH] });
    const slow = untilAborted();
    addTool(rt.registries, 'slow', slow.handler);
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const rec = new Recorder(s);
    const r1 = await s.send('search flights');
    await slow.started();
    const r2 = await s.send('actually, trains');
    expect(r2.turnId).toBe(r1.turnId);
    const out = await r1.settled;
    expect(slow.signals[0]!.aborted).toBe(true);
    expect(out.finalizedBy).toBe('complete');
    const last = model.requests.at(-1)!;
    expect(toolResultsIn(last).find((b) => b.tool_use_id === 'toolu_slow')).toMatchObject({ is_error: true, content: 'tool "slow" was cancelled' });
    expect(JSON.stringify(last.messages)).toContain('actually, trains');
    expect((await s.executions()).map((x) => [x.tool, x.outcome])).toEqual([['slow', 'cancelled']]);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
    await rt.close();
  });
});

describe('routed tools: the signal is the turn\'s', () => {
  it('tools:signal:per-turn — a turn\'s tools share one signal, and one a handler left a listener on is never handed to another turn', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' as const }, respond: answer(toolUse('lookup', { q: 'a' }), toolUse('lookup', { q: 'b' })) },
        { when: { on: 'tool_result' as const }, respond: answer(respond([part('response', 'ok')], 'complete')) },
      ],
    });
    const signals: AbortSignal[] = [];
    addTool(rt.registries, 'lookup', (_a, ctx) => {
      signals.push(ctx.signal);
      ctx.signal.addEventListener('abort', () => {}); // never removed, as handlers often do
      return { ok: true };
    });
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    for (let i = 0; i < 6; i++) expect((await (await s.send(`turn ${i}`)).settled).finalizedBy).toBe('complete');
    expect(signals).toHaveLength(12);
    // The two calls of a turn share its signal; no two turns share one.
    for (let i = 0; i < 12; i += 2) expect(signals[i]).toBe(signals[i + 1]);
    expect(new Set(signals).size).toBe(6);
    expect(signals.every((x) => !x.aborted)).toBe(true);
    await rt.close();
  });
});

describe('routed tools: a kept signal stays its turn\'s', () => {
  it('tools:signal:kept-per-turn — a signal a handler kept without a listener never aborts for a later turn\'s interrupt', async () => {
    const { rt } = harness({
      rules: [
        // Turn 1 starts background work that keeps its signal (polling `aborted`), then holds for an approval.
        { when: { on: 'user' as const, text: 'one' }, times: 1, respond: answer(respond([part('ack', 'starting')], 'awaiting'), toolUse('start_job', { q: 'a' }), toolUse('book', { q: 'x' })) },
        { when: { on: 'tool_result' as const, tool: 'book' }, times: 1, respond: answer(respond([part('response', 'booked')], 'complete')) },
        // Turn 2 (queued behind the held turn) runs a slow tool that the third message interrupts.
        { when: { on: 'user' as const, text: 'two' }, times: 1, respond: answer(respond([part('ack', 'looking')], 'awaiting'), toolUse('slow', { q: 'b' })) },
        { respond: answer(respond([part('response', 'ok')], 'complete')) },
      ],
    });
    let kept: AbortSignal | undefined;
    addTool(rt.registries, 'start_job', (_a, ctx) => ((kept = ctx.signal), { jobId: 1 }));
    addTool(rt.registries, 'book', () => ({ booked: true }), { requiresApproval: true });
    const slow = untilAborted();
    addTool(rt.registries, 'slow', slow.handler);
    rt.registries.actors.register({ name: 'a', tools: ['start_job', 'book', 'slow'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const r1 = await s.send('one');
    expect((await r1.settled).held).toMatchObject({ resumeOn: 'approval-response' });
    const r2 = await s.send('two');
    expect(r2.turnId).not.toBe(r1.turnId);
    const [pending] = await rt.approvals({ sessionId: s.id, status: 'pending' });
    expect((await s.answerApproval(pending!.approvalId, { approved: true }, { userId: 'u' }, 'test')).ok).toBe(true);
    await slow.started();
    expect(slow.signals[0]).not.toBe(kept);
    expect((await s.send('three')).turnId).toBe(r2.turnId);
    expect((await r2.settled).finalizedBy).toBe('complete');
    expect(slow.signals[0]!.aborted).toBe(true);
    expect(kept!.aborted).toBe(false);
    await rt.close();
  });
});

describe('routed tools: an aborted signal is never handed on', () => {
  it('tools:signal:fresh-after-abort — after an interrupt aborted a turn\'s tool signal, the next turn\'s tools get one that is not aborted', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' as const, text: 'first' }, times: 1, respond: answer(respond([part('ack', 'on it')], 'awaiting'), toolUse('slow', { q: 'x' })) },
        { when: { on: 'user' as const, text: 'third' }, times: 1, respond: answer(toolUse('quick', { q: 'y' })) },
        { respond: answer(respond([part('response', 'done')], 'complete')) },
      ],
    });
    const slow = untilAborted();
    addTool(rt.registries, 'slow', slow.handler);
    const quick: AbortSignal[] = [];
    addTool(rt.registries, 'quick', (_a, ctx) => (quick.push(ctx.signal), { ok: true }));
    rt.registries.actors.register({ name: 'a', tools: ['slow', 'quick'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const r1 = await s.send('first');
    await slow.started();
    await s.send('second');
    expect((await r1.settled).finalizedBy).toBe('complete');
    expect(slow.signals[0]!.aborted).toBe(true);
    expect((await (await s.send('third')).settled).finalizedBy).toBe('complete');
    expect(quick).toHaveLength(1);
    expect(quick[0]!.aborted).toBe(false);
    expect(quick[0]).not.toBe(slow.signals[0]);
    await rt.close();
  });
});

describe('routed tools: many in parallel', () => {
  it('tools:signal:parallel-no-warning — twelve parallel calls listening on the turn\'s signal raise no listener-leak warning', async () => {
    const uses = Array.from({ length: 12 }, (_, i) => toolUse('lookup', { q: String(i) }));
    const { rt } = harness({
      rules: [
        { when: { on: 'user' as const }, respond: answer(...uses) },
        { when: { on: 'tool_result' as const }, respond: answer(respond([part('response', 'ok')], 'complete')) },
      ],
    });
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.name);
    process.on('warning', onWarning);
    addTool(rt.registries, 'lookup', (_a, ctx) => new Promise((r) => setTimeout(() => r({ ok: ctx.signal.aborted === false }), 5)));
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    expect((await (await s.send('go')).settled).finalizedBy).toBe('complete');
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect((await s.executions()).filter((x) => x.outcome === 'ok')).toHaveLength(12);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
    await rt.close();
  });
});

describe('routed tools: listeners over a turn\'s rounds', () => {
  it('tools:signal:rounds-no-warning — six rounds of two calls, each leaving a listener on the turn\'s signal, raise no listener-leak warning', async () => {
    const rules = Array.from({ length: 6 }, (_, i) => ({ when: { call: i }, respond: answer(toolUse('lookup', { q: `a${i}` }), toolUse('lookup', { q: `b${i}` })) }));
    const { rt } = harness({ rules: [...rules, { respond: answer(respond([part('response', 'ok')], 'complete')) }] });
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.name);
    process.on('warning', onWarning);
    const signals = new Set<AbortSignal>();
    addTool(rt.registries, 'lookup', (_a, ctx) => {
      signals.add(ctx.signal);
      ctx.signal.addEventListener('abort', () => {}); // never removed: it lives until the turn ends
      return { ok: true };
    });
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    expect((await (await s.send('go')).settled).finalizedBy).toBe('complete');
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect(signals.size).toBe(1);
    expect((await s.executions()).filter((x) => x.outcome === 'ok')).toHaveLength(12);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
    await rt.close();
  });
});

describe('routed tools: timeouts and retries', () => {
  it('tools:timeout:model-told — a tool over its timeoutMs gives the model an is_error result naming the timeout, and the turn goes on', async () => {
    const { rt, model } = harness({ rules: [CALL_SLOW, FINISH] });
    const slow = untilAborted();
    addTool(rt.registries, 'slow', slow.handler, { timeoutMs: 30 });
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const r = await s.send('go');
    const out = await r.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(slow.signals[0]!.aborted).toBe(true);
    expect((slow.aborted[0] as Error).name).toBe('TimeoutError');
    const result = toolResultsIn(model.requests[1]!).find((b) => b.tool_use_id === 'toolu_slow');
    expect(result).toMatchObject({ is_error: true, content: 'tool "slow" timed out after 30 ms' });
    expect(rec.of('tool.result')).toMatchObject([{ callId: 'toolu_slow', isError: true, view: 'tool "slow" timed out after 30 ms' }]);
    expect(await s.executions()).toMatchObject([{ tool: 'slow', callId: 'toolu_slow', attempt: 1, outcome: 'timeout', isError: true }]);
    expect(settledOf(rec.events, r.turnId)).toHaveLength(1);
    checkStream(rec.events, rt.registries, { settledTurns: [r.turnId] });
    await rt.close();
  });

  it('tools:retry:idempotent-logged — an idempotent tool that fails twice then succeeds is retried; the log shows 3 attempts and the model one result', async () => {
    const { rt, model } = harness({
      rules: [{ when: { on: 'user' as const, call: 0 }, respond: answer(toolUse('rates', { q: 'EUR' }, 'toolu_rates')) }, FINISH],
    });
    let runs = 0;
    addTool(
      rt.registries,
      'rates',
      () => {
        runs += 1;
        if (runs < 3) throw new Error(`upstream 503 (${runs})`);
        return { eur: 1.08 };
      },
      { idempotent: true, retry: { attempts: 3, backoffMs: 2 } },
    );
    rt.registries.actors.register({ name: 'a', tools: ['rates'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('rates?')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(runs).toBe(3);
    const execs = await s.executions();
    expect(execs.map((x) => [x.callId, x.attempt, x.outcome, x.isError])).toEqual([
      ['toolu_rates', 1, 'error', true],
      ['toolu_rates', 2, 'error', true],
      ['toolu_rates', 3, 'ok', false],
    ]);
    expect(execs[0]!.result).toContain('upstream 503 (1) (attempt 1 of 3)');
    expect(toolResultsIn(model.requests[1]!)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_rates', content: '{"eur":1.08}' })]);
    expect(toolResultsIn(model.requests[1]!)[0].is_error ?? false).toBe(false);
    expect(rec.of('tool.result')).toMatchObject([{ callId: 'toolu_rates', isError: false }]);
    await rt.close();
  });

  it('tools:retry:non-idempotent-never — a tool not declared idempotent that fails is run once; the model gets its error', async () => {
    const { rt, model } = harness({
      rules: [{ when: { on: 'user' as const, call: 0 }, respond: answer(toolUse('book', { q: 'BA2043' }, 'toolu_book')) }, FINISH],
    });
    let runs = 0;
    addTool(rt.registries, 'book', () => {
      runs += 1;
      throw new Error('payment gateway timeout');
    });
    rt.registries.actors.register({ name: 'a', tools: ['book'] });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('book it')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(runs).toBe(1);
    expect((await s.executions()).map((x) => [x.attempt, x.outcome])).toEqual([[1, 'error']]);
    expect(toolResultsIn(model.requests[1]!)).toMatchObject([{ tool_use_id: 'toolu_book', is_error: true, content: 'tool "book" failed: payment gateway timeout' }]);
    await rt.close();
  });
});
