// Runs the whole benchmark: peers and turnstate through the same scripted turn (bench/peers/harness.mjs),
// idle sessions under passivation (bench/passivation.mjs) and every bench/suites/*.mjs script, each in
// its own process pinned to one core with taskset; collects their JSON lines and writes the report.
//   node bench/run.mjs            full run, writes docs/benchmarks.md (5-9 minutes, depending on the machine's load)
//   node bench/run.mjs --quick    smoke run (1-2 minutes), writes bench/results/benchmarks-quick.md
//   --out <file>                  write the report elsewhere; BENCH_CPU=<n> pins to another core (default 0)
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, mkdirSync, existsSync, cpSync, rmSync } from 'node:fs';
import { cpus, totalmem, loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, '..');
const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
const outIdx = argv.indexOf('--out');
const OUT = outIdx >= 0 ? argv[outIdx + 1] : QUICK ? join(BENCH, 'results', 'benchmarks-quick.md') : join(ROOT, 'docs', 'benchmarks.md');
// Two lanes run side by side, each pinned to its own core: timing (turn overhead, component suites)
// on core 0, memory (per session, passivation) on core 1. With one core, or BENCH_LANES=1, one lane.
const CPU = process.env.BENCH_CPU ?? '0';
const CPU2 = process.env.BENCH_CPU2 ?? '1';
const HAVE_TASKSET = spawnSync('taskset', ['-c', CPU, 'true']).status === 0;
const TWO_LANES = process.env.BENCH_LANES !== '1' && cpus().length >= 2 && HAVE_TASKSET && spawnSync('taskset', ['-c', CPU2, 'true']).status === 0 && CPU2 !== CPU;
const startedAt = new Date();

// Every turnstate job of this run imports the same build: a copy of dist/ taken now (bench/.dist/;
// its imports resolve from bench/node_modules, then the project's node_modules).
const DIST_COPY = join(BENCH, '.dist');
if (!existsSync(join(ROOT, 'dist', 'runtime.js'))) {
  console.error('dist/ is missing: run `npm run build` first (`npm run bench` does)');
  process.exit(2);
}
rmSync(DIST_COPY, { recursive: true, force: true });
cpSync(join(ROOT, 'dist'), DIST_COPY, { recursive: true });

/* ------------------------------------------------------------------ jobs */

// [framework, variant, perf rounds]; the variants the tight budgets compare run twice, interleaved.
const R = QUICK ? 1 : 2;
const PERF = [
  ['baseline', 'loop', 1],
  ['xstate', 'actor', R],
  ['turnstate', 'memory', R],
  ['turnstate', 'sqlite', R],
  ['langgraph', 'no-checkpointer', 1],
  ['langgraph', 'memorysaver', 1],
  ['openai-agents', 'history', 1],
  ['openai-agents', 'memory-session', 1],
  ['ai-sdk', 'generateText', 1],
  ['ai-sdk', 'streamText', 1],
  ['mastra', 'generate', 1],
];
const BIG = QUICK ? 1000 : 10000; // sessions for turnstate, xstate and the plain loop
const SMALL = QUICK ? 100 : 1000; // sessions for the other peers (the peers' harness default)
const MEM_ALL = [
  ['baseline', 'loop', BIG],
  ['xstate', 'actor', BIG],
  ['turnstate', 'memory', BIG],
  ['turnstate', 'sqlite', BIG],
  ['langgraph', 'no-checkpointer', SMALL],
  ['langgraph', 'memorysaver', SMALL],
  ['openai-agents', 'history', SMALL],
  ['openai-agents', 'memory-session', SMALL],
  ['ai-sdk', 'generateText', SMALL],
  ['ai-sdk', 'streamText', SMALL],
  ['mastra', 'generate', Math.min(SMALL, 300)], // Mastra takes ~0.1 s per session here: fewer sessions keep the run short
];
const QUICK_MEM = new Set(['baseline:loop', 'xstate:actor', 'turnstate:memory', 'turnstate:sqlite', 'langgraph:no-checkpointer', 'ai-sdk:generateText', 'openai-agents:history']);
const MEM = QUICK ? MEM_ALL.filter(([fw, v]) => QUICK_MEM.has(`${fw}:${v}`)) : MEM_ALL;
const IDLE = QUICK ? 5000 : 100000;

