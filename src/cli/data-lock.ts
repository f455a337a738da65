/**
 * One `turnstate serve` per data directory. Two servers on one SQLite file would each append to
 * the same sessions (the second one's commits collide with the first's: `store.seq_conflict`)
 * and both would recover the same turns. Read-only users of the file (`turnstate replay`) take
 * no lock.
 *
 * The lock is the operating system's: an exclusive SQLite lock (a POSIX record lock) on
 * `turnstate.lock.db`, held by an open connection for the server's life. The kernel releases it
 * when the process ends, however it ends, so a crash leaves nothing to take over, and no pid is
 * guessed at: pids are reused, and a server that was PID 1 in one container is PID 1 in the next
 * one too, on the same volume. `turnstate.lock` beside it only says who holds it (the pid, for
 * the message a second server stops with). See src/stores/sqlite-lock.ts.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { takeFileLock } from '../stores/sqlite-lock.js';

/** Who holds the directory: the holder's pid (information only; the lock is HOLD_FILE's). */
export const LOCK_FILE = 'turnstate.lock';
/** The file the lock is held on (removed by its holder when it lets go). */
export const HOLD_FILE = 'turnstate.lock.db';

/** Why a data directory cannot be written: the permissions, a read-only file system, a path through a file. */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'SQLITE_CANTOPEN', 'SQLITE_PERM', 'SQLITE_AUTH']);

/**
 * A failure to create or write in the data directory (mkdir, the lock file) as an error naming
 * the directory, the option it comes from and the fix, not a bare `unable to open database
 * file`; undefined for any other failure.
 */
export function unusableDataDir(dir: string, err: unknown): Error | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(UNWRITABLE.has(code) || code.startsWith('SQLITE_READONLY'))) return undefined;
  const uid = process.getuid?.();
  const who = uid === undefined ? 'this process' : `this process (uid ${uid})`;
  const readOnly = code === 'EROFS' || code.startsWith('SQLITE_READONLY');
  const creating = (err as { syscall?: unknown }).syscall === 'mkdir';
  const what = readOnly ? 'it is read-only (a read-only file system?)' : creating ? `${who} may not create it` : `${who} may not create or write files in it`;
  const fix = creating
    ? 'create it writable by the user serve runs as (or make its parent writable), or choose another --data-dir'
    : 'make it writable by the user serve runs as (chown or chmod it), or choose another --data-dir';
  return new Error(`--data-dir ${dir} (env TURNSTATE_DATA_DIR): ${what} (${(err as Error).message ?? code}); ${fix}`, { cause: err });
}

/** Takes the directory's lock, or throws naming the process that holds it; returns the release. */
export function lockDataDir(dir: string): () => void {
  const path = join(dir, LOCK_FILE);
  let lock;
  try {
    lock = takeFileLock(join(dir, HOLD_FILE), process.pid);
  } catch (e) {
    throw unusableDataDir(dir, e) ?? e;
  }
  if (lock === undefined) {
    throw new Error(`data directory ${dir} is in use by another turnstate serve (pid ${holderOf(path)}, ${path}); stop it or use another --data-dir`);
  }
  try {
    writeFileSync(path, `${process.pid}\n`);
  } catch (e) {
    lock.release();
    throw unusableDataDir(dir, e) ?? e;
  }
  let holding = true;
  return () => {
    if (!holding) return;
    holding = false;
    try {
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path);
    } catch {
      // Already gone.
    }
    lock.release();
  };
}

/** The pid the holder wrote, or 'unknown' (it may still be starting). */
function holderOf(path: string): string {
  try {
    const pid = readFileSync(path, 'utf8').trim();
    return /^\d+$/.test(pid) ? pid : 'unknown';
  } catch {
    return 'unknown';
  }
}
