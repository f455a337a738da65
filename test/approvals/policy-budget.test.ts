/**
 * Approval policies under a budget: CEL runs in a worker thread with a time limit and a heap cap,
 * `matches` on RE2. Each pathological expression below once stalled or killed the server.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { closePolicyEvaluators, compileApprovalPolicy, DEFAULT_POLICY_LIMITS, type PolicyLimits } from '../../src/approvals/policy.js';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { healthTransport, startServer } from '../../src/transports/server.js';
import type { PolicyContext } from '../../src/registries/types.js';
import type { PolicyResult } from '../../src/types.js';
import { addTool, answer, harness, part, Recorder, respond, toolUse } from '../runtime/helpers.js';

const ctx: PolicyContext = { actor: 'a', session: { id: 's' }, turn: { id: 't' }, user: {}, tenant: {} };
const S64K = 'a'.repeat(64_000);

/** Nested all() over a 64,000-element list: 4·10⁹ steps. */
const NESTED_ALL = 'args.s.split("").all(x, args.s.split("").all(y, x == y || true))';
/** 96 characters that ask for 64,000 lists of 64,000 strings. */
const HEAP_SHORT = 'args.s.split("").map(x, args.s.split("").map(y, x + y)).size() > 0 && args.s.size() > 9999999999';
/** 2,762 characters: 145 copies of a 64,000-element list concatenated one after another. */
const HEAP_LONG = `size(${Array(145).fill('args.s.split("")').join(' + ')}) > 0`;

async function timed(expr: string, args: unknown, limits: PolicyLimits = DEFAULT_POLICY_LIMITS): Promise<{ r: PolicyResult; ms: number }> {
  const policy = compileApprovalPolicy('t', { autoApproveIf: expr }, undefined, limits);
  await policy.evaluate({ s: 'warm' }, ctx); // the worker is up; its start-up is not the policy's time
  const t0 = performance.now();
  const r = await policy.evaluate(args, ctx);
  return { r, ms: performance.now() - t0 };
}

afterAll(() => closePolicyEvaluators());

