/**
 * The approval-policy pool when its evaluators die (docs/concepts/approvals.md, "Evaluation
 * budget": "other queued evaluations continue on a fresh process"; "later evaluations run on a
 * fresh evaluator"). Evaluators killed while idle, before the pool saw them die, took the next
 * evaluations with them: each asked with policy-budget ("exited (SIGKILL)", "write EPIPE",
 * "Channel closed"), and a lost evaluator was not replaced while its sibling kept up.
 * Each child records its pid (test/approvals/fixtures/slow-start-worker.mjs, loading the real
 * evaluator), so the test kills exactly its own children and checks none is left.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CelSandbox, type SandboxJob } from '../../src/approvals/cel-sandbox.js';

const entry = fileURLToPath(new URL('./fixtures/slow-start-worker.mjs', import.meta.url));
const job = (n: number): SandboxJob => ({ expression: 'args.n < 5', shape: { maxAstNodes: 200, maxExpressionDepth: 16 }, args: { n }, ctx: {}, timeoutMs: 10_000 });

let dir: string;
let readyDir: string;
let pool: CelSandbox | undefined;

/** The pids of every child the pool started, in start order. */
const pids = (): number[] =>
  readdirSync(dir)
    .map((f) => Number(f.slice('child-'.length)))
    .sort((a, b) => a - b)
    .map((n) => Number(readFileSync(join(dir, `child-${n}`), 'utf8')));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const living = (): number[] => pids().filter(alive);

/** Living children that have loaded the evaluator (and said so to the pool). */
const loaded = (): number[] => {
  const ready = new Set(readdirSync(readyDir).map(Number));
  return living().filter((pid) => ready.has(pid));
};

/** CPU time (user + system, in clock ticks of 10 ms) a process has used (Linux: /proc/<pid>/stat). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'turnstate-pool-loss-'));
  readyDir = mkdtempSync(join(tmpdir(), 'turnstate-pool-loss-ready-'));
  process.env.EVALUATOR_FIXTURE_DIR = dir;
  process.env.EVALUATOR_FIXTURE_READY_DIR = readyDir;
});

afterEach(async () => {
  await pool?.close();
  pool = undefined;
  // Whatever the test did, it leaves no evaluator behind.
  const left = pids().filter(alive);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  expect(left).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
  rmSync(readyDir, { recursive: true, force: true });
  delete process.env.EVALUATOR_FIXTURE_DIR;
  delete process.env.EVALUATOR_FIXTURE_READY_DIR;
});

describe('approval-policy evaluator pool: lost evaluators', () => {
  it('approvals:pool:idle-loss — evaluations sent to evaluators killed while idle are decided on fresh processes, not asked with policy-budget; lost evaluators are replaced without waiting for demand', async () => {
    pool = new CelSandbox({ workers: 2, heapMb: 64, entry, env: process.env });
    // Both loaded and idle.
    expect(await Promise.all([pool.evaluate(job(1)), pool.evaluate(job(9))])).toEqual([{ value: true }, { value: false }]);
    for (let round = 0; round < 3; round++) {
      // Both loaded (the fresh ones of the last round may still be starting).
      await expect.poll(() => loaded().length, { timeout: 20_000, interval: 20 }).toBe(2);
      const idle = loaded();
      // Killed, and evaluations sent in the same turn: the pool cannot have seen them die.
      for (const pid of idle) process.kill(pid, 'SIGKILL');
      const outcomes = await Promise.all([pool.evaluate(job(1)), pool.evaluate(job(9)), pool.evaluate(job(2))]);
      expect(outcomes, `round ${round}`).toEqual([{ value: true }, { value: false }, { value: true }]);
      for (const pid of idle) expect(alive(pid)).toBe(false);
    }
    // Killed with nothing to evaluate: both are replaced all the same (an evaluation later is not a cold start).
    await expect.poll(() => loaded().length, { timeout: 20_000, interval: 20 }).toBe(2);
    const idle = loaded();
    const before = pids().length;
    for (const pid of idle) process.kill(pid, 'SIGKILL');
    await expect.poll(() => loaded().filter((p) => !idle.includes(p)).length, { timeout: 20_000, interval: 50 }).toBe(2);
    expect(pids().length).toBe(before + 2);
    expect(await pool.evaluate(job(1))).toEqual({ value: true });
  }, 60_000);

  it('approvals:pool:idle-loss — an evaluation whose evaluator dies while running it still asks (policy-budget, naming how it died) and is not sent again', async () => {
    pool = new CelSandbox({ workers: 1, heapMb: 64, entry, env: process.env });
    expect(await pool.evaluate(job(1))).toEqual({ value: true });
    const [pid] = loaded();
    const cpu0 = cpuTicks(pid!);
    // About a million comparisons: far more CPU than the 50 ms waited for below, well within its limit.
    const l = Array.from({ length: 1000 }, (_, i) => i);
    const slow = pool.evaluate({ ...job(0), expression: 'args.l.all(x, args.l.all(y, x + y >= 0))', args: { l }, timeoutMs: 300_000 });
    // Running: an idle evaluator uses no CPU; this one has used 50 ms on the evaluation.
    await expect.poll(() => cpuTicks(pid!) - cpu0, { timeout: 30_000, interval: 10 }).toBeGreaterThanOrEqual(5);
    process.kill(pid!, 'SIGKILL');
    expect(await slow).toEqual({ budget: 'the policy evaluator exited (SIGKILL)' });
    // Not sent again: the fresh evaluator is idle, free for the next evaluation at once.
    expect(await pool.evaluate(job(1))).toEqual({ value: true });
    expect(pids()).toHaveLength(2);
  }, 60_000);
});
