/**
 * One `turnstate serve` per data directory. Two servers on one SQLite file would each append to
 * the same sessions (the second one's commits collide with the first's: `store.seq_conflict`)
 * and both would recover the same turns. A lock file holding the owner's pid is created
 * exclusively; one whose process is gone (a crash, SIGKILL) is taken over. Read-only users of
 * the file (`turnstate replay`) take no lock.
 */
import { readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const LOCK_FILE = 'turnstate.lock';

/** Takes the directory's lock, or throws naming the process that holds it; returns the release. */
export function lockDataDir(dir: string): () => void {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      let held = true;
      return () => {
        if (!held) return;
        held = false;
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
    if (Number.isSafeInteger(owner) && owner > 0 && alive(owner)) {
      throw new Error(`data directory ${dir} is in use by another turnstate serve (pid ${owner}, ${path}); stop it or use another --data-dir`);
    }
    // Left by a process that is gone: taken over.
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
