/**
 * The approval-policy evaluator pool shared by every tenant (src/approvals/cel-sandbox.ts), found
 * by the policy review: "a policy at its budget does not slow the server's own turns" and "no
 * policy stalls the server" (docs/concepts/approvals.md). Evaluations waited first come, first
 * served with no bound, so one tenant's slow policies held every other tenant's behind them (a
 * trivial policy waited 9.3 s behind 50 slow ones); and the evaluator's heap grew with every
 * runtime type a model's arguments named until an innocent evaluation ran out of it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closePolicyEvaluators, compileApprovalPolicy, DEFAULT_POLICY_LIMITS } from '../../src/approvals/policy.js';
import type { PolicyContext } from '../../src/registries/types.js';
import type { PolicyResult } from '../../src/types.js';
import { seeded } from '../seeded.js';

const tenant = (id: string): PolicyContext => ({ actor: 'a', session: { id: `s-${id}`, tenantId: id }, turn: { id: 't' }, user: {}, tenant: { id } });

afterAll(() => closePolicyEvaluators());

describe('approval-policy evaluator pool under load', () => {
  it('approvals:budget:heap — "later evaluations run on a fresh evaluator": an evaluator whose heap model-chosen shapes grew past half is replaced, and no evaluation, queued or innocent, fails for it (one ran out of its 64 MB)', async () => {
    // Its own pool (heap 48 MB), so the growth is this test's alone.
    const limits = { ...DEFAULT_POLICY_LIMITS, evaluationHeapMb: 48, evaluationTimeoutMs: 2_000 };
    const policy = compileApprovalPolicy('bulk', { autoApproveIf: 'args.l.exists(x, x < 50)' }, undefined, limits);
    const innocent = compileApprovalPolicy('small', { autoApproveIf: 'args.totalCost < 50' }, undefined, limits);
    const next = seeded(7);
    const leaves = [1, 'x', true, null, 1.5];
    // cel-js names (and keeps, for good) the runtime type of every nested shape a policy compares.
    const shape = (): unknown => {
      let v: unknown = leaves[Math.floor(next() * leaves.length)];
      for (let d = 0; d < 30; d++) v = next() < 0.5 ? [v] : { k: v };
      return v;
    };
    const outcomes: Record<string, number> = {};
    for (let round = 0; round < 15; round++) {
      // Four at a time: when an evaluator is replaced, evaluations are waiting for it.
      const batch = await Promise.all(Array.from({ length: 4 }, () => policy.evaluate({ l: Array.from({ length: 60 }, shape) }, tenant('a')) as Promise<PolicyResult>));
      for (const r of batch) outcomes[r.source] = (outcomes[r.source] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ 'cel-error': 60 });
    expect(await innocent.evaluate({ totalCost: 10 }, tenant('b'))).toEqual({ decision: 'approve', source: 'cel' });
  });

  it('approvals:budget:fair — one tenant\'s backlog of slow policies does not hold another tenant\'s evaluation behind it, and no evaluation waits past its queue limit (a trivial policy waited 9.3 s behind 50 slow ones)', async () => {
    // Its own pool; A's policy runs to its budget (100 ms) on a list the model chose.
    const limits = { ...DEFAULT_POLICY_LIMITS, evaluationHeapMb: 40, evaluationTimeoutMs: 100 };
    const slow = compileApprovalPolicy('bulk_order', { autoApproveIf: 'args.items.all(x, args.items.exists_one(y, y == x))' }, undefined, limits);
    // B waits as long as it must: what is checked is that it is served in turn, not after A's backlog.
    const trivial = compileApprovalPolicy('book_flight', { autoApproveIf: 'args.totalCost < 50' }, undefined, { ...limits, evaluationQueueMs: 60_000 });
    expect(await trivial.evaluate({ totalCost: 1 }, tenant('b'))).toEqual({ decision: 'approve', source: 'cel' }); // the pool is up
    const items = Array.from({ length: 1990 }, (_, i) => `sku-${i}`);
    const t0 = performance.now();
    const as = Array.from({ length: 40 }, () => slow.evaluate({ items }, tenant('a')) as Promise<PolicyResult>);
    const b = trivial.evaluate({ totalCost: 1 }, tenant('b'));
    // Served first come, first served, B came after 40 evaluations of 100 ms, each followed by a cold start.
    const deadline = new Promise((resolve) => setTimeout(() => resolve('still waiting after 8 s'), 8_000).unref());
    expect(await Promise.race([b, deadline])).toEqual({ decision: 'approve', source: 'cel' });
    const settledA = await Promise.race([Promise.all(as), deadline]);
    expect(Array.isArray(settledA), 'A settled within 8 s').toBe(true);
    const reasons = new Set((settledA as PolicyResult[]).map((r) => `${r.decision}/${r.source}/${r.reason}`));
    // None approves; each ran to its budget or gave up waiting for an evaluator (policy-budget either way).
    expect([...reasons].sort()).toEqual([
      'ask/policy-budget/autoApproveIf not decided: evaluation exceeded its 100 ms budget',
      'ask/policy-budget/autoApproveIf not decided: policy evaluators busy: none was free within 500 ms',
    ]);
    expect(performance.now() - t0).toBeLessThan(8_000);
  });
});
