// Router dispatch side by side with the round's base build (bench/reference.mjs): both routers in
// one process, pinned to one core, timed in alternating blocks (B A A B ...), so both see the same
// machine at the same moments. The figure is the current build's CPU time per routed call over the
// base build's, totalled over all blocks: "no slower than before" as a ratio from one run, where an
// absolute time from another machine would compare machines, not builds. The call is the router
// suite's "routed generalist, no observers" (a sync handler, an execution log that keeps nothing).
// Standalone; prints one JSON line {suite:'router-pair', rows}. `--quick`: fewer, shorter blocks.
import { summarize } from '../lib.mjs';
import { currentDist, referenceDist, BASE_COMMIT } from '../reference.mjs';

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
const N = quick ? 20_000 : 100_000;
const PAIRS = quick ? 6 : 40;
for (let i = 0; i < 20; i++) { await base.run(N / 10); await head.run(N / 10); } // warm-up (JIT)

const total = { base: 0, head: 0 };
const ratios = [];
for (let p = 0; p < PAIRS; p++) {
  const order = p % 2 === 0 ? [head, base] : [base, head];
  const r = {};
  for (const b of order) {
    const ns = await b.run(N);
    total[b.name] += ns;
    r[b.name] = ns / N / 1000;
  }
  ratios.push(r.head / r.base);
}
const rs = summarize(ratios);
const row = {
  name: 'routed generalist, no observers: current / base build',
  base: BASE_COMMIT,
  ratio: +(total.head / total.base).toFixed(3),
  headUsPerCall: +(total.head / (PAIRS * N) / 1000).toFixed(3),
  baseUsPerCall: +(total.base / (PAIRS * N) / 1000).toFixed(3),
  ratioMedian: +rs.median.toFixed(3),
  ratioMin: +rs.min.toFixed(3),
  ratioMax: +rs.max.toFixed(3),
  pairs: PAIRS,
  callsPerBlock: N,
};
console.log(`router, routed generalist: current ${row.headUsPerCall} CPU µs / base (${BASE_COMMIT}) ${row.baseUsPerCall} CPU µs = ${row.ratio}x (per pair median ${row.ratioMedian}x, ${row.ratioMin}-${row.ratioMax}x)`);
console.log(JSON.stringify({ suite: 'router-pair', rows: [row] }));