const jobs = [];
const perfJob = ([fw, v]) => ({ kind: 'perf', name: `perf ${fw}:${v}`, args: ['peers/harness.mjs', fw, v, 'perf'], timeoutMs: 90_000 });
const firstRound = PERF.map(perfJob);
const extraRounds = [];
for (let r = 1; r < R; r++) for (const p of PERF) if (p[2] > r) extraRounds.push(perfJob(p));
jobs.push(...firstRound, ...extraRounds);
// The SQLite / memory budget's figure: both stores in one process, alternating blocks (peers/pair.mjs).
jobs.push({ kind: 'pair', name: 'pair turnstate:memory / turnstate:sqlite', args: ['peers/pair.mjs', 'turnstate', 'memory', 'sqlite'], timeoutMs: 120_000 });
for (const [fw, v, n] of MEM) jobs.push({ kind: 'mem', name: `mem ${fw}:${v} x${n}`, args: ['peers/harness.mjs', fw, v, 'mem', String(n)], timeoutMs: 240_000 });
const IDLE_TURNED = QUICK ? 1000 : 10000; // idle after one turn each (SQLite store: the turn's records are in the file)
jobs.push({ kind: 'passivation', name: `passivation memory x${IDLE}`, args: ['passivation.mjs', 'memory', String(IDLE), '0'], timeoutMs: 240_000 });
jobs.push({ kind: 'passivation', name: `passivation sqlite x${IDLE}`, args: ['passivation.mjs', 'sqlite', String(IDLE), '0'], timeoutMs: 240_000 });
jobs.push({ kind: 'passivation', name: `passivation sqlite x${IDLE_TURNED} after a turn`, args: ['passivation.mjs', 'sqlite', String(IDLE_TURNED), '1'], timeoutMs: 240_000 });
const suitesDir = join(BENCH, 'suites');
const suiteFiles = existsSync(suitesDir) ? readdirSync(suitesDir).filter((f) => f.endsWith('.mjs')).sort() : [];
// A side-by-side suite (two builds, or the SQLite store beside a memory turn) times its lanes against each other
// on one core: it runs in the quiet phase.
const QUIET_SUITES = new Set(['router-pair.mjs', 'sqlite-floor.mjs']);
for (const f of suiteFiles) jobs.push({ kind: 'suite', quiet: QUIET_SUITES.has(f), name: `suite ${f}`, file: f, args: [join('suites', f), ...(QUICK ? ['--quick'] : [])], timeoutMs: QUICK ? 120_000 : 300_000 });

/* ------------------------------------------------------------------ running */

function runJob(job, cpu) {
  return new Promise((resolve) => {
    const nodeArgs = ['--expose-gc', ...job.args];
    const [cmd, args] = HAVE_TASKSET ? ['taskset', ['-c', cpu, process.execPath, ...nodeArgs]] : [process.execPath, nodeArgs];
    const env = { ...process.env, BENCH_QUICK: QUICK ? '1' : '0', TURNSTATE_DIST: DIST_COPY };
    const child = spawn(cmd, args, { cwd: BENCH, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const t0 = Date.now();
    const load = loadavg()[0];
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, job.timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const results = [];
      const markdown = [];
      for (const line of out.split('\n')) {
        const t = line.trim();
        if (t.startsWith('{') && t.includes('"suite"')) {
          try { const j = JSON.parse(t); if (j && typeof j.suite === 'string' && Array.isArray(j.rows)) results.push(j); } catch { /* not a result line */ }
        } else markdown.push(line.trimEnd());
      }
      // a suite's own markdown (its table and caption): every other stdout line, when it holds a table
      while (markdown.length && !markdown[0]) markdown.shift();
      while (markdown.length && !markdown[markdown.length - 1]) markdown.pop();
      if (!markdown.some((l) => l.startsWith('|'))) markdown.length = 0;
      const ok = code === 0 && !timedOut && results.length > 0;
      const tail = (err.trim() || out.trim()).split('\n').slice(-6).join('\n');
      resolve({ job, cpu, ok, code, timedOut, ms: Date.now() - t0, load, results, markdown, tail });
    });
  });
}

