// Where the SQLite store's share of a turn goes, side by side with a whole turn on the in-memory
// store (the SQLite / memory budget's denominator). The three commits a real turn makes are
// recorded once (bench/peers/turnstate.mjs's turn, through a SQLite store), then replayed, with a
// new session id per turn, against the store alone:
//   memory turn      the whole turn on the in-memory store (runtime included)
//   serialization    only the JSON.stringify calls the SQLite store makes for those commits
//   sqlite :memory:  the commits into a SQLite store with no file (serialization + SQL, no I/O)
//   sqlite file      the commits into a SQLite file (WAL, synchronous=normal: the default)
//   bare sqlite file SQLite's own floor for those commits: the same bytes (the commits' JSON,
//                    made outside the timed blocks) as one row per commit, one transaction each,
//                    into a one-table file with the same settings, by better-sqlite3 with no
//                    turnstate code. What any store that makes the turn's commits durable one by
//                    one pays on this machine before doing anything of its own.
// One process on one core, blocks whose order rotates (lib.mjs's blockOrder); each lane's figure is
// its total CPU time over all its blocks divided by its turns, as bench/peers/pair.mjs does. A
// lane's `xMemoryTurn` is its cost over the memory turn's: the 2.0x budget leaves the SQLite
// store 1.0x of a memory turn for its whole work. Standalone; prints a markdown table and one
// JSON line {suite:'sqlite-floor', rows}. `--quick` runs fewer, shorter rounds.
import { mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blockOrder, cpuMicros } from '../lib.mjs';
import { loadBuild } from '../reference.mjs';
import { makeRuntime, variants, close } from '../peers/turnstate.mjs';
import { USER_TEXT } from '../peers/script.mjs';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 3 : 10;
const TURNS = QUICK ? 200 : 600; // per block, for the store lanes (the memory turn runs 4x as many)
// Warm-up CPU time per lane: a whole turn runs far more code than the store, and takes longer to settle.
const warmMs = (name) => (name === 'memory turn' ? (QUICK ? 800 : 1500) : 300);
const { createSqliteStore } = await loadBuild('stores/sqlite.js');

// 1. Record one real turn's commits.
const recorder = createSqliteStore({ path: ':memory:' });
const recorded = [];
const commit = recorder.commit.bind(recorder);
recorder.commit = (id, step) => {
  recorded.push([id, structuredClone(step)]);
  return commit(id, step);
};
const { runtime } = await makeRuntime(recorder);
await (await (await runtime.createSession({ actor: 'bench' })).send(USER_TEXT)).settled; // warm
recorded.length = 0;
const session = await runtime.createSession({ actor: 'bench' });
const out = await (await session.send(USER_TEXT)).settled;
if (out.finalizedBy !== 'complete') throw new Error('the recorded turn did not complete: ' + JSON.stringify(out));
const steps = recorded.filter(([id]) => id === session.id).map(([, step]) => step);
if (steps.length !== recorded.length || steps.length < 2 || !steps[0].session) {
  throw new Error(`unexpected commits for the recorded turn: ${recorded.length} (${steps.length} of its session)`);
}
await runtime.close();
const template = JSON.stringify(steps);

/** `n` copies of the recorded commits, each for a new session (built outside the timed blocks). */
let copyNo = 0;
const copies = (n) => Array.from({ length: n }, () => JSON.parse(template.replaceAll(session.id, `sess_floor_${++copyNo}`)));

/** What the SQLite store stringifies for one commit (src/stores/sqlite.ts, commitTx and headOf). */
function serialize(step) {
  let n = 0;
  if (step.session) n += JSON.stringify(step.session).length;
  if (step.events?.length) n += JSON.stringify(step.events).length;
  if (step.mailbox?.length) n += JSON.stringify(step.mailbox).length;
  if (step.executions?.length) n += JSON.stringify(step.executions).length;
  if (step.snapshot) n += JSON.stringify(step.snapshot).length;
  for (const a of step.approvals ?? []) n += JSON.stringify(a).length;
  for (const e of step.enqueue ?? []) n += JSON.stringify(e).length;
  return n;
}
const bytesPerTurn = steps.reduce((n, s) => n + serialize(s), 0);

