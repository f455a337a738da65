// What a live turnstate session retains: N sessions after one turn each, then a heap snapshot
// census (self size per constructor, minus a snapshot taken before the sessions existed).
//   node --expose-gc bench/heap-census.mjs <memory|sqlite> [sessions=2000] [top=30] [turns=1]
import { writeHeapSnapshot } from 'node:v8';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { variants, close } from './peers/turnstate.mjs';
import { USER_TEXT } from './peers/script.mjs';

const [kind = 'memory', nArg = '2000', topArg = '30', turnsArg = '1'] = process.argv.slice(2);
const TURNS = Number(turnsArg);
const impl = variants[kind];
const N = Number(nArg);
const census = (file) => {
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  rmSync(file);
  const f = snap.snapshot.meta.node_fields, types = snap.snapshot.meta.node_types[0];
  const [T, NAME, SIZE] = ['type', 'name', 'self_size'].map((k) => f.indexOf(k));
  const out = new Map();
  for (let i = 0; i < snap.nodes.length; i += f.length) {
    const type = types[snap.nodes[i + T]];
    const name = type === 'object' || type === 'closure' ? `${type}:${snap.strings[snap.nodes[i + NAME]]}` : type;
    const e = out.get(name) ?? { n: 0, bytes: 0 };
    e.n++; e.bytes += snap.nodes[i + SIZE];
    out.set(name, e);
  }
  return out;
};
const warm = await impl.createSession(0);
await impl.runTurn(warm, USER_TEXT);
global.gc();
const before = census(writeHeapSnapshot(join(tmpdir(), `census-a-${process.pid}.heapsnapshot`)));
const keep = [];
for (let i = 0; i < N; i++) { const s = await impl.createSession(i + 1); for (let t = 0; t < TURNS; t++) await impl.runTurn(s, USER_TEXT); keep.push(s); }
global.gc();
const after = census(writeHeapSnapshot(join(tmpdir(), `census-b-${process.pid}.heapsnapshot`)));
const rows = [...after].map(([k, v]) => { const b = before.get(k) ?? { n: 0, bytes: 0 }; return [k, (v.n - b.n) / N, (v.bytes - b.bytes) / N]; })
  .filter((r) => r[2] > 0).sort((a, b) => b[2] - a[2]);
const total = rows.reduce((a, r) => a + r[2], 0);
console.log(`turnstate:${kind}: ${N} sessions after ${TURNS} turn(s); heap snapshot self size per session: ${total.toFixed(0)} B`);
for (const [k, n, b] of rows.slice(0, Number(topArg))) console.log(`${b.toFixed(0).padStart(6)} B  ${n.toFixed(1).padStart(6)} objects  ${k}`);
await close();
process.exit(0);