const outcomes = [];
const pinning = !HAVE_TASKSET ? 'not pinned (taskset unavailable)' : TWO_LANES ? `timing lane on core ${CPU}, memory lane on core ${CPU2}` : `pinned to core ${CPU}`;
console.log(`turnstate bench: ${jobs.length} jobs${QUICK ? ' (quick)' : ''}, ${pinning}`);
// Passivation runs are not timed per turn: they go to the memory lane. Quick run (a smoke test, not a
// measurement): half the suites go to the memory lane too, to finish sooner.
const suiteJobs = jobs.filter((j) => j.kind === 'suite' && !j.quiet);
// Every turn-overhead job (turnstate, the XState loop, the peers, and the paired store run) runs
// first, alone on the machine: the memory lane's SQLite passivation writes hundreds of MB, and that
// I/O next door slowed whatever ran beside it (the SQLite store's system calls most: it skewed the
// SQLite / memory ratio by ~40% in one run). Every variant a budget compares then runs in the same
// conditions.
const turnJobs = jobs.filter((j) => j.kind === 'perf' || j.kind === 'pair' || j.quiet);
const quietJobs = TWO_LANES ? turnJobs : [];
const timingJobs = [...(TWO_LANES ? [] : turnJobs), ...(QUICK ? suiteJobs.filter((_, i) => i % 2 === 1) : suiteJobs)];
const memoryJobs = [...jobs.filter((j) => j.kind === 'mem' || j.kind === 'passivation'), ...(QUICK ? suiteJobs.filter((_, i) => i % 2 === 0) : [])];
// Component suites may use both cores (the fan-out suite runs its subscribers in a second process);
// their figures are ratios to raw baselines measured in the same process.
const lane = async (list, cpu) => { for (const job of list) report(await runJob(job, job.kind === 'suite' && !job.quiet && TWO_LANES ? `${CPU},${CPU2}` : cpu)); };
if (TWO_LANES) {
  await lane(quietJobs, CPU);
  await Promise.all([lane(timingJobs, CPU), lane(memoryJobs, CPU2)]);
}
else await lane([...timingJobs, ...memoryJobs], CPU);
outcomes.sort((a, b) => jobs.indexOf(a.job) - jobs.indexOf(b.job));

function report(o) {
  const job = o.job;
  outcomes.push(o);
  const first = o.results[0]?.rows?.[0];
  let summary = '';
  if (o.ok && job.kind === 'pair') summary = `${first.b} / ${first.a}: ${first.ratio}x (${first.aMeanCpuUsPerTurn} / ${first.bMeanCpuUsPerTurn} µs/turn CPU)`;
  else if (o.ok && job.kind === 'perf') summary = `CPU ${first.cpuUsPerTurn} µs/turn, wall ${first.usPerTurn} µs/turn, ${first.turnsPerSec} turns/s`;
  else if (o.ok && job.kind === 'mem') summary = `${first.bytesPerSessionAfter1Turn} B/session after 1 turn`;
  else if (o.ok && job.kind === 'passivation') summary = `idle heap +${first.idleHeapDeltaMB} MB`;
  else if (o.ok) summary = `${o.results.reduce((n, r) => n + r.rows.length, 0)} rows`;
  else summary = `FAILED${o.timedOut ? ' (timeout)' : ''} (exit ${o.code}): ${o.tail.split('\n').pop()}`;
  console.log(`  ${job.name.padEnd(44)} core ${o.cpu.padEnd(3)}  ${(o.ms / 1000).toFixed(1).padStart(6)} s  load ${o.load.toFixed(1).padStart(4)}  ${summary}`);
}

/* ------------------------------------------------------------------ collecting */

const perfBy = new Map(); // variant -> [row per round]
const memBy = new Map();
const passivation = [];
const pairs = [];
const suites = [];
const failures = [];
for (const o of outcomes) {
  if (!o.ok) { failures.push(o); if (o.job.kind !== 'suite') continue; }
  for (const res of o.results) {
    if (o.job.kind === 'perf') for (const row of res.rows) { row.load = o.load; if (!perfBy.has(row.variant)) perfBy.set(row.variant, []); perfBy.get(row.variant).push(row); }
    else if (o.job.kind === 'mem') for (const row of res.rows) memBy.set(row.variant, row);
    else if (o.job.kind === 'passivation') passivation.push(...res.rows);
    else if (o.job.kind === 'pair') pairs.push(...res.rows);
  }
  if (o.job.kind === 'suite') suites.push(o);
}
// per variant: the round with the lowest median CPU time per turn (every round is listed)
const perf = new Map();
for (const [v, rows] of perfBy) {
  const best = rows.reduce((a, b) => (b.cpuUsPerTurn < a.cpuUsPerTurn ? b : a));
  perf.set(v, { ...best, rounds: rows.map((r) => r.cpuUsPerTurn), loads: rows.map((r) => r.load) });
}
// budgets compare CPU time per turn (robust to other processes on the machine); wall time is listed too
const us = (v) => perf.get(v)?.cpuUsPerTurn;
const fastestOf = (prefix) => {
  let best;
  for (const [v, row] of perf) if (v.startsWith(prefix + ':') && (!best || row.cpuUsPerTurn < best.cpuUsPerTurn)) best = row;
  return best;
};

