/**
 * The SQLite SessionStore (`turnstate/sqlite`): one file holds every session, its event log,
 * mailbox, execution log, approvals and latest snapshot. Opening an existing file restores
 * all of it; that is how a process restart resumes sessions. Every method returns
 * synchronously (better-sqlite3).
 *
 * Durability: WAL journal. With `synchronous: 'normal'` (the default) a returned commit
 * survives a crash of the process; a power loss or OS crash may lose the last commits (never
 * corrupts the file). `synchronous: 'full'` fsyncs the WAL on every commit: durable across
 * power loss, at the cost of one fsync per step.
 *
 * One process owns a file for writing; readers in other processes are safe (WAL).
 */
import type { Database as Db, Statement } from 'better-sqlite3';
import { TurnstateError } from '../errors.js';
import { timerMsProblem } from '../limits.js';
import { LOG_SPAN, openFailed, openSqliteFile } from './sqlite-schema.js';

export { migrateSqlite, SQLITE_SCHEMA_VERSION } from './sqlite-schema.js';
import type { ApprovalRecord, ExecutionRecord, MailboxEntry, PersistedSession, QueuedEntry, SessionEvent, SessionRecord, StepCommit } from '../types.js';
import {
  approvalConflict,
  checkAfterN,
  checkRead,
  checkRecord,
  checkResolution,
  checkStep,
  sessionExists,
  sessionNotFound,
  storeClosed,
  storeError,
} from './contract.js';
import type { SqliteSessionStore, SqliteStoreOptions } from './sqlite-types.js';
import { isConstraint, parseRow, parseRows, toApproval, writeFailed, type ApprovalRow } from './sqlite-rows.js';

export type { SqliteSessionStore, SqliteStoreInfo, SqliteStoreOptions } from './sqlite-types.js';

interface Head {
  /** The session's key in `log` (its sessions rowid). */
  sk: number;
  seq: number;
  ord: number;
  n: number;
  /** The commit number of the log row holding the session's snapshot (0: none). */
  snap: number;
}

const HEAD_CACHE_MAX = 10_000;

