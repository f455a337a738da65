import { describe, it, expect, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { TurnstateError } from '../../src/errors.js';
import { MAX_TIMER_MS } from '../../src/limits.js';
import type { SessionStore } from '../../src/machines/ports.js';
import { createSqliteStore, SQLITE_SCHEMA_VERSION } from '../../src/stores/sqlite.js';
import { SCHEMAS } from '../../src/stores/sqlite-schema.js';
import { runStoreSuite, session, events, mail, snapshot, approval, resolution } from './store.case.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const fresh = (): string => join(dir, `store-${process.pid}-${files++}.db`);
const paths = new WeakMap<SessionStore, string>();

function open(path: string, exclusive = false): SessionStore {
  const store = createSqliteStore({ path, exclusive });
  paths.set(store, path);
  return store;
}

runStoreSuite(
  'sqlite',
  () => open(fresh()),
  async (store) => {
    const path = paths.get(store)!;
    await store.close();
    return open(path);
  },
);

runStoreSuite(
  'sqlite exclusive',
  () => open(fresh(), true),
  async (store) => {
    const path = paths.get(store)!;
    await store.close();
    return open(path, true);
  },
);

runStoreSuite('sqlite :memory:', () => createSqliteStore({ path: ':memory:' }));

/** The TurnstateError `fn` throws (fails the test when it throws anything else or nothing). */
function refusal(fn: () => unknown): TurnstateError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected a TurnstateError, got ${String(caught)}`).toBeInstanceOf(TurnstateError);
  return caught as TurnstateError;
}

/** The objects of a file's schema, and its user_version, read without changing it. */
function schemaOf(path: string): { version: unknown; objects: unknown[] } {
  const raw = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return {
      version: raw.pragma('user_version', { simple: true }),
      objects: raw.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all(),
    };
  } finally {
    raw.close();
  }
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof TurnstateError ? err.code : `not a TurnstateError: ${String(err)}`;
  }
  return undefined;
}


/** The tables of a schema version 3 file, as that version wrote them. */
const V3_SCHEMA = `
  CREATE TABLE sessions (sk INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, tenant_id TEXT, created_at TEXT NOT NULL, body TEXT NOT NULL);
  CREATE TABLE log (k INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, last_ord INTEGER NOT NULL, events TEXT, mailbox TEXT, executions TEXT, snapshot TEXT);
  CREATE INDEX sessions_tenant ON sessions (tenant_id) WHERE tenant_id IS NOT NULL;
  CREATE TABLE approvals (approval_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, resolution TEXT);
  CREATE INDEX approvals_session ON approvals (session_id);
  CREATE INDEX approvals_status ON approvals (status);
  PRAGMA user_version = 3;`;

describe('sqlite store specifics', () => {
  it('store:sqlite:wal — a file store runs in WAL mode with synchronous=NORMAL by default, FULL on request', () => {
    const path = fresh();
    const store = createSqliteStore({ path });
    expect(store.info()).toEqual({
      path,
      journalMode: 'wal',
      synchronous: 'normal',
      lockingMode: 'normal',
      readonly: false,
      schemaVersion: SQLITE_SCHEMA_VERSION,
    });
    store.close();
    // The journal mode is persistent: a plain connection sees it too.
    const raw = new Database(path);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
    const full = createSqliteStore({ path, synchronous: 'full' });
    expect(full.info().synchronous).toBe('full');
    full.close();
  });

  it('store:sqlite:exclusive — with exclusive: true the file is locked to the store until it closes', () => {
    const path = fresh();
    const store = createSqliteStore({ path, exclusive: true });
    store.createSession(session('s1'));
    store.commit('s1', { events: events('s1', 1, 2) });
    expect(store.info().lockingMode).toBe('exclusive');
    expect(existsSync(`${path}-shm`)).toBe(false);
    const other = new Database(path, { timeout: 0 });
    expect(() => other.prepare('SELECT count(*) FROM events').get()).toThrow(/locked/);
    other.close();
    store.close();
    const after = createSqliteStore({ path });
    expect(after.lastSeq('s1')).toBe(2);
    after.close();
  });

  it('store:sqlite:options — a missing path, an unknown synchronous level or an unopenable file is refused by name', () => {
    expect(codeOf(() => createSqliteStore({ path: '' }))).toBe('store.invalid_argument');
    expect(codeOf(() => createSqliteStore({ path: fresh(), synchronous: 'off' as 'full' }))).toBe('store.invalid_argument');
    expect(codeOf(() => createSqliteStore({ path: join(dir, 'no-such-dir', 'x.db') }))).toBe('store.open_failed');
  });

  it(`store:sqlite:options:busy-timeout — "busyTimeoutMs is an integer from 0 to ${MAX_TIMER_MS}": checked by the store, naming busyTimeoutMs and the value received, before better-sqlite3 sees it (its error names its own "timeout" option); -0 opens as 0`, () => {
    const range = `an integer from 0 to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;
    for (const [v, shown] of [[-1, '-1'], [1.5, '1.5'], [Number.NaN, 'NaN'], [Number.POSITIVE_INFINITY, 'Infinity'], ['1000', '"1000"'], [2 ** 31, '2147483648']] as const) {
      expect(() => createSqliteStore({ path: ':memory:', busyTimeoutMs: v as number }), String(v)).toThrow(
        expect.objectContaining({ code: 'store.invalid_argument', message: `createSqliteStore: busyTimeoutMs must be ${range}, got ${shown}` }),
      );
    }
    for (const busyTimeoutMs of [0, -0, MAX_TIMER_MS]) createSqliteStore({ path: ':memory:', busyTimeoutMs }).close();
  });

  it('store:sqlite:open:not-a-database — a file that is not a SQLite database is refused with store.open_failed naming the path and the cause, writable or read-only, and left as it was', () => {
    const path = join(dir, 'text-file.db');
    writeFileSync(path, 'this is not a sqlite database at all, just text\n'.repeat(100));
    const before = readFileSync(path);
    for (const options of [{ path }, { path, exclusive: true }, { path, readonly: true }]) {
      const err = refusal(() => createSqliteStore(options));
      expect(err.code).toBe('store.open_failed');
      expect(err.message).toContain(path);
      expect(err.message).toMatch(/not a database/);
      expect(err.details).toMatchObject({ path });
    }
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('store:sqlite:open:foreign — another application\'s database (user_version 0, its own `sessions` table) is refused as not a turnstate store before anything is written to it; an empty file and :memory: are still created', () => {
    const path = join(dir, 'foreign.db');
    const raw = new Database(path);
    raw.exec("CREATE TABLE sessions (x INTEGER); INSERT INTO sessions VALUES (1), (2); CREATE TABLE other (y TEXT);");
    raw.close();
    const bytes = readFileSync(path);
    const schema = schemaOf(path);
    for (const options of [{ path }, { path, exclusive: true }]) {
      const err = refusal(() => createSqliteStore(options));
      expect(err.code).toBe('store.open_failed');
      expect(err.message).toContain(path);
      expect(err.message).toMatch(/is not a turnstate store/);
      expect(err.message).toMatch(/sessions/);
      // Not half-migrated, not switched to WAL: the file is byte for byte what it was.
      expect(schemaOf(path)).toEqual(schema);
      expect(readFileSync(path).equals(bytes)).toBe(true);
    }
    // Read-only, the same file is refused with the same words (and its own code).
    const ro = refusal(() => createSqliteStore({ path, readonly: true }));
    expect(ro.code).toBe('store.schema_too_old');
    expect(ro.message).toContain(`${path} is not a turnstate store`);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    // A file that exists but is empty (0 bytes) is a new database: it becomes a store.
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    const store = createSqliteStore({ path: empty });
    store.commit('s1', { session: session('s1'), events: events('s1', 1, 1) });
    expect(store.info().schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    store.close();
    const mem = createSqliteStore({ path: ':memory:' });
    expect(mem.info().schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    mem.close();
  });

  it('store:sqlite:open:foreign-version — "a version 0 file that has tables is refused before the first write (the switch to WAL included), so another application\'s file is never half-migrated", and so is one at version 1 to 4 (another application that sets user_version) that lacks the tables or columns of that version: refused as not a turnstate store, byte for byte as it was', () => {
    const cases: [number, string][] = [
      [1, 'CREATE TABLE users (id INTEGER)'],
      [2, 'CREATE TABLE users (id INTEGER)'],
      [3, 'CREATE TABLE users (id INTEGER)'],
      [SQLITE_SCHEMA_VERSION, 'CREATE TABLE users (id INTEGER)'],
      // Tables of the right names, one without a column the store reads.
      [SQLITE_SCHEMA_VERSION, `CREATE TABLE sessions (sk INTEGER PRIMARY KEY, id TEXT, tenant_id TEXT, created_at TEXT, body TEXT);
        CREATE TABLE log (k INTEGER PRIMARY KEY, last_seq INTEGER, last_ord INTEGER, events TEXT, mailbox TEXT, executions TEXT, snapshot TEXT);
        CREATE TABLE approvals (approval_id TEXT, session_id TEXT, status TEXT, body TEXT, resolution TEXT);
        CREATE TABLE queue (sk INTEGER, turn_id TEXT, body TEXT);`],
    ];
    for (const [version, sql] of cases) {
      const path = fresh();
      const raw = new Database(path);
      raw.exec(`${sql}; INSERT INTO ${sql.includes('users') ? 'users' : 'sessions (id)'} VALUES (1); PRAGMA user_version = ${version};`);
      raw.close();
      const bytes = readFileSync(path);
      const schema = schemaOf(path);
      for (const options of [{ path }, { path, exclusive: true }]) {
        const err = refusal(() => createSqliteStore(options));
        expect(err.code, `version ${version}`).toBe('store.open_failed');
        expect(err.message).toContain(`${path} is not a turnstate store`);
        expect(err.message).toContain(`schema version ${version}`);
        expect(err.message).toMatch(sql.includes('users') ? /lacks .*sessions/ : /lacks .*queue\.pos/);
        // Not migrated, not switched to WAL: the file is byte for byte what it was.
        expect(schemaOf(path)).toEqual(schema);
        expect(readFileSync(path).equals(bytes), `version ${version}: the file changed`).toBe(true);
        expect(existsSync(`${path}-wal`)).toBe(false);
      }
    }
  });

  it('store:sqlite:open:broken-schema — a file that claims the current version but lacks its tables is refused with store.open_failed naming the path', () => {
    const path = fresh();
    const raw = new Database(path);
    raw.exec(`CREATE TABLE sessions (x INTEGER); PRAGMA user_version = ${SQLITE_SCHEMA_VERSION};`);
    raw.close();
    for (const options of [{ path }, { path, readonly: true }]) {
      const err = refusal(() => createSqliteStore(options));
      expect(err.code).toBe('store.open_failed');
      expect(err.message).toContain(path);
    }
  });

  it('store:sqlite:schema:known-versions — "a file at version v that lacks the tables or columns of that version is not a store of that version": the check knows every version up to the current one, and a new file has exactly the tables and columns the current version\'s check reads', () => {
    expect(SCHEMAS).toHaveLength(SQLITE_SCHEMA_VERSION + 1);
    for (let v = 1; v <= SQLITE_SCHEMA_VERSION; v++) expect(SCHEMAS[v], `the tables of version ${v}`).toBeDefined();
    const path = fresh();
    createSqliteStore({ path }).close();
    const raw = new Database(path, { readonly: true });
    try {
      const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence' ORDER BY name").pluck().all() as string[];
      const current = SCHEMAS[SQLITE_SCHEMA_VERSION]!;
      expect(tables).toEqual(Object.keys(current).sort());
      for (const t of tables) {
        const columns = raw.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(t) as string[];
        expect([...columns].sort(), `the columns of ${t}`).toEqual([...current[t]!].sort());
      }
    } finally {
      raw.close();
    }
  });

  it('store:sqlite:schema — a new file gets the current user_version and every table; a newer schema is refused', () => {
    const path = fresh();
    createSqliteStore({ path }).close();
    const raw = new Database(path);
    expect(raw.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    expect(tables).toEqual(['approvals', 'log', 'queue', 'sessions', 'sqlite_sequence']);
    raw.pragma('user_version = 99');
    raw.close();
    expect(codeOf(() => createSqliteStore({ path }))).toBe('store.schema_too_new');
  });

  it('store:sqlite:unique — a session\'s commits are a sequence: two writers on one file cannot both append commit n', () => {
    const path = fresh();
    const a = createSqliteStore({ path });
    a.createSession(session('s1'));
    a.commit('s1', { events: events('s1', 1, 1) });
    const b = createSqliteStore({ path });
    // b reads where the log ends (seq 1, commit 1) and appends commit 2.
    b.commit('s1', { events: events('s1', 2, 1) });
    // a still believes the log ends at commit 1: its commit 2 collides and nothing of it is written.
    expect(codeOf(() => a.commit('s1', { events: events('s1', 2, 1), mailbox: [mail('lost')] }))).toBe('store.seq_conflict');
    expect(b.readEvents('s1', 0).map((e) => e.seq)).toEqual([1, 2]);
    expect(b.readMailbox('s1')).toEqual([]);
    // After the conflict a reads the head again and continues the log.
    a.commit('s1', { events: events('s1', 3, 1) });
    expect(b.readEvents('s1', 0).map((e) => e.seq)).toEqual([1, 2, 3]);
    a.close();
    b.close();
  });

  it('store:sqlite:one-tree — a commit adds one row to one B-tree: the log is keyed by the session\'s key and its commit number', () => {
    const path = fresh();
    const store = createSqliteStore({ path });
    store.commit('s1', { session: session('s1'), events: events('s1', 1, 2), mailbox: [mail('a')], snapshot: snapshot(1) });
    store.commit('s1', { events: events('s1', 3, 1) });
    store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log'").pluck().all()).toEqual([]);
    const sk = raw.prepare("SELECT sk FROM sessions WHERE id = 's1'").pluck().get() as number;
    expect(raw.prepare('SELECT k - ? * 4294967296 FROM log ORDER BY k').pluck().all(sk)).toEqual([1, 2]);
    raw.close();
  });

  it('store:sqlite:sk-not-reused — a deleted session\'s key is never given to a new session (a writer still holding it cannot reach another session\'s rows)', () => {
    const path = fresh();
    const a = createSqliteStore({ path });
    a.commit('s1', { session: session('s1'), events: events('s1', 1, 1) });
    a.commit('s2', { session: session('s2'), events: events('s2', 1, 1) });
    const b = createSqliteStore({ path });
    b.deleteSession('s2');
    b.commit('s3', { session: session('s3'), events: events('s3', 1, 1) });
    // a still holds s2's key: its commit must not land in s3's log.
    try {
      a.commit('s2', { events: events('s2', 2, 1) });
    } catch {
      // refused is fine too
    }
    expect(b.readEvents('s3', 0).map((e) => [e.sessionId, e.seq])).toEqual([['s3', 1]]);
    const raw = new Database(path, { readonly: true });
    const keys = raw.prepare('SELECT id, sk FROM sessions ORDER BY sk').all() as { id: string; sk: number }[];
    expect(keys.map((r) => r.id)).toEqual(['s1', 's3']);
    expect(keys[1]!.sk).toBe(3);
    raw.close();
    a.close();
    b.close();
  });

  /** Makes the file's next session key `next` (as a file that created and deleted next - 1 sessions over its life). */
  function nextSessionKey(path: string, next: number): void {
    const raw = new Database(path);
    raw.prepare("DELETE FROM sqlite_sequence WHERE name = 'sessions'").run();
    raw.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('sessions', ?)").run(BigInt(next - 1));
    raw.close();
  }

  /** Each log row's commit number (k - sk * 2^32, in 64-bit integers), per session id. */
  function commitNumbers(path: string): Record<string, number[]> {
    const raw = new Database(path, { readonly: true });
    raw.defaultSafeIntegers(true);
    const rows = raw.prepare('SELECT s.id, l.k - s.sk * 4294967296 AS n FROM log l JOIN sessions s ON l.k / 4294967296 = s.sk ORDER BY l.k').all() as { id: string; n: bigint }[];
    raw.close();
    const out: Record<string, number[]> = {};
    for (const r of rows) (out[r.id] ??= []).push(Number(r.n));
    return out;
  }

  it('store:sqlite:wide-keys — "a deleted session\'s sk is never given to a new session": a file that has handed out more than 2^21 session keys (log keys past 2^53, where a double loses their low bits) commits, reads events, mailbox and snapshot, replays from a seq and deletes exactly, across reopen', () => {
    // 2^21 + 6: the first key past what a double computes exactly; 2^31 - 2: the neighbours up to the largest key a log row can take.
    for (const first of [2 ** 21 + 6, 2 ** 31 - 2]) {
      const path = fresh();
      createSqliteStore({ path }).close();
      nextSessionKey(path, first);
      let store = createSqliteStore({ path });
      for (let n = 1; n <= 5; n++) {
        // Two sessions with neighbouring keys, commits interleaved; a's first commit creates it (group commit), b is created first.
        if (n === 1) store.createSession(session('b'));
        store.commit('a', { ...(n === 1 ? { session: session('a') } : {}), events: events('a', n, 1), mailbox: [mail(`a${n}`)], snapshot: snapshot(n) });
        store.commit('b', { events: events('b', 2 * n - 1, 2), mailbox: [mail(`b${n}`)], snapshot: snapshot(100 + n) });
      }
      const check = (s: SessionStore, commits: number) => {
        expect(s.readEvents('a', 0)).toEqual(events('a', 1, commits));
        expect(s.readEvents('a', 3)).toEqual(events('a', 4, commits - 3));
        expect(s.readEvents('b', 7, 2)).toEqual(events('b', 8, 2));
        expect(s.lastSeq('a')).toBe(commits);
        expect(s.readMailbox('a')).toEqual(Array.from({ length: commits }, (_, i) => mail(`a${i + 1}`)));
        expect(s.readMailbox('a', 3)).toEqual(Array.from({ length: commits - 3 }, (_, i) => mail(`a${i + 4}`)));
        expect(s.loadSnapshot('a')).toEqual(snapshot(commits));
        expect(s.readMailbox('b')).toHaveLength(5);
        expect(s.loadSnapshot('b')).toEqual(snapshot(105));
      };
      check(store as SessionStore, 5);
      store.close();
      expect(commitNumbers(path), `first key ${first}`).toEqual({ b: [1, 2, 3, 4, 5], a: [1, 2, 3, 4, 5] });
      store = createSqliteStore({ path });
      check(store as SessionStore, 5);
      // The reopened store reads where a's log ends and continues it; the new snapshot replaces the last.
      store.commit('a', { events: events('a', 6, 1), mailbox: [mail('a6')], snapshot: snapshot(6) });
      check(store as SessionStore, 6);
      store.close();
      const snaps = new Database(path, { readonly: true });
      // One snapshot per session: each commit with one cleared the row that held the last.
      expect(snaps.prepare('SELECT count(*) FROM log WHERE snapshot IS NOT NULL').pluck().get()).toBe(2);
      snaps.close();
      store = createSqliteStore({ path });
      store.deleteSession('a');
      expect(store.readEvents('a', 0)).toEqual([]);
      expect(store.readEvents('b', 0)).toEqual(events('b', 1, 10));
      store.close();
      const raw = new Database(path, { readonly: true });
      raw.defaultSafeIntegers(true);
      expect(raw.prepare("SELECT sk FROM sessions WHERE id = 'b'").pluck().get()).toBe(BigInt(first));
      expect(raw.prepare('SELECT count(*) FROM log WHERE snapshot IS NOT NULL').pluck().get()).toBe(1n);
      raw.close();
      expect(commitNumbers(path)).toEqual({ b: [1, 2, 3, 4, 5] });
    }
  });

  it('store:sqlite:migrate-v2 — a version 2 file (log keyed by session id and n) opens with every session, commit and approval in order', () => {
    const path = fresh();
    const raw = new Database(path);
    raw.exec(`
      CREATE TABLE sessions (id TEXT PRIMARY KEY, tenant_id TEXT, created_at TEXT NOT NULL, body TEXT NOT NULL);
      CREATE INDEX sessions_tenant ON sessions (tenant_id);
      CREATE TABLE approvals (approval_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, resolution TEXT);
      CREATE INDEX approvals_session ON approvals (session_id);
      CREATE INDEX approvals_status ON approvals (status);
      CREATE TABLE log (session_id TEXT NOT NULL, n INTEGER NOT NULL, last_seq INTEGER NOT NULL, last_ord INTEGER NOT NULL,
        events TEXT, mailbox TEXT, executions TEXT, snapshot TEXT, UNIQUE (session_id, n));
      PRAGMA user_version = 2;`);
    const s1 = session('s1');
    const s2 = { ...session('s2'), tenantId: 't2' };
    for (const s of [s2, s1]) raw.prepare('INSERT INTO sessions VALUES (?, ?, ?, ?)').run(s.id, s.tenantId ?? null, s.createdAt, JSON.stringify(s));
    const ins = raw.prepare('INSERT INTO log VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    const e1 = events('s1', 1, 3);
    ins.run('s1', 1, 2, 1, JSON.stringify(e1.slice(0, 2)), JSON.stringify([mail('a')]), null, JSON.stringify(snapshot(1)));
    ins.run('s2', 1, 1, 0, JSON.stringify(events('s2', 1, 1)), null, null, null);
    ins.run('s1', 2, 3, 2, JSON.stringify(e1.slice(2)), JSON.stringify([mail('b')]), JSON.stringify([{ callId: 'c1', tool: 't' }]), JSON.stringify(snapshot(2)));
    const ap = approval('s1', 'ap1');
    raw.prepare('INSERT INTO approvals VALUES (?, ?, ?, ?, NULL)').run('ap1', 's1', 'pending', JSON.stringify(ap));
    raw.close();
    const store = createSqliteStore({ path });
    expect(store.info().schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    expect(store.listSessions().map((s) => s.id)).toEqual(['s2', 's1']);
    expect(store.listSessions({ tenantId: 't2' }).map((s) => s.id)).toEqual(['s2']);
    expect(store.readEvents('s1', 0)).toEqual(e1);
    expect(store.readEvents('s2', 0).map((e) => e.seq)).toEqual([1]);
    expect(store.readMailbox('s1')).toEqual([mail('a'), mail('b')]);
    expect(store.readExecutions('s1')).toEqual([{ callId: 'c1', tool: 't' }]);
    expect(store.loadSnapshot('s1')).toEqual(snapshot(2));
    expect(store.getApproval('ap1')?.status).toBe('pending');
    // The migrated log continues: commit 3 of s1 follows.
    store.commit('s1', { events: events('s1', 4, 1), mailbox: [mail('c')] });
    expect(store.readEvents('s1', 3).map((e) => e.seq)).toEqual([4]);
    expect(store.readMailbox('s1')).toEqual([mail('a'), mail('b'), mail('c')]);
    store.close();
  });

  it('store:sqlite:one-snapshot — a session keeps only its latest snapshot: each commit with one clears the row that held the last, across reopen', () => {
    const path = fresh();
    let store = createSqliteStore({ path });
    store.createSession(session('s1'));
    store.createSession(session('s2'));
    for (let n = 1; n <= 50; n++) {
      store.commit('s1', { events: events('s1', n, 1), snapshot: snapshot(n) });
      if (n % 10 === 0) store.commit('s2', { snapshot: snapshot(1000 + n) });
      if (n === 25) {
        store.close();
        store = createSqliteStore({ path });
      }
    }
    expect(store.loadSnapshot('s1')).toEqual(snapshot(50));
    expect(store.loadSnapshot('s2')).toEqual(snapshot(1050));
    store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT count(*) FROM log WHERE snapshot IS NOT NULL').pluck().get()).toBe(2);
    raw.close();
  });

  it('store:sqlite:migrate-v3 — a version 3 file keeps only each session\'s latest snapshot, its queued messages become queue records, and the freed space is given back', () => {
    const path = fresh();
    const raw = new Database(path);
    raw.pragma('journal_mode = WAL');
    raw.exec(V3_SCHEMA);
    for (const id of ['s1', 's2']) raw.prepare('INSERT INTO sessions (id, created_at, body) VALUES (?, ?, ?)').run(id, session(id).createdAt, JSON.stringify(session(id)));
    // What v3 wrote for 120 queued messages of 10 KB: every commit a snapshot of the whole queue.
    const text = (i: number) => `${i} ${'x'.repeat(10_000)}`;
    const queueOf = (n: number) => Array.from({ length: n }, (_, i) => ({ turnId: `q${i}`, message: { text: text(i) }, opts: {} }));
    const ins = raw.prepare('INSERT INTO log VALUES (?, ?, ?, ?, ?, NULL, ?)');
    const LOG_SPAN = 2 ** 32;
    ins.run(LOG_SPAN + 1, 1, 1, JSON.stringify(events('s1', 1, 1)), JSON.stringify([mail('book')]), JSON.stringify({ machine: { value: { turn: 'suspended' } }, host: { queue: [] } }));
    for (let n = 1; n <= 120; n++) ins.run(LOG_SPAN + 1 + n, 1, 1, null, null, JSON.stringify({ machine: { value: { turn: 'suspended' } }, host: { queue: queueOf(n), turn: { turnId: 't0' } } }));
    ins.run(2 * LOG_SPAN + 1, 1, 0, JSON.stringify(events('s2', 1, 1)), null, JSON.stringify(snapshot(7)));
    raw.close();
    const before = statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
    expect(before).toBeGreaterThan(60 * 2 ** 20);

    const store = createSqliteStore({ path });
    expect(store.info().schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    expect(store.loadSnapshot('s1')).toEqual({ machine: { value: { turn: 'suspended' } }, host: { turn: { turnId: 't0' } } });
    expect(store.loadSnapshot('s2')).toEqual(snapshot(7));
    const q = store.readQueue('s1');
    expect(q.map((e) => e.turnId)).toEqual(queueOf(120).map((e) => e.turnId));
    expect(q[119]).toEqual({ turnId: 'q119', pos: 120, message: { text: text(119) }, opts: {} });
    expect(store.readQueue('s2')).toEqual([]);
    expect(store.readMailbox('s1')).toEqual([mail('book')]);
    expect(store.readEvents('s1', 0)).toEqual(events('s1', 1, 1));
    // The log continues after the migrated rows, and the next snapshot replaces the migrated one.
    store.commit('s1', { events: events('s1', 2, 1), snapshot: snapshot(8), dequeue: ['q0'] });
    expect(store.loadSnapshot('s1')).toEqual(snapshot(8));
    expect(store.readQueue('s1')).toHaveLength(119);
    store.close();
    const after = statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
    // 120 messages of 10 KB are 1.2 MB of text; the file was over 60 MB.
    expect(after).toBeLessThan(3 * 1_200_000);
  });

  it('store:sqlite:migrate-v3:wide-keys — "version 3 files keep only each session\'s latest snapshot, and the queued messages that snapshot carried become queue rows" for a session whose key is past 2^21 too (its log keys are past 2^53)', () => {
    const path = fresh();
    const raw = new Database(path);
    raw.exec(V3_SCHEMA);
    const sk = BigInt(2 ** 21 + 6);
    raw.prepare('INSERT INTO sessions (sk, id, created_at, body) VALUES (?, ?, ?, ?)').run(sk, 's1', session('s1').createdAt, JSON.stringify(session('s1')));
    const ins = raw.prepare('INSERT INTO log VALUES (? * 4294967296 + ?, ?, 0, ?, NULL, NULL, ?)');
    const queued = { turnId: 'q1', message: { text: 'queued while waiting' }, opts: {} };
    // Commit 3 (an odd key, which a double rounds to commit 4's) holds the latest snapshot, with a queued message.
    for (let n = 1; n <= 3; n++) {
      const snap = { machine: { value: { turn: 'suspended' } }, host: { queue: n === 3 ? [queued] : [], turn: { turnId: `t${n}` } } };
      ins.run(sk, BigInt(n), n, JSON.stringify(events('s1', n, 1)), JSON.stringify(snap));
    }
    raw.close();
    const store = createSqliteStore({ path });
    expect(store.info().schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    expect(store.readQueue('s1')).toEqual([{ ...queued, pos: 1 }]);
    // The queue left the snapshot it rode in.
    expect(store.loadSnapshot('s1')).toEqual({ machine: { value: { turn: 'suspended' } }, host: { turn: { turnId: 't3' } } });
    expect(store.readEvents('s1', 0)).toEqual(events('s1', 1, 3));
    store.commit('s1', { events: events('s1', 4, 1), dequeue: ['q1'] });
    expect(store.readQueue('s1')).toEqual([]);
    expect(store.readEvents('s1', 2)).toEqual(events('s1', 3, 2));
    store.close();
    expect(commitNumbers(path)).toEqual({ s1: [1, 2, 3, 4] });
  });

  it('store:sqlite:readonly — a read-only store reads a file another store is writing, sees each commit as it lands, and refuses every write', () => {
    const path = fresh();
    const writer = createSqliteStore({ path });
    writer.createSession(session('s1'));
    writer.commit('s1', { events: events('s1', 1, 2), mailbox: [mail('a')], approvals: [approval('s1', 'ap1')], snapshot: snapshot(1) });
    const reader = createSqliteStore({ path, readonly: true });
    expect(reader.info().readonly).toBe(true);
    expect(reader.readEvents('s1', 0).map((e) => e.seq)).toEqual([1, 2]);
    writer.commit('s1', { events: events('s1', 3, 1) });
    expect(reader.readEvents('s1', 2).map((e) => e.seq)).toEqual([3]);
    expect(reader.lastSeq('s1')).toBe(3);
    expect(reader.readMailbox('s1')).toEqual([mail('a')]);
    expect(reader.loadSnapshot('s1')).toEqual(snapshot(1));
    expect(codeOf(() => reader.commit('s1', { events: events('s1', 4, 1) }))).toBe('store.read_only');
    expect(codeOf(() => reader.createSession(session('s2')))).toBe('store.read_only');
    expect(codeOf(() => reader.deleteSession('s1'))).toBe('store.read_only');
    expect(codeOf(() => reader.resolveApproval('ap1', resolution('approved', 'u')))).toBe('store.read_only');
    // Nothing of the refused writes reached the file.
    expect(writer.lastSeq('s1')).toBe(3);
    expect(writer.getSession('s2')).toBeUndefined();
    expect(writer.getApproval('ap1')?.status).toBe('pending');
    reader.close();
    writer.close();
  });

  it('store:sqlite:readonly-version — read-only, a missing file, an older schema or a file that is not a store is refused by name, and nothing is migrated', () => {
    expect(codeOf(() => createSqliteStore({ path: join(dir, 'missing.db'), readonly: true }))).toBe('store.open_failed');
    expect(existsSync(join(dir, 'missing.db'))).toBe(false);
    const old = fresh();
    const raw = new Database(old);
    raw.exec('CREATE TABLE sessions (id TEXT PRIMARY KEY, tenant_id TEXT, created_at TEXT NOT NULL, body TEXT NOT NULL); PRAGMA user_version = 2;');
    raw.close();
    expect(codeOf(() => createSqliteStore({ path: old, readonly: true }))).toBe('store.schema_too_old');
    const check = new Database(old, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(2);
    check.close();
    const other = fresh();
    new Database(other).exec('CREATE TABLE t (x)');
    expect(codeOf(() => createSqliteStore({ path: other, readonly: true }))).toBe('store.schema_too_old');
  });

  it('store:sqlite:migrate-v1 — a version 1 file (one row per event) opens with every event, mailbox entry and execution in order', () => {
    const path = fresh();
    const raw = new Database(path);
    raw.exec(`
      CREATE TABLE sessions (id TEXT PRIMARY KEY, tenant_id TEXT, created_at TEXT NOT NULL, body TEXT NOT NULL);
      CREATE INDEX sessions_tenant ON sessions (tenant_id);
      CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, turn_id TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (session_id, seq));
      CREATE TABLE mailbox (session_id TEXT NOT NULL, ord INTEGER NOT NULL, body TEXT NOT NULL, UNIQUE (session_id, ord));
      CREATE TABLE executions (session_id TEXT NOT NULL, call_id TEXT NOT NULL, body TEXT NOT NULL);
      CREATE INDEX executions_session ON executions (session_id);
      CREATE TABLE approvals (approval_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, resolution TEXT);
      CREATE INDEX approvals_session ON approvals (session_id);
      CREATE INDEX approvals_status ON approvals (status);
      CREATE TABLE snapshots (session_id TEXT PRIMARY KEY, body TEXT NOT NULL);
      PRAGMA user_version = 1;`);
    const rec = session('s1');
    raw.prepare('INSERT INTO sessions VALUES (?, NULL, ?, ?)').run('s1', rec.createdAt, JSON.stringify(rec));
    const evs = events('s1', 1, 3);
    for (const e of evs) raw.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?)').run('s1', e.seq, e.type, e.turnId, JSON.stringify(e));
    raw.prepare('INSERT INTO mailbox VALUES (?, ?, ?)').run('s1', 1, JSON.stringify(mail('a')));
    raw.prepare('INSERT INTO mailbox VALUES (?, ?, ?)').run('s1', 2, JSON.stringify(mail('b')));
    raw.prepare('INSERT INTO executions VALUES (?, ?, ?)').run('s1', 'c1', JSON.stringify({ callId: 'c1', tool: 't' }));
    raw.prepare('INSERT INTO snapshots VALUES (?, ?)').run('s1', JSON.stringify(snapshot(7)));
    raw.close();
    const store = createSqliteStore({ path });
    expect(store.info().schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    expect(store.readEvents('s1', 0)).toEqual(evs);
    expect(store.readEvents('s1', 2)).toEqual(evs.slice(2));
    expect(store.readMailbox('s1')).toEqual([mail('a'), mail('b')]);
    expect(store.readExecutions('s1')).toEqual([{ callId: 'c1', tool: 't' }]);
    expect(store.loadSnapshot('s1')).toEqual(snapshot(7));
    store.commit('s1', { events: events('s1', 4, 2), mailbox: [mail('c')] });
    expect(store.readEvents('s1', 3).map((e) => e.seq)).toEqual([4, 5]);
    expect(store.readMailbox('s1')).toEqual([mail('a'), mail('b'), mail('c')]);
    store.close();
  });

  it('store:commit:atomic-io — a step that fails while being written (unserialisable snapshot) leaves no event, mailbox entry or approval of it', () => {
    const store = createSqliteStore({ path: fresh() });
    store.createSession(session('s1'));
    store.commit('s1', { events: events('s1', 1, 2), mailbox: [mail('kept')], snapshot: snapshot(1) });
    const bad = { machine: { big: 10n }, host: {} };
    expect(codeOf(() => store.commit('s1', { events: events('s1', 3, 3), mailbox: [mail('lost')], snapshot: bad }))).toBe(
      'store.write_failed',
    );
    expect(store.lastSeq('s1')).toBe(2);
    expect(store.readMailbox('s1')).toEqual([mail('kept')]);
    expect(store.loadSnapshot('s1')).toEqual(snapshot(1));
    store.commit('s1', { events: events('s1', 3, 1) });
    expect(store.lastSeq('s1')).toBe(3);
    store.close();
  });

  it('store:sqlite:readers — another connection reads committed steps while the store keeps writing (WAL)', () => {
    const path = fresh();
    const store = createSqliteStore({ path });
    store.createSession(session('s1'));
    store.commit('s1', { events: events('s1', 1, 3) });
    const reader = createSqliteStore({ path });
    expect(reader.lastSeq('s1')).toBe(3);
    store.commit('s1', { events: events('s1', 4, 2) });
    expect(reader.readEvents('s1', 3)).toEqual(events('s1', 4, 2));
    reader.close();
    store.close();
  });

  it('store:sqlite:replay-search — readEvents(afterSeq) is exactly the events after afterSeq at any point of a 150-commit log with mailbox-only commits, cached, reopened, past what another connection appended, and with a gap in the log', () => {
    const path = fresh();
    const a = createSqliteStore({ path });
    a.createSession(session('s1'));
    let all: ReturnType<typeof events> = [];
    const commits: ReturnType<typeof events>[] = [];
    // Batches of 0-4 events; a batch of 0 is a mailbox-only commit (a row whose last seq repeats).
    let x = 7;
    for (let c = 0; c < 150; c++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      const size = x % 5;
      const batch = events('s1', all.length + 1, size, `turn-${c}`);
      a.commit('s1', size === 0 ? { mailbox: [mail(`m${c}`)] } : { events: batch });
      all.push(...batch);
      commits.push(batch);
    }
    const check = (store: ReturnType<typeof createSqliteStore>) => {
      const seqs = all.map((e) => e.seq);
      for (let after = 0; after <= (seqs.at(-1) ?? 0); after++) {
        const expected = all.filter((e) => e.seq > after);
        expect(store.readEvents('s1', after)).toEqual(expected);
        expect(store.readEvents('s1', after, 3)).toEqual(expected.slice(0, 3));
      }
      expect(store.readEvents('s1', (seqs.at(-1) ?? 0) + 10)).toEqual([]);
      expect(store.readEvents('unknown', 0)).toEqual([]);
    };
    check(a);
    // Another connection appends: the first store's cached head ends before its commits.
    const b = createSqliteStore({ path });
    const more = events('s1', all.length + 1, 4, 'turn-b');
    b.commit('s1', { events: more });
    all.push(...more);
    check(a);
    b.close();
    a.close();
    const reopened = createSqliteStore({ path });
    check(reopened);
    reopened.close();
    // A log with a gap in its commit numbers (not one this store writes): read as a scan would.
    const raw = new Database(path);
    const gap = commits.findIndex((c, i) => i > 70 && c.length > 0);
    raw.prepare('DELETE FROM log WHERE k = (SELECT sk FROM sessions WHERE id = ?) * 4294967296 + ?').run('s1', gap + 1);
    raw.close();
    const lost = new Set(commits[gap]!.map((e) => e.seq));
    all = all.filter((e) => !lost.has(e.seq));
    const gapped = createSqliteStore({ path });
    check(gapped);
    gapped.close();
  });

  it('hitl:approval:first-wins-across-connections — two stores on one file: the first answer wins, the second sees it', () => {
    const path = fresh();
    const a = createSqliteStore({ path });
    const b = createSqliteStore({ path });
    a.createSession(session('s1'));
    a.commit('s1', { events: events('s1', 1, 1), approvals: [approval('s1', 'ap1')] });
    const first = b.resolveApproval('ap1', resolution('approved', 'via-b', 'websocket'));
    expect(first?.changed).toBe(true);
    const second = a.resolveApproval('ap1', resolution('denied', 'via-a', 'aap'));
    expect(second?.changed).toBe(false);
    expect(second?.record.resolution).toMatchObject({ decision: 'approved', by: { userId: 'via-b' }, via: 'websocket' });
    // A stale pending copy committed by the other connection does not reopen it.
    a.commit('s1', { events: events('s1', 2, 1), approvals: [approval('s1', 'ap1')] });
    expect(b.getApproval('ap1')?.status).toBe('approved');
    a.close();
    b.close();
  });

  /** Runs the crash writer on `path` until it reports `until` commits, then SIGKILLs it. */
  async function writeUntilKilled(path: string, until: number): Promise<number> {
    const script = fileURLToPath(new URL('./fixtures/crash-writer.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script, path], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    let acknowledged = 0;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const line of lines) {
          const m = /^committed (\d+)$/.exec(line);
          if (m !== null) acknowledged = Number(m[1]);
        }
        if (acknowledged >= until && !child.killed) {
          // Unclean: no close(), no checkpoint; the kill lands between or inside transactions.
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', () => reject(new Error(`writer exited before it was killed: ${stderr}`)));
    });
    expect(await exited).toBe('SIGKILL');
    return acknowledged;
  }

  it('store:sqlite:crash — after SIGKILL mid-stream (three times over), reopening finds every returned commit and no partial one', async () => {
    const path = fresh();
    let acknowledged = 0;
    for (const until of [150, 400, 700]) {
      acknowledged = await writeUntilKilled(path, until);
      // The WAL was never checkpointed away by a clean close.
      expect(existsSync(`${path}-wal`)).toBe(true);
    }

    const store = createSqliteStore({ path });
    const last = store.lastSeq('crash');
    const steps = last / 5;
    expect(Number.isInteger(steps)).toBe(true);
    expect(steps).toBeGreaterThanOrEqual(acknowledged);
    const evs = store.readEvents('crash', 0);
    expect(evs.map((e) => e.seq)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(evs).toEqual(Array.from({ length: steps }, (_, i) => events('crash', i * 5 + 1, 5, `turn-${i + 1}`)).flat());
    const mailbox = store.readMailbox('crash');
    expect(mailbox.length).toBe(steps * 2);
    expect(mailbox.at(-1)).toEqual(mail(`step ${steps} b`));
    expect(store.loadSnapshot('crash')).toEqual(snapshot(steps));
    // And the log continues where it stopped.
    store.commit('crash', { events: events('crash', last + 1, 1) });
    expect(store.lastSeq('crash')).toBe(last + 1);
    store.close();
  }, 120_000);
});
