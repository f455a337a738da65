// Top frames of a V8 .cpuprofile (from `node --cpu-prof`): self time and inclusive time per function.
//   node bench/profile-top.mjs <file.cpuprofile> [top=30] [filter-substring]
import { readFileSync } from 'node:fs';

const [file, topArg = '30', filter] = process.argv.slice(2);
if (!file) { console.error('usage: node bench/profile-top.mjs <file.cpuprofile> [top] [filter]'); process.exit(2); }
const prof = JSON.parse(readFileSync(file, 'utf8'));
const top = Number(topArg);
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const dt = new Map();
for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
const total = [...dt.values()].reduce((a, b) => a + b, 0);
const key = (n) => {
  const cf = n.callFrame;
  const url = cf.url.replace(/^file:\/\//, '').replace(/.*\/(node_modules\/)/, '$1').replace(/.*\/(dist\/|bench\/)/, '$1');
  return `${cf.functionName || '(anonymous)'} ${url}:${cf.lineNumber + 1}`;
};
const self = new Map(), incl = new Map();
for (const [id, t] of dt) {
  const n = byId.get(id);
  self.set(key(n), (self.get(key(n)) ?? 0) + t);
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = key(byId.get(cur));
    if (seen.has(k)) continue;
    seen.add(k);
    incl.set(k, (incl.get(k) ?? 0) + t);
  }
}
const show = (title, m) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms)`);
  const rows = [...m].filter(([k]) => !filter || k.includes(filter)).sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, t] of rows) console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`);
};
show('self time', self);
show('inclusive time', incl);