/** Opens (or creates) a SQLite store at `path` (kind 'sqlite'). */
export function createSqliteStore(options: SqliteStoreOptions): SqliteSessionStore {
  if (options === null || typeof options !== 'object' || typeof options.path !== 'string' || options.path === '') {
    throw storeError('store.invalid_argument', "createSqliteStore: options.path must be a file path or ':memory:'");
  }
  const sync = options.synchronous ?? 'normal';
  if (sync !== 'normal' && sync !== 'full') {
    throw storeError('store.invalid_argument', `createSqliteStore: synchronous must be 'normal' or 'full', got ${JSON.stringify(sync)}`);
  }
  // Checked before better-sqlite3 sees it (its error names its own "timeout" option).
  const busy = timerMsProblem('busyTimeoutMs', options.busyTimeoutMs, 0);
  if (busy !== undefined) throw storeError('store.invalid_argument', `createSqliteStore: ${busy}`);
  const readonly = options.readonly === true;
  // -0 passes as 0 (better-sqlite3 refuses -0 as "not a 32-bit signed integer").
  const db = openSqliteFile(Object.is(options.busyTimeoutMs, -0) ? { ...options, busyTimeoutMs: 0 } : options, readonly, sync);

  // Every statement is prepared here, while the store opens: a file whose schema lacks what they
  // read (a file that claims this version but is not a store of it) fails to open.
  const q = <R = unknown>(sql: string): Statement<unknown[], R> => {
    try {
      return db.prepare<unknown[], R>(sql);
    } catch (err) {
      db.close();
      throw openFailed(options.path, err);
    }
  };

  const insertSession = q('INSERT INTO sessions (id, tenant_id, created_at, body) VALUES (?, ?, ?, ?)');
  const createSessionIfNew = q('INSERT INTO sessions (id, tenant_id, created_at, body) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const selectSession = q<string>('SELECT body FROM sessions WHERE id = ?').pluck();
  const selectSessions = q<[string, string]>('SELECT id, body FROM sessions ORDER BY sk').raw();
  const selectSessionsByTenant = q<[string, string]>('SELECT id, body FROM sessions WHERE tenant_id = ? ORDER BY sk').raw();
  const selectSk = q<number>('SELECT sk FROM sessions WHERE id = ?').pluck();

  // A session's commits are the log rows keyed from sk * 2^32 + 1 to sk * 2^32 + 2^32 - 1; every
  // key is computed in SQL in 64-bit integers. better-sqlite3 binds a JS number as a REAL, and
  // `? * 2^32 + ?` in doubles loses the key's low bits once sk passes 2^21 (k past 2^53): each
  // bound sk and commit number is CAST to INTEGER first (exact: a double holds either exactly).
  const SK = 'CAST(@sk AS INTEGER)';
  const range = `k > ${SK} * ${LOG_SPAN} AND k < (${SK} + 1) * ${LOG_SPAN}`;
  // The session's rows, found by its id (one statement for reads: no sk lookup of their own).
  const fromSession = `FROM sessions s JOIN log l ON l.k > s.sk * ${LOG_SPAN} AND l.k < (s.sk + 1) * ${LOG_SPAN} WHERE s.id = @sid`;
  const deleteLog = q(`DELETE FROM log WHERE ${range}`);
  const deleteSession = q('DELETE FROM sessions WHERE id = ?');
  const deleteApprovals = q('DELETE FROM approvals WHERE session_id = ?');
  const deleteQueue = q('DELETE FROM queue WHERE sk = ?');
  const enqueue = q('INSERT INTO queue (sk, turn_id, pos, body) VALUES (?, ?, ?, ?) ON CONFLICT (sk, turn_id) DO UPDATE SET pos = excluded.pos, body = excluded.body');
  const dequeue = q('DELETE FROM queue WHERE sk = ? AND turn_id = ?');
  const selectQueue = q<[string, string]>('SELECT s.id, q.body FROM sessions s JOIN queue q ON q.sk = s.sk WHERE s.id = ? ORDER BY q.pos').raw();
  // The commit number of the row holding the session's snapshot (the latest rows first: it is near the end).
  const snapRow = q<number>(`SELECT k - ${SK} * ${LOG_SPAN} FROM log WHERE ${range} AND snapshot IS NOT NULL ORDER BY k DESC LIMIT 1`).pluck();
  const clearSnapshot = q(`UPDATE log SET snapshot = NULL WHERE k = CAST(? AS INTEGER) * ${LOG_SPAN} + CAST(? AS INTEGER)`);

  // Last seq, last mailbox ord and commit number of a session (a commit whose head is not cached).
  const head = q<[number, number, number]>(`SELECT last_seq, last_ord, k - ${SK} * ${LOG_SPAN} FROM log WHERE ${range} ORDER BY k DESC LIMIT 1`).raw();
  const insertLog = q(`INSERT INTO log (k, last_seq, last_ord, events, mailbox, executions, snapshot) VALUES (CAST(? AS INTEGER) * ${LOG_SPAN} + CAST(? AS INTEGER), ?, ?, ?, ?, ?, ?)`);
  // A resolution is final: a commit inserts an approval or updates a pending one of the same session.
  const upsertApproval = q(
    `INSERT INTO approvals (approval_id, session_id, status, body, resolution) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (approval_id) DO UPDATE SET status = excluded.status, body = excluded.body, resolution = excluded.resolution
     WHERE approvals.status = 'pending' AND approvals.session_id = excluded.session_id`,
  );
  const approvalOwner = q<string>('SELECT session_id FROM approvals WHERE approval_id = ?').pluck();

  // A session's commits that hold events, from commit number @from on.
  const selectEventsFrom = q<string>(`SELECT events FROM log WHERE k >= ${SK} * ${LOG_SPAN} + CAST(@from AS INTEGER) AND k < (${SK} + 1) * ${LOG_SPAN} AND events IS NOT NULL ORDER BY k`).pluck();
  // The last seq of commit number @n (a point lookup on the log's key).
  const seqOfCommit = q<number>(`SELECT last_seq FROM log WHERE k = ${SK} * ${LOG_SPAN} + CAST(@n AS INTEGER)`).pluck();
  const selectLastSeq = q<number>(`SELECT l.last_seq ${fromSession} ORDER BY l.k DESC LIMIT 1`).pluck();
  const selectMailbox = q<string>(`SELECT l.mailbox ${fromSession} AND l.mailbox IS NOT NULL ORDER BY l.k`).pluck();
  // The newest commits first, for an incremental read (it stops at the first row it already has).
  const selectMailboxBack = q<[number, string]>(`SELECT l.last_ord, l.mailbox ${fromSession} AND l.mailbox IS NOT NULL ORDER BY l.k DESC`).raw();
  const selectExecutions = q<string>(`SELECT l.executions ${fromSession} AND l.executions IS NOT NULL ORDER BY l.k`).pluck();
  // The latest snapshot: the last commit that carried one.
  const selectSnapshot = q<string>(`SELECT l.snapshot ${fromSession} AND l.snapshot IS NOT NULL ORDER BY l.k DESC LIMIT 1`).pluck();

  const approvalCols = 'SELECT approval_id, session_id, body, status, resolution FROM approvals';
  const selectApproval = q<ApprovalRow>(`${approvalCols} WHERE approval_id = ?`);
  const selectApprovalsAll = q<ApprovalRow>(`${approvalCols} ORDER BY rowid`);
  const selectApprovalsBySession = q<ApprovalRow>(`${approvalCols} WHERE session_id = ? ORDER BY rowid`);
  const selectApprovalsByStatus = q<ApprovalRow>(`${approvalCols} WHERE status = ? ORDER BY rowid`);
  const selectApprovalsBoth = q<ApprovalRow>(`${approvalCols} WHERE session_id = ? AND status = ? ORDER BY rowid`);
  const resolvePending = q(`UPDATE approvals SET status = ?, resolution = ? WHERE approval_id = ? AND status = 'pending'`);

  /**
   * Where each session's log ends (its key, last seq, last mailbox ord, commit number), as this
   * store last wrote it: a commit then needs no read. Another connection appending to the same
   * session makes the insert of commit n collide on the log's key; the entry is dropped and the
   * commit reports a conflict. Bounded: cleared when it grows past HEAD_CACHE_MAX sessions.
   */
  const heads = new Map<string, Head>();
  const headOf = (sessionId: string, step: StepCommit): Head => {
    const rec = step.session;
    if (rec !== undefined && rec.id === sessionId) {
      // A commit that carries its session's record creates the session (a new session's first
      // commit under group commit): its log is empty. An existing session ignores the record.
      checkRecord(rec);
      const r = createSessionIfNew.run(rec.id, rec.tenantId ?? null, rec.createdAt, JSON.stringify(rec));
      if (r.changes === 1) return { sk: Number(r.lastInsertRowid), seq: 0, ord: 0, n: 0, snap: 0 };
    }
    const sk = selectSk.get(sessionId);
    if (sk === undefined) throw sessionNotFound(sessionId);
    const last = head.get({ sk });
    if (last === undefined) return { sk, seq: 0, ord: 0, n: 0, snap: 0 };
    return { sk, seq: last[0], ord: last[1], n: last[2], snap: snapRow.get({ sk }) ?? 0 };
  };
  /**
   * The first commit number of a session whose events reach past `afterSeq`: a binary search
   * over point lookups (seqs grow with commit numbers, and a session's commits are numbered 1..n
   * without gaps), so a subscriber resuming near the end of a long session reads what it
   * replays, not the whole log. Past the commits this store knows of: n + 1 (rows another
   * connection appended are read from there on).
   */
  const firstCommitAfter = (sk: number, n: number, afterSeq: number): number => {
    let lo = 1;
    let hi = n;
    let found = n + 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const seq = seqOfCommit.get({ sk, n: mid });
      // A gap (a file this store cannot vouch for): read from the first commit, as a scan would.
      if (seq === undefined) return 1;
      if (seq > afterSeq) {
        found = mid;
        hi = mid - 1;
      } else lo = mid + 1;
    }
    return found;
  };

  const commitTx = db.transaction((sessionId: string, step: StepCommit): Head => {
    const h = heads.get(sessionId) ?? headOf(sessionId, step);
    const lastSeq = h.seq;
    checkStep(sessionId, step, lastSeq);
    const events = step.events;
    const mailbox = step.mailbox;
    const executions = step.executions;
    const hasEvents = events !== undefined && events.length > 0;
    const hasMailbox = mailbox !== undefined && mailbox.length > 0;
    const hasExecutions = executions !== undefined && executions.length > 0;
    const snapshot = step.snapshot === undefined ? null : JSON.stringify(step.snapshot);
    const next: Head = {
      sk: h.sk,
      seq: hasEvents ? (events[events.length - 1] as SessionEvent).seq : lastSeq,
      ord: h.ord + (hasMailbox ? mailbox.length : 0),
      n: h.n,
      snap: h.snap,
    };
    if (hasEvents || hasMailbox || hasExecutions || snapshot !== null) {
      next.n = h.n + 1;
      if (next.n >= LOG_SPAN) throw storeError('store.write_failed', `session ${sessionId}: more than ${LOG_SPAN - 1} commits`, { sessionId });
      insertLog.run(
        h.sk,
        next.n,
        next.seq,
        next.ord,
        hasEvents ? JSON.stringify(events) : null,
        hasMailbox ? JSON.stringify(mailbox) : null,
        hasExecutions ? JSON.stringify(executions) : null,
        snapshot,
      );
      if (snapshot !== null) {
        // One snapshot per session: the row that held the last one gives it up.
        if (h.snap > 0) clearSnapshot.run(h.sk, h.snap);
        next.snap = next.n;
      }
    }
    const queued = step.enqueue;
    if (queued !== undefined) {
      for (let i = 0; i < queued.length; i++) {
        const e = queued[i] as QueuedEntry;
        enqueue.run(h.sk, e.turnId, e.pos, JSON.stringify(e));
      }
    }
    const started = step.dequeue;
    if (started !== undefined) for (let i = 0; i < started.length; i++) dequeue.run(h.sk, started[i]);
    const approvals = step.approvals;
    if (approvals !== undefined) {
      for (let i = 0; i < approvals.length; i++) {
        const a = approvals[i] as ApprovalRecord;
        const resolution = a.resolution === undefined ? null : JSON.stringify(a.resolution);
        const r = upsertApproval.run(a.approvalId, sessionId, a.status, JSON.stringify(a), resolution);
        if (r.changes === 0) {
          const owner = approvalOwner.get(a.approvalId) as string;
          if (owner !== sessionId) throw approvalConflict(a.approvalId, owner, sessionId);
        }
      }
    }
    return next;
  });

  const deleteTx = db.transaction((id: string) => {
    const sk = selectSk.get(id);
    if (sk !== undefined) {
      deleteLog.run({ sk });
      deleteQueue.run(sk);
    }
    deleteSession.run(id);
    deleteApprovals.run(id);
  });

  const resolveTx = db.transaction((approvalId: string, decision: string, resolution: string) => {
    const r = resolvePending.run(decision, resolution, approvalId);
    const row = selectApproval.get(approvalId);
    if (row === undefined) return undefined;
    return { changed: r.changes === 1, record: toApproval(row) };
  });

  let closed = false;
  const open = (): void => {
    if (closed) throw storeClosed('sqlite');
  };
  const writable = (what: string): void => {
    open();
    if (readonly) throw storeError('store.read_only', `${what} refused: the SQLite store ${options.path} was opened read-only`, { path: options.path });
  };

  return {
    kind: 'sqlite',
    // Each commit is a transaction: the runtime merges the steps of one event-loop turn.
    groupCommit: true,

    createSession(record) {
      writable('createSession');
      checkRecord(record);
      try {
        insertSession.run(record.id, record.tenantId ?? null, record.createdAt, JSON.stringify(record));
      } catch (err) {
        if (isConstraint(err)) throw sessionExists(record.id);
        throw writeFailed(`create session ${record.id}`, err, 'nothing was written');
      }
    },

    getSession(id) {
      open();
      const body = selectSession.get(id);
      return body === undefined ? undefined : parseRow<SessionRecord>(body, id, 'session record');
    },

    listSessions(filter) {
      open();
      const tenantId = filter?.tenantId;
      const bodies = tenantId === undefined ? selectSessions.all() : selectSessionsByTenant.all(tenantId);
      return parseRows<SessionRecord>(bodies, 'session record');
    },

    deleteSession(id) {
      writable('deleteSession');
      heads.delete(id);
      try {
        deleteTx.immediate(id);
      } catch (err) {
        throw writeFailed(`delete session ${id}`, err, 'nothing was deleted');
      }
    },

    commit(sessionId, step) {
      writable('commit');
      try {
        const h = commitTx.immediate(sessionId, step);
        if (heads.size >= HEAD_CACHE_MAX && !heads.has(sessionId)) heads.clear();
        heads.set(sessionId, h);
      } catch (err) {
        heads.delete(sessionId);
        if (err instanceof TurnstateError) throw err;
        if (isConstraint(err)) {
          throw storeError('store.seq_conflict', `session ${sessionId}: the commit collides with stored records; nothing of it was written`, {
            sessionId,
          });
        }
        throw writeFailed(`write a commit of session ${sessionId}`, err, 'nothing of that commit was written');
      }
    },

    readEvents(sessionId, afterSeq, limit) {
      open();
      const max = checkRead(afterSeq, limit);
      const out: SessionEvent[] = [];
      if (max === 0) return out;
      // Where the session's log stands: cached by this store's last commit, or read (its commit
      // count only when a search needs it).
      const h = heads.get(sessionId);
      const sk = h?.sk ?? selectSk.get(sessionId);
      if (sk === undefined) return out;
      const from = afterSeq <= 0 ? 1 : firstCommitAfter(sk, h?.n ?? head.get({ sk })?.[2] ?? 0, afterSeq);
      for (const body of selectEventsFrom.iterate({ sk, from }) as IterableIterator<string>) {
        const batch = parseRow<SessionEvent[]>(body, sessionId, 'event log');
        for (let i = 0; i < batch.length; i++) {
          const e = batch[i] as SessionEvent;
          if (e.seq <= afterSeq) continue;
          out.push(e);
          if (out.length >= max) return out;
        }
      }
      return out;
    },

    lastSeq(sessionId) {
      open();
      return selectLastSeq.get({ sid: sessionId }) ?? 0;
    },

    readMailbox(sessionId, afterN) {
      open();
      const after = checkAfterN(afterN);
      const out: MailboxEntry[] = [];
      if (after === 0) {
        for (const body of selectMailbox.all({ sid: sessionId })) {
          const batch = parseRow<MailboxEntry[]>(body as string, sessionId, 'mailbox');
          for (let i = 0; i < batch.length; i++) out.push(batch[i] as MailboxEntry);
        }
        return out;
      }
      // Nothing new since this store's last commit to the session: no read.
      const h = heads.get(sessionId);
      if (h !== undefined && h.ord <= after) return out;
      // From the newest commit back to the first one holding entry afterN + 1: the cost is what
      // is new, not the length of the conversation.
      const batches: MailboxEntry[][] = [];
      const skips: number[] = [];
      for (const [lastOrd, body] of selectMailboxBack.iterate({ sid: sessionId }) as IterableIterator<[number, string]>) {
        if (lastOrd <= after) break;
        const batch = parseRow<MailboxEntry[]>(body, sessionId, 'mailbox');
        const first = lastOrd - batch.length + 1;
        batches.push(batch);
        skips.push(first > after ? 0 : after - first + 1);
        if (first <= after + 1) break;
      }
      for (let b = batches.length - 1; b >= 0; b--) {
        const batch = batches[b] as MailboxEntry[];
        for (let i = skips[b] as number; i < batch.length; i++) out.push(batch[i] as MailboxEntry);
      }
      return out;
    },

    readQueue(sessionId) {
      open();
      return parseRows<QueuedEntry>(selectQueue.all(sessionId), 'queued message');
    },

    readExecutions(sessionId) {
      open();
      const out: ExecutionRecord[] = [];
      for (const body of selectExecutions.all({ sid: sessionId })) {
        const batch = parseRow<ExecutionRecord[]>(body as string, sessionId, 'execution log');
        for (let i = 0; i < batch.length; i++) out.push(batch[i] as ExecutionRecord);
      }
      return out;
    },

    loadSnapshot(sessionId) {
      open();
      const body = selectSnapshot.get({ sid: sessionId });
      return body === undefined ? undefined : parseRow<PersistedSession>(body, sessionId, 'snapshot');
    },

    getApproval(approvalId) {
      open();
      const row = selectApproval.get(approvalId);
      return row === undefined ? undefined : toApproval(row);
    },

    listApprovals(filter) {
      open();
      const { sessionId, status } = filter;
      const rows =
        sessionId !== undefined
          ? status !== undefined
            ? selectApprovalsBoth.all(sessionId, status)
            : selectApprovalsBySession.all(sessionId)
          : status !== undefined
            ? selectApprovalsByStatus.all(status)
            : selectApprovalsAll.all();
      return rows.map(toApproval);
    },

    resolveApproval(approvalId, resolution) {
      writable('resolveApproval');
      checkResolution(approvalId, resolution);
      try {
        return resolveTx.immediate(approvalId, resolution.decision, JSON.stringify(resolution));
      } catch (err) {
        if (err instanceof TurnstateError) throw err;
        throw writeFailed(`record the answer to approval ${approvalId}`, err, 'the approval is as it was');
      }
    },

    close() {
      if (closed) return;
      closed = true;
      db.close();
    },

    info() {
      open();
      const level = db.pragma('synchronous', { simple: true }) as number;
      return {
        path: options.path,
        journalMode: db.pragma('journal_mode', { simple: true }) as string,
        synchronous: level >= 2 ? 'full' : 'normal',
        lockingMode: db.pragma('locking_mode', { simple: true }) as string,
        readonly,
        schemaVersion: db.pragma('user_version', { simple: true }) as number,
      };
    },
  };
}
