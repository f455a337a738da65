/**
 * An exclusive lock on a file for as long as a process wants it, held by the kernel: SQLite's
 * POSIX record lock, taken by a connection in exclusive locking mode and never given back until
 * the connection closes. The kernel drops it when the process ends, however it ends, so a crash
 * leaves nothing to take over; it is the same lock through any path to the file (a symlink) and
 * from any PID namespace on the host (containers sharing a volume).
 *
 * The holder removes the file when it lets go. A process that opened the file just before and
 * locks it just after would hold a file nobody else sees, so after locking, the lock checks that
 * the path still names the file it holds, and otherwise tries again on the one that is there.
 */
import Database from 'better-sqlite3';
import { unlinkSync } from 'node:fs';

export interface FileLock {
  /** Lets go of the lock and removes the file. */
  release(): void;
}

const busy = (e: unknown): boolean => {
  const code = (e as { code?: unknown }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
};

/**
 * Takes the lock on `path` (creating the file), or undefined when another holder has it, in this
 * process or another. Throws what else keeps it from being taken (a file this process may not write).
 */
export function takeFileLock(path: string, holder: number): FileLock | undefined {
  for (let attempt = 0; attempt < 3; attempt++) {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { timeout: 0 });
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); DELETE FROM holder;');
      db.prepare('INSERT INTO holder (pid) VALUES (?)').run(holder);
      db.exec('COMMIT');
    } catch (e) {
      db?.close();
      if (busy(e)) return undefined;
      throw lockFailed(path, e);
    }
    if (names(path)) {
      const held = db;
      return {
        release() {
          try {
            unlinkSync(path);
          } catch {
            // Already gone, or a platform that cannot remove an open file.
          }
          held.close();
        },
      };
    }
    db.close();
  }
  return undefined;
}

/**
 * What kept the lock from being taken, naming the file (SQLite says only `unable to open database
 * file`); the cause's `code` (SQLITE_CANTOPEN, SQLITE_READONLY, ...) is kept for the caller.
 */
function lockFailed(path: string, e: unknown): Error {
  const err = new Error(`cannot take the lock ${path}: ${e instanceof Error ? e.message : String(e)}`, { cause: e }) as Error & { code?: unknown };
  const code = (e as { code?: unknown } | null)?.code;
  if (code !== undefined) err.code = code;
  return err;
}

/** Whether `path` names the file this process holds: a second connection cannot read it. */
function names(path: string): boolean {
  const probe = new Database(path, { timeout: 0 });
  try {
    probe.prepare('SELECT count(*) FROM holder').get();
    return false;
  } catch (e) {
    return busy(e);
  } finally {
    probe.close();
  }
}
