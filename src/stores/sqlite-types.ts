/** The public types of the SQLite SessionStore (`turnstate/sqlite`): its options and what an open store reports. */
import type { SyncSessionStore } from './contract.js';

export interface SqliteStoreOptions {
  /** Database file; created when missing. `':memory:'` keeps everything in the process. */
  path: string;
  /** 'normal' (default): durable across process crashes. 'full': also across power loss. */
  synchronous?: 'normal' | 'full' | undefined;
  /** How long a write waits for another connection's lock before failing (ms; default 5000; an integer from 0 to MAX_TIMER_MS). */
  busyTimeoutMs?: number | undefined;
  /**
   * Hold the file's lock for as long as the store is open (`locking_mode = EXCLUSIVE`): no
   * other connection can read or write it meanwhile, and each commit saves the lock and
   * shared-memory system calls (about a quarter of a commit's cost). Default false.
   */
  exclusive?: boolean | undefined;
  /**
   * Open for reading only (the file must exist): nothing is written and no migration runs, so a
   * live server's file can be read beside it (`turnstate replay` does). A file of another schema
   * version is refused; every write throws `store.read_only`. Default false.
   */
  readonly?: boolean | undefined;
}

/** What an open SQLite store runs with (for operators and tests). */
export interface SqliteStoreInfo {
  path: string;
  /** 'wal' for a file; 'memory' for ':memory:'. */
  journalMode: string;
  synchronous: 'normal' | 'full';
  /** 'normal' or 'exclusive' (see SqliteStoreOptions.exclusive). */
  lockingMode: string;
  /** Opened with `readonly: true`. */
  readonly: boolean;
  schemaVersion: number;
}

export interface SqliteSessionStore extends SyncSessionStore {
  readonly kind: 'sqlite';
  info(): SqliteStoreInfo;
}