/* ------------------------------------------------------------------ budgets */

const TS = 'turnstate:memory';
const budgets = [];
function budget(name, measured, limit, cmp, fmtv, detail) {
  if (measured === undefined || Number.isNaN(measured)) { budgets.push({ name, value: 'not measured', limit: fmtv(limit, true), pass: null, detail }); return; }
  const pass = cmp === '<=' ? measured <= limit : cmp === '<' ? measured < limit : measured >= limit;
  budgets.push({ name, value: fmtv(measured), limit: `${cmp} ${fmtv(limit, true)}`, pass, detail });
}
const x = (n) => `${n.toFixed(2)}x`;
const lower = (n, isLimit) => (isLimit ? `${n}x lower` : `${n.toFixed(1)}x lower`);
const lg = fastestOf('langgraph'), aisdk = fastestOf('ai-sdk'), oai = fastestOf('openai-agents');
budget('turnstate vs minimal XState loop (time per turn)', us(TS) / us('xstate:actor'), 0.6, '<=', x, `${us(TS)} / ${us('xstate:actor')} µs`);
budget('LangGraph.js vs turnstate (time per turn)', lg && us(TS) ? lg.cpuUsPerTurn / us(TS) : undefined, 15, '>=', lower, lg && `${lg.variant} ${lg.cpuUsPerTurn} µs / ${us(TS)} µs`);
budget('AI SDK vs turnstate (time per turn)', aisdk && us(TS) ? aisdk.cpuUsPerTurn / us(TS) : undefined, 3, '>=', lower, aisdk && `${aisdk.variant} ${aisdk.cpuUsPerTurn} µs / ${us(TS)} µs`);
budget('OpenAI Agents SDK vs turnstate (time per turn)', oai && us(TS) ? oai.cpuUsPerTurn / us(TS) : undefined, 3, '>=', lower, oai && `${oai.variant} ${oai.cpuUsPerTurn} µs / ${us(TS)} µs`);
// Measured paired (both stores in one process, alternating blocks); the separate processes' figures
// are listed in the overhead table and the detail.
const storePair = pairs.find((r) => r.a === TS && r.b === 'turnstate:sqlite');
/** The rows a component suite reported (none when it failed). */
const suiteRows = (name) => suites.flatMap((o) => o.results).find((r) => r.suite === name)?.rows ?? [];
// What the SQLite store alone costs per turn, over a memory turn (bench/suites/sqlite-floor.mjs).
const floor = Object.fromEntries(suiteRows('sqlite-floor').map((r) => [r.lane, r.xMemoryTurn]));
const floorDetail = floor['sqlite file'] === undefined ? ''
  : `; the store alone, per turn, over a memory turn: serialization ${floor.serialization}x, SQLite :memory: ${floor['sqlite :memory:']}x, SQLite file ${floor['sqlite file']}x; SQLite's own floor for the turn's three commits (the same bytes, one row and one transaction each, no turnstate code) ${floor['bare sqlite file']}x, where the budget leaves the store 1.0x (bench/suites/sqlite-floor.mjs)`;
budget('SQLite store vs memory store (time per turn)', storePair ? storePair.ratio : us('turnstate:sqlite') / us(TS), 2.0, '<=', x,
  (storePair
    ? `${storePair.bMeanCpuUsPerTurn} / ${storePair.aMeanCpuUsPerTurn} µs, paired in one process (${storePair.pairs} pairs of blocks, ${storePair.turns.sqlite.toLocaleString('en-US')} + ${storePair.turns.memory.toLocaleString('en-US')} turns; block ratios ${storePair.ratioMin}-${storePair.ratioMax}x); separate processes: ${us('turnstate:sqlite')} / ${us(TS)} µs = ${x(us('turnstate:sqlite') / us(TS))}`
    : `${us('turnstate:sqlite')} / ${us(TS)} µs`) + floorDetail);
