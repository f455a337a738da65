// Shared helpers for the anchor benchmarks. Plain ESM, no deps.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'results');
mkdirSync(RESULTS_DIR, { recursive: true });

export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return {
    median,
    min: s[0],
    max: s[n - 1],
    spreadPct: median ? ((s[n - 1] - s[0]) / median) * 100 : 0,
    n,
  };
}

export function pct(sortedArr, p) {
  if (!sortedArr.length) return NaN;
  const i = Math.min(sortedArr.length - 1, Math.max(0, Math.ceil((p / 100) * sortedArr.length) - 1));
  return sortedArr[i];
}

export function fmt(n, digits = 3) {
  if (!Number.isFinite(n)) return String(n);
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + 'G';
  if (a >= 1e6) return (n / 1e6).toFixed(2) + 'M';
  if (a >= 1e4) return (n / 1e3).toFixed(1) + 'k';
  return Number(n.toPrecision(digits)).toString();
}

const now = () => Number(process.hrtime.bigint()) / 1e6; // ms
export { now };

/** The process's CPU time so far (user + system, all threads), in µs. */
export function cpuMicros() {
  const c = process.cpuUsage();
  return c.user + c.system;
}

/**
 * The order in which round `round` of a side-by-side suite runs its lanes: each rotation of
 * `items` in turn, reversed every other full cycle, so no lane always follows another.
 */
export function blockOrder(items, round) {
  const n = items.length;
  const order = items.map((_, i) => items[(i + round) % n]);
  if (Math.floor(round / n) % 2) order.reverse();
  return order;
}

/**
 * Synchronous micro-benchmark: fn(iters) must run `iters` operations.
 * Calibrates iterations to ~targetMs, 1 warm-up run, then `runs` measured runs.
 * Returns ops/s samples summary.
 */
export function benchSync(name, fn, { runs = 7, targetMs = 250, unitsPerOp = 1 } = {}) {
  let iters = 1000;
  // calibrate
  for (;;) {
    const t0 = now();
    fn(iters);
    const dt = now() - t0;
    if (dt > targetMs / 4 || iters > 5e8) {
      iters = Math.max(1, Math.round((iters * targetMs) / Math.max(dt, 0.001)));
      break;
    }
    iters *= 4;
  }
  fn(iters); // warm-up
  const samples = [];
  for (let r = 0; r < runs; r++) {
    const t0 = now();
    fn(iters);
    const dt = now() - t0;
    samples.push(((iters * unitsPerOp) / dt) * 1000);
  }
  const s = summarize(samples);
  return { name, unit: 'ops/s', iters, ...s };
}

/** Async variant: fn(iters) returns a promise. */
export async function benchAsync(name, fn, { runs = 7, targetMs = 300, unitsPerOp = 1, minIters = 100 } = {}) {
  let iters = minIters;
  for (;;) {
    const t0 = now();
    await fn(iters);
    const dt = now() - t0;
    if (dt > targetMs / 4 || iters > 5e7) {
      iters = Math.max(1, Math.round((iters * targetMs) / Math.max(dt, 0.001)));
      break;
    }
    iters *= 4;
  }
  await fn(iters);
  const samples = [];
  for (let r = 0; r < runs; r++) {
    const t0 = now();
    await fn(iters);
    const dt = now() - t0;
    samples.push(((iters * unitsPerOp) / dt) * 1000);
  }
  return { name, unit: 'ops/s', iters, ...summarize(samples) };
}

export function gc() {
  if (!global.gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 4; i++) global.gc();
}

export function heapUsed() {
  gc();
  return process.memoryUsage().heapUsed;
}

export function printTable(rows, cols) {
  const header = cols.map((c) => c[0]);
  const lines = rows.map((r) => cols.map((c) => (typeof c[1] === 'function' ? c[1](r) : r[c[1]])));
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => String(l[i]).length)));
  const line = (arr) => arr.map((v, i) => String(v).padEnd(widths[i])).join('  ');
  console.log(line(header));
  for (const l of lines) console.log(line(l));
}

export function printOps(results) {
  printTable(results, [
    ['case', 'name'],
    ['median', (r) => fmt(r.median) + ' ' + (r.unit || '')],
    ['min', (r) => fmt(r.min)],
    ['max', (r) => fmt(r.max)],
    ['spread%', (r) => r.spreadPct.toFixed(1)],
    ['n', 'n'],
  ]);
}

export function saveResults(name, data) {
  const f = join(RESULTS_DIR, name + '.json');
  writeFileSync(f, JSON.stringify({ name, node: process.version, date: new Date().toISOString(), data }, null, 2));
  return f;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
