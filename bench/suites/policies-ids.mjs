// Micro-benchmark of two per-request costs that tests used to time: an id (sessions, turns and
// approvals draw 128 CSPRNG bits each) and an approval policy's evaluation (CEL in a worker, so a
// policy's time includes the round trip), plus the rejection of an oversized input before any
// evaluation. Standalone; prints one JSON line {suite:'policies-ids', rows}. Budgets in bench/run.mjs.
// Uses the built package (dist/); from a source checkout: `node --import tsx bench/suites/policies-ids.mjs`.
import { summarize } from '../lib.mjs';
import { loadBuild } from '../reference.mjs';

const { createIdSource } = await loadBuild('host/clock.js');
const { compileApprovalPolicy, closePolicyEvaluators } = await loadBuild('approvals/policy.js');

const QUICK = process.argv.includes('--quick');
const RUNS = QUICK ? 3 : 7;
const median = (xs) => summarize(xs).median;
const rows = [];

// An id: the median of RUNS runs of 200,000 ids (after 10,000 to warm up).
{
  const id = createIdSource();
  for (let i = 0; i < 10_000; i++) id('turn');
  const n = 200_000;
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) id('turn');
    samples.push(Number(process.hrtime.bigint() - t0) / n / 1000);
  }
  rows.push({ name: 'id (128 CSPRNG bits, base64url)', usPerOp: +median(samples).toFixed(3) });
}

const ctx = { actor: 'a', session: { id: 's' }, turn: { id: 't' }, user: { tier: 'trusted' }, tenant: {} };

// An ordinary CEL policy, one evaluation after another (each a round trip to the evaluator worker).
{
  const policy = compileApprovalPolicy('t', { autoApproveIf: "args.totalCost < 50 && ctx.user.tier == 'trusted'" });
  for (let i = 0; i < 200; i++) await policy.evaluate({ totalCost: i }, ctx);
  const n = QUICK ? 300 : 1000;
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const d = await policy.evaluate({ totalCost: i % 100 }, ctx);
      if (d.decision !== (i % 100 < 50 ? 'approve' : 'ask')) throw new Error(`policy decided ${JSON.stringify(d)} for totalCost ${i % 100}`);
    }
    samples.push(Number(process.hrtime.bigint() - t0) / n / 1000);
  }
  rows.push({ name: 'approval policy, ordinary CEL (worker round trip)', usPerOp: +median(samples).toFixed(1) });
}

// A 100,000-element list in args: refused by the input bounds (cel-error), not evaluated.
{
  const policy = compileApprovalPolicy('t', { autoApproveIf: 'args.items.all(i, i >= 0)' });
  await policy.evaluate({ items: [1] }, ctx);
  const items = Array.from({ length: 100_000 }, (_, i) => i);
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    const d = await policy.evaluate({ items }, ctx);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (d.source !== 'cel-error') throw new Error(`a 100k list was not refused: ${JSON.stringify(d)}`);
  }
  rows.push({ name: 'approval policy, 100,000-element list refused', msPerOp: +median(samples).toFixed(3) });
}

closePolicyEvaluators();
console.log(JSON.stringify({ suite: 'policies-ids', rows }));
