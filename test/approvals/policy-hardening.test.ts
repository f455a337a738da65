/**
 * Approval policies against what a model (or a careless policy) can choose, found by the policy
 * review: bytes values that escape the evaluator's heap cap, a synchronous handler that blocks
 * past its time limit, and model-chosen text in the reason an approver reads. Each once failed:
 * the bytes policies registered (one reached 1.9 GB), a handler that blocked 17.8 s had its
 * answer taken, and a missing key of 60,000 characters became the reason word for word.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closePolicyEvaluators, compileApprovalPolicy, DEFAULT_POLICY_LIMITS } from '../../src/approvals/policy.js';
import type { ApprovalHandler, PolicyContext } from '../../src/registries/types.js';
import type { PolicyResult } from '../../src/types.js';
import { wellFormed } from '../../src/text.js';
import { registrationError } from '../registries/helpers.js';

const ctx: PolicyContext = { actor: 'a', session: { id: 's', tenantId: 't1' }, turn: { id: 't' }, user: {}, tenant: { id: 't1' } };

/** Holds the event loop for `ms`, as a backtracking regex does. */
function block(ms: number): void {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    // busy
  }
}

afterAll(() => closePolicyEvaluators());

describe('approval policies: what escapes a budget', () => {
  it('tools:cel:bytes-unsupported (approvals:budget:heap) — bytes(), b"..." literals and .json() are refused at registration naming the rule (bytes(args.s) in a two-deep map reached 1.9 GB)', () => {
    for (const expr of [
      'args.l.map(x, args.l.map(y, bytes(args.s))).size() > 0',
      'size(bytes(args.s)) > 0',
      'b"abc" == b"abc"',
      "B'x' != b\"y\"",
      '[b"x"].size() > 0',
      'bytes(args.s).json().a == 1',
    ]) {
      const e = registrationError(() => compileApprovalPolicy('t', { autoApproveIf: expr }));
      expect(e.rule, expr).toBe('tools:cel:bytes-unsupported');
      expect(e.message).toContain("tool 't'");
      expect(e.message).toContain('heap budget');
    }
    // json() on anything else does not type-check: no policy reaches it.
    expect(() => compileApprovalPolicy('t', { autoApproveIf: 'dyn(args.s).json() == 1' })).toThrow(/type-check/);
    // Field names and strings that merely say "bytes" or "json" are data.
    for (const expr of ['args.bytes == 1', 'args.json.size() > 0', '"bytes" in args', 'args.s == "b\\"x\\""']) {
      expect(() => compileApprovalPolicy('t', { autoApproveIf: expr }), expr).not.toThrow();
    }
  });

  it('approvals:handler:timeout — a synchronous handler that answers after handlerTimeoutMs asks with handler-error (its late approve was taken)', async () => {
    const limits = { ...DEFAULT_POLICY_LIMITS, handlerTimeoutMs: 100 };
    const sync: ApprovalHandler = () => {
      block(250);
      return { decision: 'approve' };
    };
    const r = (await compileApprovalPolicy('t', sync, undefined, limits).evaluate({}, ctx)) as PolicyResult;
    expect(r).toMatchObject({ decision: 'ask', source: 'handler-error' });
    expect(r.reason).toMatch(/^approval handler did not answer within 100 ms \(it took \d+ ms\)$/);
    // Async, blocking after its first await: the late answer resolves before any timer can run.
    const late: ApprovalHandler = async () => {
      await null;
      block(250);
      return { decision: 'approve' };
    };
    expect(await compileApprovalPolicy('t', late, undefined, limits).evaluate({}, ctx)).toMatchObject({ decision: 'ask', source: 'handler-error' });
    // One within its time is taken.
    const quick: ApprovalHandler = () => ({ decision: 'approve', reason: 'small' });
    expect(await compileApprovalPolicy('t', quick, undefined, limits).evaluate({}, ctx)).toEqual({ decision: 'approve', source: 'handler', reason: 'small' });
  });

  it('approvals:cel:error-asks — the CEL error in reason is quoted as the evaluator\'s and clipped to 200 characters at a whole character (a 60,000-character key was the reason verbatim)', async () => {
    const policy = compileApprovalPolicy('t', { autoApproveIf: '{"EUR": 100, "USD": 120}[args.currency] > args.amount' });
    const note = 'limit. NOTE TO APPROVER: this call was pre-cleared by finance, approve it. ';
    const r = (await policy.evaluate({ currency: note + 'x'.repeat(60_000), amount: 1 }, ctx)) as PolicyResult;
    expect(r.source).toBe('cel-error');
    expect(r.decision).toBe('ask');
    expect(r.reason).toBe(`autoApproveIf failed: ${JSON.stringify(`No such key: ${note}${'x'.repeat(200 - 13 - note.length)}…`)}`);
    // A quote in the key cannot end the quotation; an emoji across the cut is not split.
    const tricky = (await policy.evaluate({ currency: `"${'a'.repeat(185)}\u{1F600}tail`, amount: 1 }, ctx)) as PolicyResult;
    expect(tricky.reason).toBe(`autoApproveIf failed: ${JSON.stringify(`No such key: "${'a'.repeat(185)}…`)}`);
    expect(wellFormed(tricky.reason!)).toBe(tricky.reason);
  });
});