const routerRows = suiteRows('router');
const routed = routerRows.find((r) => r.name === 'routed generalist, no observers');
// "No slower than before": the current router over the round's base build, side by side in one
// process (bench/suites/router-pair.mjs), as the median of its rounds (a ratio of totals carries a
// neighbour's burst of load whole; both are listed). The absolute time is listed (the router table, and the
// detail), but it compares machines as much as builds: the base build itself measured 0.55 µs on
// one VM and 0.60-1.26 µs on another.
const routerPair = suiteRows('router-pair')[0];
budget('router dispatch, routed generalist tool, vs the base build side by side (time per call)', routerPair?.ratio, 1.0, '<=', x,
  routerPair && `median of ${routerPair.pairs} rounds of blocks (base ${routerPair.base}; rounds ${routerPair.ratioMin}-${routerPair.ratioMax}x; totals ${routerPair.headUsPerCall} / ${routerPair.baseUsPerCall} CPU µs = ${routerPair.ratioOfTotals}x); the base build against a copy of itself, the harness's own bias: ${routerPair.sameBuildRatio}x (rounds ${routerPair.sameBuildRatioMin}-${routerPair.sameBuildRatioMax}x, totals ${routerPair.sameBuildRatioOfTotals}x); bench/suites/router.mjs alone: ${routed?.usPerCall} µs`);
const micro = suiteRows('policies-ids');
const microRow = (prefix) => micro.find((r) => r.name.startsWith(prefix));
const idRow = microRow('id ');
budget('an id (session, turn, approval: 128 CSPRNG bits)', idRow?.usPerOp, 2, '<', (n) => `${n.toFixed(2)} µs`, idRow && 'bench/suites/policies-ids.mjs');
const policyRow = microRow('approval policy, ordinary');
budget('an ordinary approval policy, evaluated (CEL in its worker, round trip)', policyRow?.usPerOp, 1000, '<', (n) => `${Math.round(n)} µs`, policyRow && 'bench/suites/policies-ids.mjs');
const bigListRow = microRow('approval policy, 100,000');
budget('a policy input of 100,000 elements, refused', bigListRow?.msPerOp, 50, '<', (n) => `${n} ms`, bigListRow && 'bench/suites/policies-ids.mjs: the input bounds refuse it before any evaluation');
const tsMem = memBy.get(TS);
budget('retained memory per session after one turn (memory store)', tsMem?.bytesPerSessionAfter1Turn, 8192, '<=', (n, l) => (l ? '8 KB (8,192 B)' : `${(n / 1024).toFixed(1)} KB`), tsMem && `${tsMem.sessions.toLocaleString('en-US')} sessions`);
const tsSql = memBy.get('turnstate:sqlite');
budget('retained memory per session after one turn (SQLite store: its data is off-heap)', tsSql?.bytesPerSessionAfter1Turn, 8192, '<=', (n, l) => (l ? '8 KB (8,192 B)' : `${(n / 1024).toFixed(1)} KB`), tsSql && `${tsSql.sessions.toLocaleString('en-US')} sessions`);
const idle = passivation.find((r) => r.variant === 'turnstate:memory' && r.sessions === IDLE);
budget(`${IDLE.toLocaleString('en-US')} sessions created and idle, passivated (heap + external)`, idle?.idleHeapDeltaMB, 100, '<', (n) => `${n} MB`, idle && `${idle.idleBytesPerSession} B per idle session, in-memory store (its records included)`);
const longRows = suiteRows('long-session');
const long5k = longRows.find((r) => r.variant === 'sleeping between turns' && r.turnsBefore === 5_000);
const long10 = longRows.find((r) => r.variant === 'sleeping between turns' && r.turnsBefore === 10);
budget('turn cost at 5,000 turns of one session vs at 10 (SQLite store)', long5k?.vsShort, 1.5, '<=', x,
  long5k && `${long5k.cpuUsPerTurn} / ${long10?.cpuUsPerTurn} µs per turn, paired (bench/suites/long-session.mjs; round ratios ${long5k.vsShortMin}-${long5k.vsShortMax}x)`);

/* ------------------------------------------------------------------ report */

