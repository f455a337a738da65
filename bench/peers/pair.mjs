// Paired turn overhead: two variants of one framework in one process, pinned to one core, measured
// in alternating blocks, so both see the same machine at the same moments:
//   taskset -c 0 node --expose-gc bench/peers/pair.mjs <framework> <variantA> <variantB>
// The ratio of a budget that compares two variants (the SQLite store vs the memory store) is B's
// CPU time per turn over A's, each totalled over all its blocks. Blocks run A B B A A B ... so a drift
// of the machine's speed over the run weighs on both sides alike. Turns are the harness's turns
// (each on a fresh session, disposed after it). Separate processes measured one after another
// see this VM's speed change by 30-50% between runs; adjacent blocks see far less.
// BENCH_QUICK=1: fewer, shorter blocks (smoke runs only).
// The last stdout line is one JSON object {"suite": "pair", "rows": [row]} for bench/run.mjs.
import { cpuMicros, summarize, saveResults } from '../lib.mjs';
import { USER_TEXT } from './script.mjs';

const [fw, a, b] = process.argv.slice(2);
const quick = process.env.BENCH_QUICK === '1';
const mod = await import(`./${fw}.mjs`);
const impls = { [a]: mod.variants[a], [b]: mod.variants[b] };
for (const v of [a, b]) if (!impls[v]) throw new Error(`unknown variant ${v}; have ${Object.keys(mod.variants)}`);

const ids = { [a]: 1, [b]: 1_000_000_000 };
const turnOf = (v) => {
  const impl = impls[v];
  return async () => {
    const s = await impl.createSession(ids[v]++);
    const out = await impl.runTurn(s, USER_TEXT);
    if (impl.disposeSession) await impl.disposeSession(s);
    return out;
  };
};
const turns = { [a]: turnOf(a), [b]: turnOf(b) };

// sanity: each variant's turn is the checked turn (3 model calls, 2 tool executions)
for (const v of [a, b]) {
  const impl = impls[v];
  const s = await impl.createSession(0);
  const out = await impl.runTurn(s, USER_TEXT);
  if (impl.check) impl.check(s, out);
}

/** Runs variant v for about `ms` of CPU time; returns [turns, CPU µs]. */
async function block(v, ms) {
  const turn = turns[v];
  const c0 = cpuMicros();
  let n = 0;
  // process.cpuUsage is a system call: checked every 16 turns
  while (n % 16 !== 0 || cpuMicros() - c0 < ms * 1000) { await turn(); n++; }
  return [n, cpuMicros() - c0];
}

const WARM_MS = quick ? 400 : 1500;
const PAIRS = quick ? 4 : 16;
const BLOCK_MS = quick ? 150 : 400;
for (let i = 0; i < 3; i++) { await block(a, WARM_MS / 3); await block(b, WARM_MS / 3); }

const perTurn = { [a]: [], [b]: [] };
const total = { [a]: [0, 0], [b]: [0, 0] }; // [turns, CPU µs]
const ratios = [];
for (let p = 0; p < PAIRS; p++) {
  const order = p % 2 === 0 ? [a, b] : [b, a];
  const r = {};
  for (const v of order) {
    const [n, us] = await block(v, BLOCK_MS);
    r[v] = us / n;
    perTurn[v].push(r[v]);
    total[v][0] += n;
    total[v][1] += us;
  }
  ratios.push(r[b] / r[a]);
}
const ra = summarize(ratios);
// The budget's figure: total CPU time per turn of B over that of A across all blocks. Costs that
// come in bursts (a SQLite WAL checkpoint every few hundred turns) are spread over every turn,
// where a median of block ratios would count them by luck.
const meanA = total[a][1] / total[a][0];
const meanB = total[b][1] / total[b][0];
const ratio = meanB / meanA;
const sa = summarize(perTurn[a]);
const sb = summarize(perTurn[b]);
const row = {
  framework: fw,
  a: `${fw}:${a}`,
  b: `${fw}:${b}`,
  pairs: PAIRS,
  blockMs: BLOCK_MS,
  ratio: +ratio.toFixed(3),
  aMeanCpuUsPerTurn: +meanA.toFixed(1),
  bMeanCpuUsPerTurn: +meanB.toFixed(1),
  turns: { [a]: total[a][0], [b]: total[b][0] },
  ratioMedian: +ra.median.toFixed(3),
  ratioMin: +ra.min.toFixed(3),
  ratioMax: +ra.max.toFixed(3),
  aCpuUsPerTurn: +sa.median.toFixed(1),
  bCpuUsPerTurn: +sb.median.toFixed(1),
  aSpreadPct: +sa.spreadPct.toFixed(1),
  bSpreadPct: +sb.spreadPct.toFixed(1),
};
console.log(`${fw} ${b} / ${a}: ${ratio.toFixed(2)}x of mean CPU per turn (${a} ${meanA.toFixed(1)} µs, ${b} ${meanB.toFixed(1)} µs over ${total[a][0]} + ${total[b][0]} turns); per pair median ${ra.median.toFixed(2)}x, min ${ra.min.toFixed(2)}x, max ${ra.max.toFixed(2)}x`);
saveResults(`pair-${fw}-${a}-${b}`, row);
if (mod.close) await mod.close();
console.log(JSON.stringify({ suite: 'pair', rows: [row] }));
process.exit(0);
