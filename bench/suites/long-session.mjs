// Turn cost along one long conversation, SQLite store: the bench turn (3 model calls, 2 tool
// executions; peers/turnstate.mjs) in a session that already holds 10, 1,000 or 5,000 turns.
// Measured paired, so load on the machine cancels out: in one process, blocks of turns alternate
// between a short session (a fresh one per block, after 10 untimed turns), a session of 1,000
// turns and one of 5,000; each figure is the median over the blocks, the ratio the median of the
// per-round ratios. Variants: the session sleeps between turns (as every idle session does); it is
// passivated after every turn; and no history cache (RuntimeLimits.historyCacheEntries = 0:
// every wake re-reads the whole mailbox, as before the cache), 10 vs 1,000 turns only.
// Prints a markdown table and one JSON line {suite, rows}. `--quick`: 1,000 turns at most.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuMicros, summarize } from '../lib.mjs';
import { close, counters, makeRuntime } from '../peers/turnstate.mjs';
import { USER_TEXT } from '../peers/script.mjs';

const QUICK = process.argv.includes('--quick');
const LONG = QUICK ? [1_000] : [1_000, 5_000];
const BLOCK = 20;
const ROUNDS = QUICK ? 3 : 7;

const median = (xs) => summarize(xs).median;

async function turn(runtime, s, passivate) {
  const before = counters.modelCalls;
  const outcome = await (await s.send(USER_TEXT)).settled;
  if (outcome.finalizedBy !== 'complete' || counters.modelCalls - before !== 3) throw new Error(`bad turn: ${JSON.stringify(outcome).slice(0, 300)}`);
  if (passivate && (runtime.passivateIdle(), runtime.liveSessions !== 0)) throw new Error('the session was not passivated');
}

/** CPU µs per turn over one block of turns in `s`. */
async function block(runtime, s, passivate) {
  globalThis.gc?.();
  const c0 = cpuMicros();
  for (let i = 0; i < BLOCK; i++) await turn(runtime, s, passivate);
  return (cpuMicros() - c0) / BLOCK;
}

/** Rounds of: a fresh short session's block, then one block in each long session. */
async function paired(runtime, label, long, passivate) {
  const short = [];
  const byLong = long.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    const s = await runtime.createSession({ actor: 'bench' });
    for (let i = 0; i < 10; i++) await turn(runtime, s, passivate);
    short.push(await block(runtime, s, passivate));
    await runtime.deleteSession(s.id);
    for (let k = 0; k < long.length; k++) byLong[k].push(await block(runtime, await runtime.session(long[k].id), passivate));
  }
  const rows = [{ variant: label, turnsBefore: 10, cpuUsPerTurn: +median(short).toFixed(1), vsShort: 1 }];
  long.forEach((l, k) => {
    const ratios = byLong[k].map((x, r) => x / short[r]);
    rows.push({ variant: label, turnsBefore: l.turns, cpuUsPerTurn: +median(byLong[k]).toFixed(1), vsShort: +median(ratios).toFixed(2), vsShortMin: +Math.min(...ratios).toFixed(2), vsShortMax: +Math.max(...ratios).toFixed(2) });
  });
  return rows;
}

const dir = mkdtempSync(join(tmpdir(), 'turnstate-bench-long-'));
const path = join(dir, 'long.db');
const rows = [];
try {
  const { runtime } = await makeRuntime('sqlite', {}, path);
  // JIT warm-up, then the long sessions filled.
  const warm = await runtime.createSession({ actor: 'bench' });
  for (let i = 0; i < 200; i++) await turn(runtime, warm, false);
  await runtime.deleteSession(warm.id);
  const long = [];
  for (const turns of LONG) {
    const s = await runtime.createSession({ actor: 'bench' });
    for (let i = 0; i < turns; i++) await turn(runtime, s, false);
    long.push({ id: s.id, turns });
  }
  rows.push(...(await paired(runtime, 'sleeping between turns', long, false)));
  rows.push(...(await paired(runtime, 'passivated after every turn', long, true)));
  await runtime.close();

  const { runtime: uncached } = await makeRuntime('sqlite', { limits: { historyCacheEntries: 0 } }, path);
  rows.push(...(await paired(uncached, 'no history cache (historyCacheEntries 0)', long.slice(0, 1), false)));
  await uncached.close();
} finally {
  await close();
  rmSync(dir, { recursive: true, force: true });
}

console.log('| variant (SQLite store) | turns already in the session | CPU µs per turn | vs 10 turns (paired median, min-max) |');
console.log('|---|---|---|---|');
for (const r of rows) console.log(`| ${r.variant} | ${r.turnsBefore.toLocaleString('en-US')} | ${r.cpuUsPerTurn} | ${r.turnsBefore === 10 ? '1' : `${r.vsShort}x (${r.vsShortMin}-${r.vsShortMax})`} |`);
console.log('');
console.log(`One turn = 3 model calls + 2 tool executions. ${ROUNDS} rounds of blocks of ${BLOCK} turns alternating between the sessions; the`);
console.log('sessions of 1,000 and 5,000 turns grow by one block per round.');
console.log(JSON.stringify({ suite: 'long-session', node: process.version, quick: QUICK, rows }));
