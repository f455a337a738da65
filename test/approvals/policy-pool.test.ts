/**
 * The approval-policy pool when its evaluator processes do not start: "a policy that cannot be
 * evaluated asks" (docs/concepts/approvals.md), and it must not wait forever for a child that
 * never loads, nor fail while another child can serve.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CelSandbox, type SandboxJob } from '../../src/approvals/cel-sandbox.js';

const entry = fileURLToPath(new URL('./fixtures/slow-start-worker.mjs', import.meta.url));
const job: SandboxJob = { expression: 'args.n > 1', shape: { maxAstNodes: 200, maxExpressionDepth: 16 }, args: { n: 2 }, ctx: {}, timeoutMs: 5_000 };

let dir: string;
let pool: CelSandbox | undefined;

function fixture(behaviour: { hang?: number[]; exit?: number[] }): void {
  process.env.EVALUATOR_FIXTURE_DIR = dir;
  process.env.EVALUATOR_FIXTURE_HANG = (behaviour.hang ?? []).join(',');
  process.env.EVALUATOR_FIXTURE_EXIT = (behaviour.exit ?? []).join(',');
}

const started = (): number => readdirSync(dir).length;

function alive(child: number): boolean {
  const pid = Number(readFileSync(join(dir, `child-${child}`), 'utf8'));
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'turnstate-pool-'));
});

afterEach(async () => {
  await pool?.close();
  pool = undefined;
  rmSync(dir, { recursive: true, force: true });
  for (const k of ['EVALUATOR_FIXTURE_DIR', 'EVALUATOR_FIXTURE_HANG', 'EVALUATOR_FIXTURE_EXIT']) delete process.env[k];
});

describe('approval-policy evaluator pool start-up', () => {
  it('approvals:pool:startup-limit — an evaluator that never loads settles the evaluation { budget } naming the start-up limit (it waited forever)', async () => {
    fixture({ hang: [1, 2, 3, 4, 5, 6] });
    pool = new CelSandbox({ workers: 2, heapMb: 64, startupLimitMs: 1_000, entry, env: process.env });
    expect(await pool.evaluate(job)).toEqual({ budget: 'the policy evaluator could not start: it was not ready within 1000 ms' });
    // The next evaluation tries the pool again (it waits out a new start-up) rather than failing at once or never.
    const t0 = performance.now();
    expect(await pool.evaluate(job)).toEqual({ budget: 'the policy evaluator could not start: it was not ready within 1000 ms' });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
  });

  it('approvals:pool:healthy-slot — when one evaluator fails to start, queued evaluations go to the one that did (they all failed)', async () => {
    fixture({ exit: [1] });
    pool = new CelSandbox({ workers: 2, heapMb: 64, startupLimitMs: 20_000, entry, env: process.env });
    const outcomes = await Promise.all([pool.evaluate(job), pool.evaluate({ ...job, args: { n: 0 } }), pool.evaluate(job)]);
    expect(outcomes).toEqual([{ value: true }, { value: false }, { value: true }]);
    // The slot whose child failed is not respawned in a loop while the other serves.
    expect(started()).toBe(2);
  });

  it('approvals:pool:healthy-slot — a hanging evaluator is killed at the limit while its sibling serves, and not started again', async () => {
    fixture({ hang: [1] });
    // Long enough for the sibling to load the real evaluator on a busy machine.
    pool = new CelSandbox({ workers: 2, heapMb: 64, startupLimitMs: 3_000, entry, env: process.env });
    expect(await pool.evaluate(job)).toEqual({ value: true });
    await expect.poll(() => alive(1), { timeout: 10_000, interval: 100 }).toBe(false);
    expect(await pool.evaluate(job)).toEqual({ value: true });
    expect(started()).toBe(2);
  });
});