const cpuModel = (() => { try { return readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1]?.trim(); } catch { return undefined; } })() ?? cpus()[0]?.model ?? 'unknown';
const gitRev = (spawnSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).stdout ?? '').trim();
const pkgVersions = (() => {
  const names = ['xstate', '@langchain/langgraph', '@langchain/core', '@openai/agents', 'ai', '@mastra/core'];
  return names.map((n) => {
    try { return `${n} ${JSON.parse(readFileSync(join(BENCH, 'node_modules', n, 'package.json'), 'utf8')).version}`; } catch { return `${n} ?`; }
  }).join(', ');
})();
const ms = Date.now() - startedAt.getTime();
const cmdline = QUICK ? 'npm run bench -- --quick' : 'npm run bench';
const n0 = (n) => (n === undefined ? '-' : Math.round(n).toLocaleString('en-US'));
const f1 = (n) => (n === undefined ? '-' : n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
// align: one letter per column, 'l' or 'r' (default: first left, the rest right)
const table = (head, rows, align) => [`| ${head.join(' | ')} |`, `| ${head.map((h, i) => ((align ? align[i] : i === 0 ? 'l' : 'r') === 'l' ? '---' : '---:')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

const VARIANT_NOTES = {
  'baseline:loop': 'plain async loop, no framework (floor)',
  'xstate:actor': 'minimal hand-written XState v5 loop, a promise actor per model call and tool',
  'turnstate:memory': 'turnstate, in-memory store',
  'turnstate:sqlite': 'turnstate, SQLite file store (better-sqlite3)',
  'langgraph:no-checkpointer': 'StateGraph agent <-> ToolNode, caller keeps messages',
  'langgraph:memorysaver': 'same graph with MemorySaver checkpointer',
  'openai-agents:history': 'Runner.run, caller keeps result.history',
  'openai-agents:memory-session': 'Runner.run with a MemorySession',
  'ai-sdk:generateText': 'generateText with tools, stopWhen stepCountIs(5)',
  'ai-sdk:streamText': 'streamText, fullStream consumed',
  'mastra:generate': 'Agent.generate, no memory',
};
// Wall µs/turn the peers' own harness measured on an idle machine of this kind (bench-peers README, 2026-11-21).
const ANCHORS = {
  'baseline:loop': '1.3', 'xstate:actor': '122', 'ai-sdk:generateText': '302', 'ai-sdk:streamText': '1,306',
  'openai-agents:history': '375-422', 'openai-agents:memory-session': '375-422',
  'langgraph:no-checkpointer': '1,900', 'langgraph:memorysaver': '2,870', 'mastra:generate': '3,115',
};
const order = PERF.map(([fw, v]) => `${fw}:${v}`);
const perfRows = order.filter((v) => perf.has(v)).map((v) => {
  const r = perf.get(v);
  const vsTs = us(TS) ? r.cpuUsPerTurn / us(TS) : undefined;
  return [
    `\`${v}\``,
    `**${f1(r.cpuUsPerTurn)}**`,
    f1(r.usPerTurn),
    n0(r.turnsPerSec),
    `${n0(r.minTurnsPerSec)}-${n0(r.maxTurnsPerSec)}`,
    `${r.spreadPct}%`,
    r.rounds.length > 1 ? r.rounds.map(f1).join(' / ') : '-',
    r.loads.map((l) => l.toFixed(1)).join(' / '),
    vsTs === undefined ? '-' : `${vsTs < 0.1 ? vsTs.toPrecision(2) : vsTs.toFixed(2)}x`,
    ANCHORS[v] ?? '-',
    VARIANT_NOTES[v] ?? '',
  ];
});
const memRows = MEM.map(([fw, v]) => `${fw}:${v}`).filter((v) => memBy.has(v)).map((v) => {
  const r = memBy.get(v);
  return [`\`${v}\``, n0(r.sessions), n0(r.bytesPerSessionEmpty), `**${(r.bytesPerSessionAfter1Turn / 1024).toFixed(1)} KB**`, `${(r.bytesPerSessionPerExtraTurn / 1024).toFixed(1)} KB`, n0(r.rssMB), r.retained ?? ''];
});
const passRows = passivation.map((r) => [
  `\`${r.variant}\``, n0(r.sessions), String(r.turnsPerSession), `${r.passivateAfterMs} ms`, `**${r.idleHeapDeltaMB} MB**`, n0(r.idleBytesPerSession),
  `${r.heapUsedMB.base} / ${r.heapUsedMB.afterCreate} / ${r.heapUsedMB.idle}`, n0(r.rssMB), n0(r.storedSessions), `${(r.createAndTurnMs / 1000).toFixed(1)} s`, n0(r.reactivateAndTurnUs),
]);

const lines = [];
lines.push('# Benchmarks', '');
lines.push('Framework overhead per turn and memory per session, turnstate side by side with peer agent frameworks,',
  'all measured in the same run on the same machine, each driven by a scripted model through the same turn.',
  'The model and the tools cost (next to) nothing, so what is measured is the framework.', '');
