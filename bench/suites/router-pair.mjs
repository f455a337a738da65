// Router dispatch side by side with the round's base build (bench/reference.mjs): the current
// router, the base build's and a second copy of the base build, in one process pinned to one core,
// timed in rounds of blocks whose order rotates (H B C, B C H, C H B, then reversed ...), so all see
// the same machine at the same moments and none always follows another. "No slower than before" as
// a ratio from one run, where an absolute time from another machine would compare machines, not
// builds. The copy runs the base's code from other files: its ratio to the base is the harness's
// own bias and noise (two builds alternating A B B A read 1.01-1.04x for one build against its
// copy; the rotation brings that to 0.99-1.01x on a quiet VM).
// The figure is the median over the rounds of each round's CPU time per call, current over base:
// a neighbour's burst of load inflates the blocks it lands in, and a ratio of totals carries it
// whole. On a noisy VM the base against its copy read 0.93-1.06x as a ratio of totals and
// 0.98-1.02x as the median of rounds, in the same six runs; both are reported.
// The call is the router suite's "routed generalist, no observers" (a sync handler, an execution
// log that keeps nothing). Standalone; prints one JSON line {suite:'router-pair', rows}.
// `--quick`: fewer, shorter rounds.
import { blockOrder, summarize } from '../lib.mjs';
import { currentDist, referenceDist, referenceCopyDist, BASE_COMMIT } from '../reference.mjs';

const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const HEAD_DIST = currentDist();
const BASE_DIST = referenceDist(BASE_COMMIT);
if (!BASE_DIST) {
  console.log(JSON.stringify({ suite: 'router-pair', rows: [] }));
  process.exit(0);
}

/** One build's router, registry and timed loop (its own module instances). */
async function build(name, dist) {
  const { EventRouter } = await import(dist + 'router/index.js');
  const { ToolRegistry } = await import(dist + 'registries/tools.js');
  const { compileApprovalPolicy } = await import(dist + 'approvals/policy.js');
  const { loop } = await import(`../router-loop.mjs?v=${name}`);
  // The current registry takes the policy compiler (registries keep policies as data); the base's takes none.
  const reg = new ToolRegistry(compileApprovalPolicy);
  const tool = reg.register({ name: 'g', description: 'g', inputSchema: { type: 'object' }, scope: 'generalist', handler: (a) => ({ ok: true, n: a.n }) });
  const router = new EventRouter({ executionLog: { append() {} } });
  const ctx = { actorName: 'bench', sessionId: 's1', turnId: 't1', callId: 'c', signal: new AbortController().signal };
  const args = { n: 1 };
  return { name, run: (n) => loop(router, tool, args, ctx, n) };
}

const base = await build('base', BASE_DIST);
const head = await build('head', HEAD_DIST);
// The base build against a copy of itself: the same code, so its ratio is the harness's own bias
// and noise, the yardstick for the head's.
const COPY_DIST = referenceCopyDist(BASE_DIST);
const copy = await build('copy', COPY_DIST);
const builds = [head, base, copy];
const N = quick ? 20_000 : 100_000;
const ROUNDS = quick ? 6 : 30;
for (let i = 0; i < 20; i++) for (const b of builds) await b.run(N / 10); // warm-up (JIT)

const total = { base: 0, head: 0, copy: 0 };
const ratios = [];
const sameRatios = [];
for (let p = 0; p < ROUNDS; p++) {
  const r = {};
  for (const b of blockOrder(builds, p)) {
    const ns = await b.run(N);
    total[b.name] += ns;
    r[b.name] = ns / N / 1000;
  }
  ratios.push(r.head / r.base);
  sameRatios.push(r.copy / r.base);
}
const rs = summarize(ratios);
const ss = summarize(sameRatios);
const row = {
  name: 'routed generalist, no observers: current / base build',
  base: BASE_COMMIT,
  ratio: +rs.median.toFixed(3),
  ratioMin: +rs.min.toFixed(3),
  ratioMax: +rs.max.toFixed(3),
  ratioOfTotals: +(total.head / total.base).toFixed(3),
  headUsPerCall: +(total.head / (ROUNDS * N) / 1000).toFixed(3),
  baseUsPerCall: +(total.base / (ROUNDS * N) / 1000).toFixed(3),
  sameBuildRatio: +ss.median.toFixed(3),
  sameBuildRatioMin: +ss.min.toFixed(3),
  sameBuildRatioMax: +ss.max.toFixed(3),
  sameBuildRatioOfTotals: +(total.copy / total.base).toFixed(3),
  pairs: ROUNDS,
  callsPerBlock: N,
};
console.log(`router, routed generalist: current / base (${BASE_COMMIT}), median of ${ROUNDS} rounds ${row.ratio}x (${row.ratioMin}-${row.ratioMax}x; totals ${row.headUsPerCall} / ${row.baseUsPerCall} CPU µs = ${row.ratioOfTotals}x); the base against a copy of itself: ${row.sameBuildRatio}x (${row.sameBuildRatioMin}-${row.sameBuildRatioMax}x; totals ${row.sameBuildRatioOfTotals}x)`);
console.log(JSON.stringify({ suite: 'router-pair', rows: [row] }));
