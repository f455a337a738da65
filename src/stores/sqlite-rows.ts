/**
 * The SQLite store's rows read back, and its writes that failed, as the runtime's errors: a row
 * that is not the JSON the store wrote (a damaged page) is `session.unrestorable` naming the
 * session and what could not be read, never a bare SyntaxError (**store:sqlite:unreadable-row**);
 * a write the database refused (a full disk, a lock held past `busyTimeoutMs`, an I/O error) is
 * `store.write_failed` naming the store, what was being written and SQLite's cause
 * (**store:sqlite:write-failed**).
 */
import { TurnstateError } from '../errors.js';
import type { ApprovalRecord } from '../types.js';

export interface ApprovalRow {
  approval_id: string;
  session_id: string;
  body: string;
  status: ApprovalRecord['status'];
  resolution: string | null;
}

/** A stored JSON value; `what` names it for the error ("event log", "snapshot", ...). */
export function parseRow<T>(body: string, sessionId: string, what: string): T {
  try {
    return JSON.parse(body) as T;
  } catch (err) {
    throw new TurnstateError(
      'session.unrestorable',
      `session ${sessionId} cannot be restored from the store: its stored ${what} cannot be read (${err instanceof Error ? err.message : String(err)}); the store's file is damaged there`,
      { cause: err, details: { sessionId, record: what, store: 'sqlite' } },
    );
  }
}

/** Each of `rows` ([session id, body]) parsed. */
export function parseRows<T>(rows: [string, string][], what: string): T[] {
  const out = new Array<T>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [id, body] = rows[i] as [string, string];
    out[i] = parseRow<T>(body, id, what);
  }
  return out;
}

export function toApproval(row: ApprovalRow): ApprovalRecord {
  const what = `approval ${row.approval_id}`;
  const record = parseRow<ApprovalRecord>(row.body, row.session_id, what);
  record.status = row.status;
  if (row.resolution !== null) record.resolution = parseRow<ApprovalRecord['resolution']>(row.resolution, row.session_id, `${what} (its answer)`);
  return record;
}

export function isConstraint(err: unknown): boolean {
  return typeof (err as { code?: unknown } | null)?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_CONSTRAINT');
}

/**
 * A write the database refused, rolled back: `what` says what could not be written, `unwritten`
 * what that left as it was (true of this write only: a caller that wrote before says what landed).
 */
export function writeFailed(what: string, err: unknown, unwritten: string): TurnstateError {
  const reason = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const cause = typeof code === 'string' ? `${reason} (${code})` : reason;
  return new TurnstateError('store.write_failed', `the SQLite store could not ${what}: ${cause}; ${unwritten}`, {
    cause: err,
    details: { store: 'sqlite', cause },
  });
}
