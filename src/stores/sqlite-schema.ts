/**
 * The SQLite store's file: opening it, its schema version, the migrations that bring an older
 * file to it (one transaction per step), and the checks that refuse a file this turnstate cannot
 * read. A file written by a newer turnstate is refused rather than misread; a read-only store
 * never migrates; every failure to open is a `store.open_failed` naming the path.
 */
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import { TurnstateError } from '../errors.js';
import type { PersistedSession, QueuedEntry } from '../types.js';
import { storeError } from './contract.js';
import type { SqliteStoreOptions } from './sqlite-types.js';

/** Schema version written to `PRAGMA user_version`. */
export const SQLITE_SCHEMA_VERSION = 4;

/** A session's commits are keyed `sk * LOG_SPAN + n` in `log` (n counts from 1). */
export const LOG_SPAN = 4294967296;

/** MIGRATIONS[n] upgrades a file from user_version n to n + 1. */
const MIGRATIONS: readonly ((db: Db) => void)[] = [
  (db) => {
    db.exec(`
      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY,
        tenant_id  TEXT,
        created_at TEXT NOT NULL,
        body       TEXT NOT NULL
      );
      CREATE INDEX sessions_tenant ON sessions (tenant_id);

      CREATE TABLE events (
        session_id TEXT    NOT NULL,
        seq        INTEGER NOT NULL,
        type       TEXT    NOT NULL,
        turn_id    TEXT    NOT NULL,
        body       TEXT    NOT NULL,
        UNIQUE (session_id, seq)
      );

      CREATE TABLE mailbox (
        session_id TEXT    NOT NULL,
        ord        INTEGER NOT NULL,
        body       TEXT    NOT NULL,
        UNIQUE (session_id, ord)
      );

      CREATE TABLE executions (
        session_id TEXT NOT NULL,
        call_id    TEXT NOT NULL,
        body       TEXT NOT NULL
      );
      CREATE INDEX executions_session ON executions (session_id);

      CREATE TABLE approvals (
        approval_id TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        status      TEXT NOT NULL,
        body        TEXT NOT NULL,
        resolution  TEXT
      );
      CREATE INDEX approvals_session ON approvals (session_id);
      CREATE INDEX approvals_status ON approvals (status);

      CREATE TABLE snapshots (
        session_id TEXT PRIMARY KEY,
        body       TEXT NOT NULL
      );
    `);
  },
  // v2: one row per commit in `log`, holding the commit's events, mailbox entries and executions
  // as JSON arrays, and the session's snapshot when the commit carries one. A commit is one transaction, and its cost is dominated by rows and the pages
  // they dirty (about 8 us per row over two B-trees), not bytes: one row keeps a commit to one
  // table leaf plus one index leaf. Rows are large, so `log` is a rowid table (appended in
  // order) with a small unique index on (session_id, n), n numbering a session's commits.
  (db) => {
    db.exec(`
      CREATE TABLE log (
        session_id TEXT    NOT NULL,
        n          INTEGER NOT NULL,
        last_seq   INTEGER NOT NULL,
        last_ord   INTEGER NOT NULL,
        events     TEXT,
        mailbox    TEXT,
        executions TEXT,
        snapshot   TEXT,
        UNIQUE (session_id, n)
      );
    `);
    // Version 1 kept one row per event, mailbox entry and execution: each session becomes one commit.
    const sessions = db.prepare('SELECT id FROM sessions ORDER BY rowid').pluck().all() as string[];
    const ev = db.prepare('SELECT body FROM events WHERE session_id = ? ORDER BY seq').pluck();
    const mb = db.prepare('SELECT body FROM mailbox WHERE session_id = ? ORDER BY ord').pluck();
    const ex = db.prepare('SELECT body FROM executions WHERE session_id = ? ORDER BY rowid').pluck();
    const ins = db.prepare('INSERT INTO log (session_id, n, last_seq, last_ord, events, mailbox, executions, snapshot) VALUES (?, 1, ?, ?, ?, ?, ?, ?)');
    const sn = db.prepare('SELECT body FROM snapshots WHERE session_id = ?').pluck();
    const arr = (rows: unknown[]) => (rows.length ? `[${rows.join(',')}]` : null);
    for (const id of sessions) {
      const e = ev.all(id);
      const m = mb.all(id);
      const x = ex.all(id);
      const snap = (sn.get(id) as string | undefined) ?? null;
      if (!e.length && !m.length && !x.length && snap === null) continue;
      const last = e.length ? (JSON.parse(e[e.length - 1] as string) as { seq: number }).seq : 0;
      ins.run(id, last, m.length, arr(e), arr(m), arr(x), snap);
    }
    db.exec('DROP TABLE events; DROP TABLE mailbox; DROP TABLE executions; DROP TABLE snapshots;');
  },
  // v3: a commit touches one B-tree, not two. Each session gets an integer key `sk` (the
  // sessions table's rowid) and `log` is keyed by `sk * 2^32 + n`: its rowid orders a session's
  // commits, so the (session_id, n) index goes, and a commit writes one table leaf. sk is
  // AUTOINCREMENT, never reused: a writer holding a deleted session's sk can never append to
  // another session's rows. The tenant index holds only sessions that have a tenant.
  (db) => {
    db.exec(`
      CREATE TABLE sessions_v3 (
        sk         INTEGER PRIMARY KEY AUTOINCREMENT,
        id         TEXT NOT NULL UNIQUE,
        tenant_id  TEXT,
        created_at TEXT NOT NULL,
        body       TEXT NOT NULL
      );
      INSERT INTO sessions_v3 (sk, id, tenant_id, created_at, body)
        SELECT rowid, id, tenant_id, created_at, body FROM sessions ORDER BY rowid;
      CREATE TABLE log_v3 (
        k          INTEGER PRIMARY KEY,
        last_seq   INTEGER NOT NULL,
        last_ord   INTEGER NOT NULL,
        events     TEXT,
        mailbox    TEXT,
        executions TEXT,
        snapshot   TEXT
      );
      INSERT INTO log_v3 (k, last_seq, last_ord, events, mailbox, executions, snapshot)
        SELECT s.sk * ${LOG_SPAN} + l.n, l.last_seq, l.last_ord, l.events, l.mailbox, l.executions, l.snapshot
          FROM log l JOIN sessions_v3 s ON s.id = l.session_id ORDER BY s.sk, l.n;
      DROP TABLE log;
      DROP TABLE sessions;
      ALTER TABLE sessions_v3 RENAME TO sessions;
      ALTER TABLE log_v3 RENAME TO log;
      CREATE INDEX sessions_tenant ON sessions (tenant_id) WHERE tenant_id IS NOT NULL;
    `);
  },
  // v4: storage grows with what is stored, not with its square. A session keeps only its latest
  // snapshot (a commit that carries one clears the row that held the last), and queued messages
  // are rows of their own in `queue` (one per message, deleted when its turn starts) instead of
  // riding every snapshot. Older snapshots are cleared; the queue of each latest snapshot moves
  // to `queue`.
  (db) => {
    db.exec(`
      CREATE TABLE queue (
        sk      INTEGER NOT NULL,
        turn_id TEXT    NOT NULL,
        pos     INTEGER NOT NULL,
        body    TEXT    NOT NULL,
        PRIMARY KEY (sk, turn_id)
      ) WITHOUT ROWID;
      UPDATE log SET snapshot = NULL WHERE snapshot IS NOT NULL AND k NOT IN
        (SELECT max(k) FROM log WHERE snapshot IS NOT NULL GROUP BY k / ${LOG_SPAN});
    `);
    // k read as a BigInt: past sk 2^21 it is beyond 2^53, and a JS number would name another row.
    const latest = db
      .prepare(`SELECT k, k / ${LOG_SPAN} AS sk, snapshot FROM log WHERE snapshot IS NOT NULL`)
      .safeIntegers(true)
      .all() as { k: bigint; sk: bigint; snapshot: string }[];
    const insert = db.prepare('INSERT INTO queue (sk, turn_id, pos, body) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
    const rewrite = db.prepare('UPDATE log SET snapshot = ? WHERE k = ?');
    for (const row of latest) {
      const snap = JSON.parse(row.snapshot) as PersistedSession;
      const queued = (snap.host as { queue?: Omit<QueuedEntry, 'pos'>[] } | undefined)?.queue;
      if (!Array.isArray(queued)) continue;
      queued.forEach((q, i) => insert.run(row.sk, q.turnId, i + 1, JSON.stringify({ ...q, pos: i + 1 })));
      delete (snap.host as { queue?: unknown }).queue;
      rewrite.run(JSON.stringify(snap), row.k);
    }
  },
];

const APPROVALS = ['approval_id', 'session_id', 'status', 'body', 'resolution'];
const LOG_V3 = ['k', 'last_seq', 'last_ord', 'events', 'mailbox', 'executions', 'snapshot'];
/**
 * SCHEMAS[v]: the tables a file at version v has, and the columns of each that this turnstate
 * reads or migrates (a file may hold more). A file at version v that lacks one is not a store of
 * that version: another application that uses `user_version` too. A new version adds its entry
 * here with its migration (test store:sqlite:schema:known-versions checks both stay in step).
 */
export const SCHEMAS: readonly (Readonly<Record<string, readonly string[]>> | undefined)[] = [
  undefined,
  {
    sessions: ['id', 'tenant_id', 'created_at', 'body'],
    events: ['session_id', 'seq', 'type', 'turn_id', 'body'],
    mailbox: ['session_id', 'ord', 'body'],
    executions: ['session_id', 'call_id', 'body'],
    approvals: APPROVALS,
    snapshots: ['session_id', 'body'],
  },
  {
    sessions: ['id', 'tenant_id', 'created_at', 'body'],
    approvals: APPROVALS,
    log: ['session_id', 'n', 'last_seq', 'last_ord', 'events', 'mailbox', 'executions', 'snapshot'],
  },
  { sessions: ['sk', 'id', 'tenant_id', 'created_at', 'body'], approvals: APPROVALS, log: LOG_V3 },
  { sessions: ['sk', 'id', 'tenant_id', 'created_at', 'body'], approvals: APPROVALS, log: LOG_V3, queue: ['sk', 'turn_id', 'pos', 'body'] },
];

/** The tables and columns (`table.column`) a file at `version` should have and does not: read only, nothing written. */
function missingSchema(db: Db, version: number): string[] {
  const expected = SCHEMAS[version];
  if (expected === undefined) return [];
  const columnsOf = db.prepare('SELECT name FROM pragma_table_info(?)').pluck();
  const missing: string[] = [];
  for (const [table, columns] of Object.entries(expected)) {
    const has = new Set(columnsOf.all(table) as string[]);
    if (has.size === 0) missing.push(table);
    else for (const c of columns) if (!has.has(c)) missing.push(`${table}.${c}`);
  }
  return missing;
}

/** The file's schema version; a file written by a newer turnstate is refused rather than misread. */
function schemaVersionOf(db: Db): number {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SQLITE_SCHEMA_VERSION) {
    throw storeError(
      'store.schema_too_new',
      `${db.name}: schema version ${version} is newer than this turnstate's ${SQLITE_SCHEMA_VERSION}; upgrade turnstate to open it`,
      { path: db.name, version },
    );
  }
  return version;
}

