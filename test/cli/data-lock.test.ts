/**
 * `turnstate serve` holds its data directory with `turnstate.lock` (src/cli/data-lock.ts):
 * "a lock left by a process that is gone (a crash) is taken over" (docs/guide/serve.md, "One
 * server per data directory"), also when the pid it names has been reused since.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE, lockDataDir } from '../../src/cli/data-lock.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-lock-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A live process of the given command; resolves once it runs. */
async function running(command: string, args: string[]): Promise<number> {
  const child = spawn(command, args, { stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  return child.pid!;
}

describe('data directory lock', () => {
  it('cli:lock:own-pid-is-stale — "a lock left by a process that is gone (a crash) is taken over": a lock naming this very process, which this process does not hold (a container restarted as PID 1), is taken over; one this process holds is still refused', () => {
    const dir = tempDir();
    writeFileSync(join(dir, LOCK_FILE), `${process.pid}\n`);
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    // Held here now: a second server in this process would be a second writer.
    expect(() => lockDataDir(dir)).toThrow(new RegExp(`data directory .* is in use by another turnstate serve \\(pid ${process.pid}`));
    release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    lockDataDir(dir)();
  });

  it.runIf(existsSync('/proc/self/cmdline'))(
    'cli:lock:pid-reused — "a lock left by a process that is gone (a crash) is taken over": where /proc tells, a live pid that is not a node process (the pid was reused) is taken over; a node process still holds it',
    async () => {
      const dir = tempDir();
      const sleeper = await running('sleep', ['30']);
      writeFileSync(join(dir, LOCK_FILE), `${sleeper}\n`);
      lockDataDir(dir)();

      const node = await running(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
      writeFileSync(join(dir, LOCK_FILE), `${node}\n`);
      expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by another turnstate serve \\(pid ${node}`));
      expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${node}\n`);
    },
  );
});