lines.push(`Command: \`${cmdline}\` (from the repository root; builds \`dist/\`, installs \`bench/\`'s own dependencies, runs \`node bench/run.mjs${QUICK ? ' --quick' : ''}\`).`, '');
lines.push(table(['', ''], [
  ['date', startedAt.toISOString()],
  ['machine', `${cpuModel}, ${cpus().length} cores, ${Math.round(totalmem() / 1073741824)} GB RAM; each variant in its own process, ${TWO_LANES ? `pinned with \`taskset\`, first every turn-overhead run alone on core ${CPU} (core ${CPU2} idle), then in two lanes side by side: ${QUICK ? 'half the component suites' : 'the component suites'} one after another on core ${CPU}, ${QUICK ? 'memory, passivation and the other suites' : 'memory per session and passivation'} one after another on core ${CPU2}; the component suites may use both cores (the fan-out suite runs its subscribers in a second process)` : HAVE_TASKSET ? `pinned to core ${CPU} with \`taskset\`, one after another` : 'not pinned (no taskset)'}`],
  ['node', process.version],
  ['turnstate', `${gitRev || 'working tree'} (\`dist/\` as built when the run started)`],
  ['peers', pkgVersions],
  ['run', `${(ms / 1000).toFixed(0)} s, ${jobs.length} processes${QUICK ? ', **quick smoke run: short timings, fewer sessions: not for comparison**' : ''}; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`],
], 'll'), '');

lines.push('## Budgets', '');
lines.push(table(['budget', 'measured', 'limit', 'result', 'from'], budgets.map((b) => [b.name, b.value, b.limit, b.pass === null ? 'NOT MEASURED' : b.pass ? 'pass' : '**FAIL**', b.pass === null ? '' : b.detail ?? '']), 'lrrll'), '');

lines.push('## The turn', '');
lines.push('Every framework runs the same turn: the user asks for the weather and time in Paris; the model calls',
  '`get_weather`, then `get_time`, then answers: **3 model calls and 2 tool executions** (5 steps). The peers',
  'use one stateless scripted model (`bench/peers/script.mjs`) behind each framework\'s own model interface.', '',
  'turnstate is driven by its own `ScriptedModel` (`createScriptedModel`, script in `bench/peers/turnstate.mjs`).',
  'A turnstate actor speaks only through `respond()`, which travels in the same model response as a tool call, so',
  'the turn is the same 3 model calls and 2 tool executions, with more output than the peers produce:', '',
  '1. user message -> model call 1: `respond(ack, awaiting)` + `get_weather({ city })`',
  '2. tool result -> model call 2: `respond(thinking, awaiting)` + `get_time({ tz })`',
  '3. tool result -> model call 3: `respond(response + domain-data, complete)`: the turn settles with an envelope.', '',
  'Both tools are routed generalist tools (ajv-validated input, execution log); every step is committed to the store',
  'before its events are published. Each turn is checked (model and tool call counts, final text, part types) before timing.', '');
const shape = perf.get(TS)?.turn ?? perf.get('turnstate:sqlite')?.turn;
if (shape) lines.push(`Measured in this run, one turnstate turn: ${shape.modelCalls} model calls, ${shape.toolExecutions} tool executions, ${shape.storeCommits} store commits, ${shape.events} session events, parts ${shape.parts.map((p) => '`' + p + '`').join(', ')}.`, '');

lines.push('## Framework overhead per turn', '');
lines.push(`Sequential turns, each on a fresh session; warm-up (${QUICK ? '0.8' : '1.5'} s of the process's CPU time or 3,000 turns), then ${QUICK ? '3 runs of 0.3 s' : '7 runs of 1.5 s'}; the median of the runs.`,
  'CPU µs/turn is the process\'s own CPU time (user + system, all threads, pinned to one core) per turn: unlike',
  'wall time it leaves out time the core spent on other processes, so it is what the budgets compare.',
  'Variants listed with two rounds ran twice, interleaved with the others; the round with less CPU time is reported.',
  'turnstate drops each measured session from memory after its turn, inside the timed loop (its runtime would',
  'otherwise keep every session live): deleted with the in-memory store, passivated with SQLite (its rows stay',
  'in the file). The peers\' sessions are simply dropped.', '',
  'The SQLite / memory budget is measured paired (`bench/peers/pair.mjs`): both stores in one process, in',
  `alternating blocks (A B B A ...) of ${QUICK ? '0.15' : '0.4'} s of CPU time, the figure being the total CPU time per turn of each over all its`,
  'blocks. This VM\'s speed drifts by 30-50% between processes run one after another, and not alike for both',
  'stores (the SQLite store spends a sixth of its turn in system calls); adjacent blocks share the drift.', '');
