// Peer harness. Run one framework variant in its own process, pinned to one core:
//   taskset -c 0 node --expose-gc bench/peers/harness.mjs <framework> <variant> perf
//   taskset -c 0 node --expose-gc bench/peers/harness.mjs <framework> <variant> mem [sessions]
// perf: sequential turns, each on a fresh session; warm-up then 7 runs of ~1.5 s; turns/s median.
// mem : N sessions (default 1000) x 1 turn kept alive -> heap bytes per idle session; then 2nd and 3rd turn on each.
// BENCH_QUICK=1 shortens perf to a 0.8 s warm-up and 3 runs of 0.3 s (smoke runs only).
// The last stdout line is one JSON object {"suite": "overhead" | "memory", "rows": [row]} for bench/run.mjs.
import { summarize, heapUsed as heapOnly, saveResults, fmt, now, cpuMicros } from '../lib.mjs';
// heap + off-heap ArrayBuffers/external (MemorySaver keeps serialized checkpoints as Uint8Array, outside heapUsed)
const heapUsed = () => { heapOnly(); const m = process.memoryUsage(); return m.heapUsed + m.external; };
import { USER_TEXT } from './script.mjs';

const [fw, variant, mode = 'perf', nArg] = process.argv.slice(2);
const quick = process.env.BENCH_QUICK === '1';
const mod = await import(`./${fw}.mjs`);
const impl = mod.variants[variant];
if (!impl) throw new Error(`unknown variant ${variant}; have ${Object.keys(mod.variants)}`);
const label = `${fw}/${variant}`;
const variantId = `${fw}:${variant}`;

// sanity check: one turn must produce exactly 3 model calls and 2 tool calls
{
  const s = await impl.createSession(0);
  const info = await impl.runTurn(s, USER_TEXT);
  if (impl.check) impl.check(s, info);
}

const WARM_MS = quick ? 800 : 1500;
const RUNS = quick ? 3 : 7;
const RUN_MS = quick ? 300 : 1500;

let row;
if (mode === 'perf') {
  let id = 1;
  const turn = impl.disposeSession
    ? async () => { const s = await impl.createSession(id++); await impl.runTurn(s, USER_TEXT); await impl.disposeSession(s); }
    : async () => { const s = await impl.createSession(id++); await impl.runTurn(s, USER_TEXT); };
  // warm-up (JIT): 1.5 s or 3000 turns; the 1.5 s are this process's CPU time, so a busy machine
  // does not cut the warm-up short
  // (process.cpuUsage is a system call: checked every 16 turns)
  { const c0 = cpuMicros(); const cpuMs = () => (cpuMicros() - c0) / 1000; for (let i = 0; i < 3000 && (i % 16 !== 0 || cpuMs() < WARM_MS); i++) await turn(); }
  const samples = [];
  // CPU time of this process per turn (user + system, all its threads, pinned to one core): unlike
  // wall time it does not count time the core spent on other processes.
  const cpuSamples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = now();
    const c0 = cpuMicros();
    let n = 0;
    while (now() - t0 < RUN_MS && n < 200000) { await turn(); n++; }
    samples.push((n / (now() - t0)) * 1000);
    cpuSamples.push((cpuMicros() - c0) / n);
  }
  const s = summarize(samples);
  const cpu = summarize(cpuSamples);
  const usTurn = 1e6 / s.median;
  const res = { label, turnsPerSec: s, usPerTurn: usTurn, usPerStep: usTurn / 5, cpuUsPerTurn: cpu };
  console.log(`${label.padEnd(34)} ${fmt(s.median).padStart(7)} turns/s  (min ${fmt(s.min)}, max ${fmt(s.max)}, spread ${s.spreadPct.toFixed(1)}%)  ${usTurn.toFixed(1)} µs/turn  ${(usTurn / 5).toFixed(1)} µs/step  (CPU ${cpu.median.toFixed(1)} µs/turn)`);
  saveResults(`peer-${fw}-${variant}-perf`, res);
  row = {
    variant: variantId,
    turnsPerSec: Math.round(s.median),
    usPerTurn: +usTurn.toFixed(1),
    cpuUsPerTurn: +cpu.median.toFixed(1),
    cpuUsPerTurnMin: +cpu.min.toFixed(1),
    minTurnsPerSec: Math.round(s.min),
    maxTurnsPerSec: Math.round(s.max),
    spreadPct: +s.spreadPct.toFixed(1),
    runs: s.n,
    disposesSession: !!impl.disposeSession,
  };
  if (impl.describeTurn) row.turn = impl.describeTurn();
} else {
  const N = nArg ? Number(nArg) : 1000;
  const sessions = [];
  const base = heapUsed();
  const t0 = now();
  for (let i = 0; i < N; i++) sessions.push(await impl.createSession(1000 + i));
  const created = heapUsed();
  for (const s of sessions) await impl.runTurn(s, USER_TEXT);
  const after1 = heapUsed();
  for (const s of sessions) await impl.runTurn(s, USER_TEXT);
  const after2 = heapUsed();
  for (const s of sessions) await impl.runTurn(s, USER_TEXT);
  const after3 = heapUsed();
  const ms = now() - t0;
  const res = {
    label,
    sessions: N,
    bytesPerSessionEmpty: Math.round((created - base) / N),
    bytesPerSessionAfter1Turn: Math.round((after1 - base) / N),
    bytesPerSessionPerExtraTurn: Math.round((after3 - after1) / (2 * N)),
    heapMB: { base: +(base / 1048576).toFixed(1), after1: +(after1 / 1048576).toFixed(1), after2: +(after2 / 1048576).toFixed(1), after3: +(after3 / 1048576).toFixed(1) },
    rssMB: Math.round(process.memoryUsage().rss / 1048576),
    wallMs: Math.round(ms),
  };
  if (impl.describeRetained) res.retained = impl.describeRetained();
  console.log(JSON.stringify(res));
  saveResults(`peer-${fw}-${variant}-mem`, res);
  row = { variant: variantId, ...res };
  delete row.label;
}
if (mod.close) await mod.close();
console.log(JSON.stringify({ suite: mode === 'perf' ? 'overhead' : 'memory', rows: [row] }));
process.exit(0);