/** The names of what a file's schema holds (tables, indexes, views, triggers); none in a new database. */
function schemaObjects(db: Db): string[] {
  return db.prepare('SELECT name FROM sqlite_master ORDER BY rowid').pluck().all() as string[];
}

/** The first five names of a list, and `...` when it holds more (a refusal names what it found without listing a whole schema). */
const firstFive = (names: readonly string[]): string => (names.length > 5 ? `${names.slice(0, 5).join(', ')}, ...` : names.join(', '));

/** "<path> is not a turnstate store (...)": the words both the writable and the read-only refusal use. */
function notAStore(path: string, objects: readonly string[]): string {
  if (objects.length === 0) return `${path} is not a turnstate store (it has no schema version)`;
  const shown = firstFive(objects);
  return `${path} is not a turnstate store (it has no schema version and holds another application's schema: ${shown})`;
}

/**
 * The schema version of a file a writable store may migrate, read before anything is written to
 * it. Version 0 is a new database only while its schema is empty: a file at version 0 that
 * already holds tables belongs to another application and is refused (`store.open_failed`),
 * so no migration ever writes into it. A file at version 1 or later must have the tables and
 * columns of its version: one that lacks any (another application that sets `user_version`) is
 * refused the same way. A file of a newer turnstate is refused too.
 */
