/**
 * One `turnstate serve` per data directory. Two servers on one SQLite file would each append to
 * the same sessions (the second one's commits collide with the first's: `store.seq_conflict`)
 * and both would recover the same turns. A lock file holding the owner's pid is created
 * exclusively; one whose process is gone (a crash, SIGKILL) is taken over. Read-only users of
 * the file (`turnstate replay`) take no lock.
 *
 * Sharp edge: pids are reused. A lock naming this process's own pid that this process does not
 * hold (a container whose server was PID 1 before the crash and is PID 1 again) is stale, and so,
 * where /proc tells, is one naming a live process that is not node (the pid went to another
 * program). Without /proc, any live pid holds the lock.
 */
import { readFileSync, readlinkSync, realpathSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

export const LOCK_FILE = 'turnstate.lock';

/** The lock files this process holds (resolved paths). */
const held = new Set<string>();

/** Takes the directory's lock, or throws naming the process that holds it; returns the release. */
export function lockDataDir(dir: string): () => void {
  const path = resolve(join(dir, LOCK_FILE));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      held.add(path);
      let holding = true;
      return () => {
        if (!holding) return;
        holding = false;
        held.delete(path);
        try {
          if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const owner = Number.parseInt(readFileSync(path, 'utf8'), 10);
    const holds = owner === process.pid ? held.has(path) : Number.isSafeInteger(owner) && owner > 0 && alive(owner) && runsNode(owner);
    if (holds) {
      throw new Error(`data directory ${dir} is in use by another turnstate serve (pid ${owner}, ${path}); stop it or use another --data-dir`);
    }
    // Left by a process that is gone (or by an earlier holder of a pid now reused): taken over.
    rmSync(path, { force: true });
  }
  throw new Error(`data directory ${dir}: could not take its lock ${path}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a live pid may be a turnstate server: false only when /proc shows a program other than node. */
function runsNode(pid: number): boolean {
  const cmdline = readProc(() => readFileSync(`/proc/${pid}/cmdline`, 'latin1'));
  // Another user's process: its executable is hidden, its command line is not.
  const exe = readProc(() => readlinkSync(`/proc/${pid}/exe`));
  if (exe === undefined) return cmdline === undefined || /node|turnstate/i.test(cmdline);
  return /node/i.test(basename(exe)) || exe === ownExecutable() || (cmdline !== undefined && /turnstate/i.test(cmdline));
}

function readProc(read: () => string): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

function ownExecutable(): string {
  try {
    return realpathSync(process.execPath);
  } catch {
    return process.execPath;
  }
}
