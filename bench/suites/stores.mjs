// Store micro-benchmark: the cost of SessionStore.commit for one typical step (5 events, 2 mailbox
// entries, a snapshot) and of replaying events, per store. Standalone; prints a markdown table and
// one JSON line {suite:'stores', rows}. Uses the built package (dist/); from a source checkout:
// `node --import tsx bench/suites/stores.mjs`. `--quick` runs fewer steps.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuMicros, summarize } from '../lib.mjs';
import { loadBuild } from '../reference.mjs';

const { createMemoryStore } = await loadBuild('stores/index.js');
const { createSqliteStore } = await loadBuild('stores/sqlite.js');

const QUICK = process.argv.includes('--quick');
const RUNS = QUICK ? 3 : 7;
const STEPS = QUICK ? 1_000 : 5_000;
const AT = '2026-01-01T00:00:00.000Z';

/** One step as the runtime commits it: the events of a respond() call and a tool call, two mailbox entries, the snapshot. */
function step(sessionId, n) {
  const seq = n * 5;
  const turnId = `turn-${n}`;
  const base = (k) => ({ seq: seq + k, sessionId, turnId, at: AT });
  return {
    events: [
      { ...base(1), type: 'tool.called', callId: `c${n}`, tool: 'flight_search', args: { from: 'LHR', to: 'JFK', date: '2026-03-01' }, actor: 'concierge', side: 'server', scope: 'generalist', routing: 'routed' },
      { ...base(2), type: 'tool.result', callId: `c${n}`, tool: 'flight_search', view: { flights: [{ id: 'BA117', price: 420 }, { id: 'VS3', price: 455 }] }, isError: false },
      { ...base(3), type: 'part.received', callId: `r${n}`, index: 0, part: { text: 'I found two flights on the 1st of March.', metadata: { partType: 'response' } }, turnState: 'awaiting', actor: 'concierge' },
      { ...base(4), type: 'turnState.changed', from: 'awaiting', to: 'complete', actor: 'concierge' },
      { ...base(5), type: 'model.usage', actor: 'concierge', usage: { inputTokens: 1200, outputTokens: 85 }, stopReason: 'tool_use' },
    ],
    mailbox: [
      { kind: 'assistant', actor: 'concierge', turnId, at: AT, content: [{ type: 'tool_use', id: `c${n}`, name: 'flight_search', input: { from: 'LHR', to: 'JFK', date: '2026-03-01' } }] },
      { kind: 'tool_result', actor: 'concierge', turnId, at: AT, callId: `c${n}`, tool: 'flight_search', content: '{"flights":[{"id":"BA117","price":420},{"id":"VS3","price":455}]}', isError: false },
    ],
    snapshot: { machine: { status: 'active', value: { turn: 'awaiting' }, context: { turnId, actor: 'concierge', modelCalls: n % 7 } }, host: { queue: [], turn: { turnId, pending: [] } } },
  };
}

const session = (id) => ({ id, actor: 'concierge', createdAt: AT, doubleTexting: 'queue' });
const median = (xs) => summarize(xs).median;
const us = (t0) => Number(process.hrtime.bigint() - t0) / 1000;

function measure(label, store, steps) {
  const commitSamples = [];
  const cpuSamples = [];
  const replaySamples = [];
  for (let r = -1; r < RUNS; r++) {
    const id = `s${r + 1}`;
    store.createSession(session(id));
    const batch = Array.from({ length: steps }, (_, n) => step(id, n));
    const c0 = cpuMicros(); // CPU time: less disturbed than wall time by other load
    const t0 = process.hrtime.bigint();
    for (let n = 0; n < steps; n++) store.commit(id, batch[n]);
    const commitUs = us(t0) / steps;
    const commitCpuUs = (cpuMicros() - c0) / steps;
    // Replay of the last 100 events (a reconnecting subscriber), repeated.
    const last = store.lastSeq(id);
    const reps = Math.min(steps, 1000);
    const t1 = process.hrtime.bigint();
    for (let i = 0; i < reps; i++) if (store.readEvents(id, last - 100).length !== 100) throw new Error('replay returned the wrong count');
    const replayUs = us(t1) / reps;
    if (r >= 0) { commitSamples.push(commitUs); cpuSamples.push(commitCpuUs); replaySamples.push(replayUs); } // r = -1 warms up
  }
  return {
    store: label,
    stepsPerRun: steps,
    runs: RUNS,
    commitUs: +median(commitSamples).toFixed(2),
    commitUsMin: +Math.min(...commitSamples).toFixed(2),
    commitCpuUs: +median(cpuSamples).toFixed(2),
    commitsPerSec: Math.round(1e6 / median(commitSamples)),
    replay100Us: +median(replaySamples).toFixed(2),
  };
}

const dir = mkdtempSync(join(tmpdir(), 'turnstate-bench-stores-'));
const rows = [];
try {
  const cases = [
    ['memory', () => createMemoryStore(), STEPS],
    ['sqlite :memory:', () => createSqliteStore({ path: ':memory:' }), STEPS],
    ['sqlite file, synchronous=normal', () => createSqliteStore({ path: join(dir, 'normal.db') }), STEPS],
    ['sqlite file, normal + exclusive', () => createSqliteStore({ path: join(dir, 'exclusive.db'), exclusive: true }), STEPS],
    ['sqlite file, synchronous=full', () => createSqliteStore({ path: join(dir, 'full.db'), synchronous: 'full' }), QUICK ? 50 : 200],
  ];
  for (const [label, make, steps] of cases) {
    const store = make();
    try { rows.push(measure(label, store, steps)); } finally { store.close(); }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log('| store | commit µs wall (median) | commit µs wall (best run) | commit µs CPU (median) | commits/s | replay 100 events µs |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.store} | ${r.commitUs} | ${r.commitUsMin} | ${r.commitCpuUs} | ${r.commitsPerSec} | ${r.replay100Us} |`);
console.log('');
console.log('One commit = 5 events + 2 mailbox entries + a snapshot, in one transaction for SQLite. CPU = user + system time of the process');
console.log('(an fsync wait is wall time, not CPU). Replay = readEvents of the last 100 events.');
console.log(JSON.stringify({ suite: 'stores', node: process.version, quick: QUICK, rows }));