export function checkWritableVersion(db: Db): number {
  const version = schemaVersionOf(db);
  if (version === 0) {
    const objects = schemaObjects(db);
    if (objects.length > 0) {
      throw storeError('store.open_failed', `${notAStore(db.name, objects)}; nothing was written to it`, {
        path: db.name,
        version,
        objects,
      });
    }
    return version;
  }
  const missing = missingSchema(db, version);
  if (missing.length > 0) {
    const shown = firstFive(missing);
    throw storeError(
      'store.open_failed',
      `${db.name} is not a turnstate store (it claims schema version ${version} but lacks what that version has: ${shown}); nothing was written to it`,
      { path: db.name, version, missing },
    );
  }
  return version;
}

/**
 * Brings a database to SQLITE_SCHEMA_VERSION, one transaction per step. A file written by a
 * newer version, or another application's database, is refused before anything is written.
 */
export function migrateSqlite(db: Db): void {
  const from = checkWritableVersion(db);
  for (let v = from; v < SQLITE_SCHEMA_VERSION; v++) {
    const step = MIGRATIONS[v] as (db: Db) => void;
    db.transaction(() => {
      step(db);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
  // v4 cleared every snapshot but the latest of each session: give the space back to the file
  // system once when most of the file became free (a v3 file grew with its snapshots).
  if (from > 0 && from < 4) {
    const free = db.pragma('freelist_count', { simple: true }) as number;
    const pages = db.pragma('page_count', { simple: true }) as number;
    if (free * 2 > pages) db.exec('VACUUM');
  }
}

/** A read-only store reads exactly this version's schema: it cannot migrate a file. */
export function checkReadableVersion(db: Db): void {
  const version = schemaVersionOf(db);
  if (version < SQLITE_SCHEMA_VERSION) {
    throw storeError(
      'store.schema_too_old',
      version === 0
        ? notAStore(db.name, schemaObjects(db))
        : `${db.name}: schema version ${version} is older than this turnstate's ${SQLITE_SCHEMA_VERSION}, and a read-only store does not migrate; open it once for writing (e.g. with the server that uses it, upgraded) first`,
      { path: db.name, version },
    );
  }
}

/** Opens the file for a store: checked (read-only) or checked, in WAL mode and migrated (writable). */
export function openSqliteFile(options: SqliteStoreOptions, readonly: boolean, sync: 'normal' | 'full'): Db {
  let db: Db;
  try {
    db = new Database(options.path, { timeout: options.busyTimeoutMs ?? 5000, readonly, fileMustExist: readonly });
  } catch (err) {
    throw openFailed(options.path, err);
  }
  try {
    if (readonly) checkReadableVersion(db);
    else openForWriting(db, options, sync);
  } catch (err) {
    db.close();
    throw openFailed(options.path, err);
  }
  return db;
}

function openForWriting(db: Db, options: SqliteStoreOptions, sync: 'normal' | 'full'): void {
  // Exclusive before WAL: the WAL index then lives in process memory, not a -shm file.
  if (options.exclusive === true) db.pragma('locking_mode = EXCLUSIVE');
  // Read the file's version and schema before the first write (switching to WAL rewrites its
  // header): a file that is not a turnstate store is refused untouched.
  checkWritableVersion(db);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync === 'full' ? 'FULL' : 'NORMAL'}`);
  // Checkpoint the WAL every ~32 MB instead of ~4 MB: the log's last pages are rewritten many
  // times between checkpoints and copied to the file once each.
  db.pragma('wal_autocheckpoint = 8000');
  migrateSqlite(db);
  // SQLite opens a file it may only read (mode 444, a read-only mount) read-only without a word;
  // a write rolled back now fails here instead of at the first commit.
  probeWrite(db);
}

/**
 * Writes the schema version it already holds and rolls back: throws SQLITE_READONLY where no
 * write can land. Another connection in a write transaction (a maintenance shell) means the file
 * can be written: the probe does not wait for it (the store's first commit will, as it always did).
 */
function probeWrite(db: Db): void {
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.pragma(`user_version = ${db.pragma('user_version', { simple: true }) as number}`);
    } finally {
      if (db.inTransaction) db.exec('ROLLBACK');
    }
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'SQLITE_BUSY') throw e;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/**
 * A failure to open, check or migrate the file as `store.open_failed` naming the path and the
 * cause (a file that is not a database, a lock held too long, a failed migration step: each step
 * is one transaction, so the file stays at the last version reached; a file a writable store
 * cannot write says "cannot write"). A TurnstateError (a schema refusal) already names the path
 * and passes through.
 */
export function openFailed(path: string, err: unknown): TurnstateError {
  if (err instanceof TurnstateError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const sqliteCode = (err as { code?: unknown } | null)?.code;
  // SQLITE_READONLY, SQLITE_READONLY_DIRECTORY, ...: readable, but a writable store cannot work.
  const text =
    typeof sqliteCode === 'string' && sqliteCode.startsWith('SQLITE_READONLY')
      ? `cannot write SQLite store ${path}: ${message} (this process may not write the file or its directory: fix their permissions, or open the store with readonly: true to read it)`
      : `cannot open SQLite store ${path}: ${message}`;
  return new TurnstateError('store.open_failed', text, {
    cause: err,
    details: typeof sqliteCode === 'string' ? { path, sqliteCode } : { path },
  });
}