lines.push(table(['variant', 'CPU µs/turn', 'wall µs/turn', 'turns/s', 'turns/s min-max', 'spread', 'CPU µs/turn per round', 'load avg at start', 'CPU time vs turnstate:memory', 'anchor wall µs/turn, idle machine', 'what'], perfRows, 'lrrrrrrrrrl'), '');
lines.push('The anchor column is what the peers\' own harness measured on an idle machine of this kind (its README, 2026-11-21);',
  'far higher figures in this run mean the machine was busy with other work while it ran.', '');

lines.push('## Memory per session', '');
lines.push('N sessions kept alive, one turn each, then heap + external after GC, divided by N (then a 2nd and 3rd turn on each).',
  `The count used is in the table: ${BIG.toLocaleString('en-US')} for turnstate, the XState loop and the plain loop; ${SMALL.toLocaleString('en-US')} for the other peers${QUICK ? '' : ' (the peers\' harness default), 300 for Mastra (slow to run)'}.`, '');
lines.push(table(['variant', 'sessions', 'B/session empty', 'after 1 turn', 'per extra turn', 'RSS MB', 'what is retained'], memRows, 'lrrrrrl'), '');

lines.push('## Idle sessions and passivation', '');
lines.push('Sessions created (and given one turn, or none), then left idle past `passivateAfterMs`; heap + external after GC,',
  'minus the heap before the sessions were created. Three passivated sessions are then reactivated with `runtime.session(id)` and take a turn',
  '(the last column). With the in-memory store the store itself keeps every session\'s records on the heap (included in the figure);',
  'with SQLite they live in the file.', '');
if (passRows.length) lines.push(table(['store', 'sessions', 'turns each', 'passivateAfterMs', 'idle heap', 'B/idle session', 'heapUsed MB base / loaded / idle', 'RSS MB', 'sessions in store', 'create + turns', 'reactivate + turn µs'], passRows), '');
else lines.push('Not measured (the passivation run failed; see below).', '');

if (suites.length) {
  lines.push('## Component suites', '');
  for (const s of suites) {
    const title = s.results[0]?.suite ?? s.job.file.replace(/\.mjs$/, '');
    lines.push(`### ${title}`, '', `\`bench/suites/${s.job.file}\`${s.ok ? '' : ' (**failed**: ' + (s.timedOut ? 'timeout' : 'exit ' + s.code) + ')'}`, '');
    if (s.markdown.length) lines.push(...s.markdown, '');
    else for (const res of s.results) {
      const cols = [...new Set(res.rows.flatMap((r) => Object.keys(r)))];
      lines.push(table(cols, res.rows.map((r) => cols.map((c) => (typeof r[c] === 'object' ? JSON.stringify(r[c]) : String(r[c] ?? ''))))), '');
    }
  }
}

if (failures.length) {
  lines.push('## Failed runs', '');
  for (const f of failures) lines.push(`- \`${f.job.name}\`: ${f.timedOut ? 'timeout' : 'exit ' + f.code}`, '', '```', f.tail, '```', '');
}

lines.push('## Reproducing one variant', '', '```',
  'npm run build && npm --prefix bench install',
  'cd bench && taskset -c 0 node --expose-gc peers/harness.mjs turnstate memory perf',
  'cd bench && taskset -c 0 node --expose-gc peers/harness.mjs turnstate sqlite mem 10000',
  'cd bench && taskset -c 0 node --expose-gc passivation.mjs memory 100000 0',
  '```', '',
  'Noise: the figures come from one machine that may be running other work; ratios between rows of the same run',
  'are what the budgets compare. Raw results of every run: `bench/results/`.', '');

mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, lines.join('\n'));
const rawFile = join(BENCH, 'results', `run-${startedAt.toISOString().replace(/[:.]/g, '-')}${QUICK ? '-quick' : ''}.json`);
writeFileSync(rawFile, JSON.stringify({ startedAt, quick: QUICK, node: process.version, cpu: cpuModel, perf: Object.fromEntries(perf), mem: Object.fromEntries(memBy), passivation, suites: suites.map((s) => ({ file: s.job.file, ok: s.ok, results: s.results })), budgets, failures: failures.map((f) => ({ job: f.job.name, code: f.code, timedOut: f.timedOut, tail: f.tail })) }, null, 2));
console.log(`\nwrote ${relative(process.cwd(), OUT)} and ${relative(process.cwd(), rawFile)} in ${(ms / 1000).toFixed(0)} s`);
for (const b of budgets) console.log(`  ${b.pass === null ? 'NOT MEASURED' : b.pass ? 'pass' : 'FAIL'}  ${b.name}: ${b.value} (${b.limit})`);
process.exit(failures.some((f) => f.job.kind !== 'suite') ? 1 : 0);
