/**
 * `turnstate serve` holds its data directory with an operating-system lock (src/cli/data-lock.ts):
 * "a lock left by a process that is gone (a crash) is taken over" (docs/guide/serve.md, "One
 * server per data directory"), whatever pid a leftover `turnstate.lock` names.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('cli:lock:os-held — the lock is the kernel\'s: another process holding it is refused, naming its pid, whatever pid a stale file names; once that process is killed (SIGKILL: nothing cleaned up) the lock is free; the same directory through a symlink is the same lock', async () => {
    const dir = tempDir();
    const source = new URL('../../src/cli/data-lock.ts', import.meta.url).pathname;
    const holder = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
      const { lockDataDir } = await import(${JSON.stringify(source)});
      lockDataDir(${JSON.stringify(dir)});
      console.log('HELD');
      setInterval(() => {}, 1000);
    `], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(holder);
    await new Promise<void>((resolve, reject) => {
      holder.stdout!.on('data', (d) => String(d).includes('HELD') && resolve());
      holder.once('exit', () => reject(new Error('the holder exited')));
    });
    expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by another turnstate serve \\(pid ${holder.pid}`));
    const alias = join(tempDir(), 'alias');
    symlinkSync(dir, alias);
    expect(() => lockDataDir(alias)).toThrow(/in use by another turnstate serve/);
    const gone = new Promise((r) => holder.once('exit', r));
    holder.kill('SIGKILL');
    await gone;
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    // Held by this process now: the same directory through the symlink is refused here too.
    expect(() => lockDataDir(alias)).toThrow(new RegExp(`in use by another turnstate serve \\(pid ${process.pid}`));
    release();
  });
});