describe('approval policies under a budget', () => {
  it('approvals:budget:regex-linear — args.to.matches("[a-z]+@[a-z]+[.][a-z]+") over 64,000 characters decides in milliseconds (was 6 s)', async () => {
    const { r, ms } = await timed('args.to.matches("[a-z]+@[a-z]+[.][a-z]+")', { to: S64K.slice(0, 64_000) });
    expect(r).toEqual({ decision: 'ask', source: 'cel' });
    expect(ms).toBeLessThan(DEFAULT_POLICY_LIMITS.evaluationTimeoutMs);
    const ok = await timed('args.to.matches("[a-z]+@[a-z]+[.][a-z]+")', { to: `${S64K.slice(0, 60_000)} bob@example.com` });
    expect(ok.r).toEqual({ decision: 'approve', source: 'cel' });
  });

  it('approvals:budget:regex-linear — [a-z]*[a-z]*q over 3,000 and 64,000 characters decides in milliseconds (was 7.7 s at 3,000)', async () => {
    for (const n of [3000, 64_000]) {
      const { r, ms } = await timed('args.s.matches("[a-z]*[a-z]*q")', { s: S64K.slice(0, n) });
      expect(r).toEqual({ decision: 'ask', source: 'cel' });
      expect(ms).toBeLessThan(DEFAULT_POLICY_LIMITS.evaluationTimeoutMs);
    }
  });

  it('approvals:budget:time — a nested all() over a 64,000-element list asks with source policy-budget at the time limit (ran for minutes)', async () => {
    const { r, ms } = await timed(NESTED_ALL, { s: S64K });
    expect(r).toEqual({ decision: 'ask', source: 'policy-budget', reason: 'autoApproveIf not decided: evaluation exceeded its 200 ms budget' });
    expect(ms).toBeGreaterThanOrEqual(DEFAULT_POLICY_LIMITS.evaluationTimeoutMs - 5);
    expect(ms).toBeLessThan(DEFAULT_POLICY_LIMITS.evaluationTimeoutMs + 500);
  });

  it('approvals:budget:heap — the 96- and 2,762-character heap bombs ask with source policy-budget; the process lives on (was SIGABRT)', async () => {
    expect(HEAP_SHORT.length).toBe(96);
    expect(HEAP_LONG.length).toBe(2762);
    for (const expr of [HEAP_SHORT, HEAP_LONG]) {
      const { r, ms } = await timed(expr, { s: S64K });
      expect(r).toMatchObject({ decision: 'ask', source: 'policy-budget' });
      expect(ms).toBeLessThan(DEFAULT_POLICY_LIMITS.evaluationTimeoutMs + 500);
    }
    // With all the time in the world, the heap cap is what stops it.
    const { r } = await timed(HEAP_LONG, { s: S64K }, { ...DEFAULT_POLICY_LIMITS, evaluationTimeoutMs: 60_000, evaluationHeapMb: 16 });
    expect(r).toEqual({ decision: 'ask', source: 'policy-budget', reason: 'autoApproveIf not decided: evaluation exceeded its 16 MB heap budget' });
    // The evaluator was replaced: ordinary policies still decide.
    expect((await timed('args.s == "x"', { s: 'x' })).r).toEqual({ decision: 'approve', source: 'cel' });
  }, 90_000);

  it('approvals:budget:cheap — an ordinary policy decides every call through its worker, approve and ask alike, one after another (its cost per call: bench/suites/policies-ids.mjs, under 1 ms)', async () => {
    const policy = compileApprovalPolicy('t', { autoApproveIf: "args.totalCost < 50 && ctx.user.tier == 'trusted'" });
    const trusted = { ...ctx, user: { tier: 'trusted' } };
    const decided: string[] = [];
    for (let i = 0; i < 500; i++) decided.push((await policy.evaluate({ totalCost: i % 100 }, trusted)).decision);
    expect(decided).toEqual(Array.from({ length: 500 }, (_, i) => (i % 100 < 50 ? 'approve' : 'ask')));
    expect(await policy.evaluate({ totalCost: 1 }, { ...ctx, user: { tier: 'new' } })).toEqual({ decision: 'ask', source: 'cel' });
  });

  it('approvals:budget:healthz — /healthz answers with p99 under 50 ms while the worst policies evaluate', async () => {
    const runtime = createRuntime({ model: createScriptedModel({ rules: [] }) });
    const srv = await startServer({ runtime, transports: [healthTransport()], port: 0 });
    const worst = [NESTED_ALL, HEAP_SHORT, HEAP_LONG, 'args.s.matches("[a-z]+@[a-z]+[.][a-z]+")'].map((e) => compileApprovalPolicy('t', { autoApproveIf: e }));
    await Promise.all(worst.map((p) => p.evaluate({ s: 'warm' }, ctx)));
    let stop = false;
    const decided: PolicyResult[] = [];
    const load = (async () => {
      while (!stop) decided.push(...(await Promise.all(worst.map((p) => p.evaluate({ s: S64K }, ctx)))));
    })();
    const latencies: number[] = [];
    const lag = monitorEventLoopDelay({ resolution: 5 });
    lag.enable();
    try {
      const until = performance.now() + 3000;
      while (performance.now() < until) {
        const t0 = performance.now();
        const res = await fetch(`${srv.url}/healthz`);
        await res.json();
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 5));
      }
    } finally {
      stop = true;
      await load;
      await srv.close();
    }
    lag.disable();
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)]!;
    console.log(`approvals:budget:healthz: ${latencies.length} requests, p50 ${latencies[latencies.length >> 1]!.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms; ${decided.length} worst-case evaluations; event-loop delay p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms, max ${(lag.max / 1e6).toFixed(1)} ms`);
    expect(decided.length).toBeGreaterThanOrEqual(4);
    expect(decided.every((r) => r.decision === 'ask')).toBe(true);
    expect(decided.filter((r) => r.source === 'policy-budget').length).toBeGreaterThan(2);
    expect(p99).toBeLessThan(50);
  }, 30_000);

  it('approvals:budget:audit — through a real turn, a policy over its budget suspends for a human; the approval record says policy-budget and why', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('book', { q: S64K })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'booked')], 'complete')) },
      ],
    });
    addTool(rt.registries, 'book', () => ({ ok: 1 }), { requiresApproval: { autoApproveIf: NESTED_ALL.replaceAll('args.s', 'args.q') } });
    rt.registries.actors.register({ name: 'a', tools: ['book'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const t = await s.send('book it');
    expect((await t.settled).finalizedBy).toBe('suspended');
    const requested = rec.of('approval.requested')[0]!;
    const why = { decision: 'ask', source: 'policy-budget', reason: 'autoApproveIf not decided: evaluation exceeded its 200 ms budget' };
    expect(requested.policyResult).toEqual(why);
    expect((await s.snapshot()).pendingApprovals[0]!.policyResult).toEqual(why);
    await rt.close();
  });
});