const dir = mkdtempSync(join(tmpdir(), 'turnstate-bench-floor-'));
const stores = {
  'sqlite :memory:': createSqliteStore({ path: ':memory:' }),
  'sqlite file': createSqliteStore({ path: join(dir, 'floor.db') }),
};
const memory = variants.memory;

/** Each lane: (turns) => CPU µs spent on them. */
const lanes = {
  'memory turn': async (turns) => {
    const c0 = cpuMicros();
    for (let i = 0; i < turns; i++) {
      const s = await memory.createSession();
      await memory.runTurn(s, USER_TEXT);
      await memory.disposeSession(s);
    }
    return cpuMicros() - c0;
  },
  serialization: async (turns) => {
    let sink = 0;
    const c0 = cpuMicros();
    for (let i = 0; i < turns; i++) for (const step of steps) sink += serialize(step);
    const spent = cpuMicros() - c0;
    if (sink !== bytesPerTurn * turns) throw new Error('serialization lane: wrong byte count');
    return spent;
  },
};
for (const [name, store] of Object.entries(stores)) {
  lanes[name] = async (turns) => {
    const batch = copies(turns);
    const c0 = cpuMicros();
    for (const turn of batch) for (const step of turn) store.commit(turn[0].session.id, step);
    return cpuMicros() - c0;
  };
}
// The floor: one row per commit holding the bytes the store serialises for it.
const bare = new Database(join(dir, 'bare.db'));
bare.pragma('journal_mode = WAL');
bare.pragma('synchronous = NORMAL');
bare.pragma('wal_autocheckpoint = 8000');
bare.exec('CREATE TABLE log (k INTEGER PRIMARY KEY, body TEXT NOT NULL)');
const bareInsert = bare.prepare('INSERT INTO log (k, body) VALUES (?, ?)');
const bareCommit = bare.transaction((k, body) => bareInsert.run(k, body));
const rowsOf = (step) => JSON.stringify([step.session, step.events, step.mailbox, step.executions, step.snapshot, step.approvals, step.enqueue]);
let bareKey = 0;
lanes['bare sqlite file'] = async (turns) => {
  const batch = copies(turns).map((turn) => turn.map(rowsOf));
  const c0 = cpuMicros();
  for (const turn of batch) for (const body of turn) bareCommit.immediate(++bareKey, body);
  return cpuMicros() - c0;
};
const names = Object.keys(lanes);
const turnsOf = (name) => (name === 'memory turn' ? TURNS * 4 : TURNS);

const total = Object.fromEntries(names.map((n) => [n, [0, 0]])); // [turns, CPU µs]
try {
  // Warm-up: each lane until it has spent its warm-up CPU time (the optimizing compiler settles).
  for (const n of names) for (let spent = 0; spent < warmMs(n) * 1000; ) spent += await lanes[n](100);
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of blockOrder(names, r)) {
      const t = turnsOf(n);
      const us = await lanes[n](t);
      total[n][0] += t;
      total[n][1] += us;
    }
  }
} finally {
  for (const s of Object.values(stores)) s.close();
  bare.close();
  rmSync(dir, { recursive: true, force: true });
  await close();
}

const perTurn = (n) => total[n][1] / total[n][0];
const mem = perTurn('memory turn');
const rows = names.map((n) => ({
  lane: n,
  turns: total[n][0],
  cpuUsPerTurn: +perTurn(n).toFixed(1),
  xMemoryTurn: +(perTurn(n) / mem).toFixed(2),
}));

console.log(`One turn's commits: ${steps.length}, ${bytesPerTurn.toLocaleString('en-US')} bytes of JSON; ${ROUNDS} rounds of blocks in rotating order.`);
console.log('');
console.log('| lane | turns | CPU µs per turn | x the memory turn |');
console.log('|---|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.lane} | ${r.turns.toLocaleString('en-US')} | ${r.cpuUsPerTurn} | ${r.xMemoryTurn}x |`);
console.log('');
console.log('The store lanes time the store alone (the recorded commits of one turn, a new session each time); the memory turn');
console.log('is a whole turn. SQLite / memory <= 2.0x leaves the SQLite store 1.0x of a memory turn for all of its work.');
console.log(JSON.stringify({ suite: 'sqlite-floor', node: process.version, quick: QUICK, commitsPerTurn: steps.length, bytesPerTurn, rows }));
