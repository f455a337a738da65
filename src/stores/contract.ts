/**
 * The store contract every SessionStore implementation enforces the same way: the error codes,
 * the argument and step checks (seq continuity, record shapes), and the synchronous store type.
 * Shared by the memory and SQLite stores so both refuse bad input with the same error.
 */
import { TurnstateError } from '../errors.js';
import type { SessionStore } from '../api.js';
import type { ApprovalRecord, ApprovalResolution, ExecutionRecord, QueuedEntry, SessionEvent, SessionRecord, StepCommit } from '../types.js';

/**
 * A SessionStore whose every method returns synchronously. The memory and SQLite stores are
 * synchronous; the runtime takes the fast path (no promise per step) when a store is.
 */
export type SyncSessionStore = {
  readonly [K in keyof SessionStore]: SessionStore[K] extends (...args: infer A) => infer R
    ? (...args: A) => Awaited<R>
    : SessionStore[K];
};

export type StoreErrorCode =
  | 'store.seq_conflict'
  | 'store.session_mismatch'
  | 'store.session_not_found'
  | 'store.session_exists'
  | 'store.approval_conflict'
  | 'store.invalid_argument'
  | 'store.closed'
  | 'store.write_failed'
  | 'store.open_failed'
  | 'store.schema_too_new'
  | 'store.schema_too_old'
  | 'store.read_only';

export function storeError(code: StoreErrorCode, message: string, details?: Record<string, unknown>): TurnstateError {
  return new TurnstateError(code, message, details === undefined ? undefined : { details });
}

/**
 * Checks a step against the session's last seq before anything of it is written; throws the
 * TurnstateError every store reports. Events must continue the log exactly: the first has
 * seq `lastSeq + 1`, each next one the seq after it. Events, executions and approvals must
 * name `sessionId`.
 */
export function checkStep(sessionId: string, step: StepCommit, lastSeq: number): void {
  const events = step.events;
  if (events !== undefined) {
    for (let i = 0; i < events.length; i++) {
      const e = events[i] as SessionEvent;
      const expected = lastSeq + i + 1;
      if (e.seq !== expected) {
        throw storeError(
          'store.seq_conflict',
          `session ${sessionId}: event ${i} of the commit has seq ${String(e.seq)}, expected ${expected} ` +
            `(events continue the log with no gap or duplicate); nothing of this commit was written`,
          { sessionId, expected, got: e.seq, index: i },
        );
      }
      if (e.sessionId !== sessionId) {
        throw mismatch(sessionId, 'event', i, e.sessionId);
      }
    }
  }
  const executions = step.executions;
  if (executions !== undefined) {
    for (let i = 0; i < executions.length; i++) {
      const x = executions[i] as ExecutionRecord;
      if (x.sessionId !== sessionId) throw mismatch(sessionId, 'execution', i, x.sessionId);
    }
  }
  const approvals = step.approvals;
  if (approvals !== undefined) {
    for (let i = 0; i < approvals.length; i++) {
      const a = approvals[i] as ApprovalRecord;
      if (a.sessionId !== sessionId) throw mismatch(sessionId, 'approval', i, a.sessionId);
      if (typeof a.approvalId !== 'string' || a.approvalId === '') {
        throw storeError('store.invalid_argument', `session ${sessionId}: approval ${i} of the commit has no approvalId`, {
          sessionId,
          index: i,
        });
      }
      if (a.status !== 'pending' && a.status !== 'approved' && a.status !== 'denied') {
        throw storeError(
          'store.invalid_argument',
          `approval ${a.approvalId}: status must be 'pending', 'approved' or 'denied', got ${JSON.stringify(a.status)}`,
          { approvalId: a.approvalId },
        );
      }
    }
  }
  if (step.enqueue !== undefined || step.dequeue !== undefined) checkQueue(sessionId, step);
}

/** Checks a step's queue changes (see StepCommit.enqueue / dequeue). */
function checkQueue(sessionId: string, step: StepCommit): void {
  const enqueue = step.enqueue;
  if (enqueue !== undefined) {
    for (let i = 0; i < enqueue.length; i++) {
      const q = enqueue[i] as QueuedEntry;
      const problem =
        q === null || typeof q !== 'object'
          ? 'is not an object'
          : typeof q.turnId !== 'string' || q.turnId === ''
            ? 'has no turnId'
            : !Number.isSafeInteger(q.pos)
              ? `has pos ${shown(q.pos)} (an integer is required)`
              : q.message === null || typeof q.message !== 'object' || typeof q.message.text !== 'string'
                ? 'has no message text'
                : undefined;
      if (problem !== undefined) {
        throw storeError('store.invalid_argument', `session ${sessionId}: queued message ${i} of the commit ${problem}; nothing of this commit was written`, {
          sessionId,
          index: i,
        });
      }
    }
  }
  const dequeue = step.dequeue;
  if (dequeue !== undefined) {
    for (let i = 0; i < dequeue.length; i++) {
      if (typeof dequeue[i] !== 'string') {
        throw storeError('store.invalid_argument', `session ${sessionId}: dequeue ${i} of the commit is not a turn id; nothing of this commit was written`, {
          sessionId,
          index: i,
        });
      }
    }
  }
}


/** Validates readMailbox's `afterN`; returns it as a whole count (0 when absent). */
export function checkAfterN(afterN: number | undefined): number {
  if (afterN === undefined) return 0;
  if (typeof afterN !== 'number' || Number.isNaN(afterN) || afterN < 0) {
    throw storeError('store.invalid_argument', `readMailbox: afterN must be a non-negative number, got ${shown(afterN)}`);
  }
  return Math.floor(afterN);
}

/** Orders queued messages as a store returns them. */
export function byPos(a: QueuedEntry, b: QueuedEntry): number {
  return a.pos - b.pos;
}

function mismatch(sessionId: string, what: string, index: number, got: unknown): TurnstateError {
  return storeError(
    'store.session_mismatch',
    `commit to session ${sessionId}: ${what} ${index} names session ${JSON.stringify(got)}; nothing of this commit was written`,
    { sessionId, got, index },
  );
}

/**
 * A refused value as an error message shows it: numbers as JavaScript prints them (NaN, Infinity,
 * which JSON would turn into null), other values as JSON, falling back to their type.
 */
function shown(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint' || value === undefined) return String(value);
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return typeof value;
  }
}

/** Validates readEvents arguments; returns the limit as a count (Infinity when absent). */
export function checkRead(afterSeq: number, limit: number | undefined): number {
  if (typeof afterSeq !== 'number' || Number.isNaN(afterSeq)) {
    throw storeError('store.invalid_argument', `readEvents: afterSeq must be a number, got ${shown(afterSeq)}`);
  }
  if (limit === undefined) return Infinity;
  if (typeof limit !== 'number' || Number.isNaN(limit) || limit < 0) {
    throw storeError('store.invalid_argument', `readEvents: limit must be a non-negative number, got ${shown(limit)}`);
  }
  return Math.floor(limit);
}

export function checkResolution(approvalId: string, resolution: ApprovalResolution): void {
  if (resolution === null || typeof resolution !== 'object') {
    throw storeError('store.invalid_argument', `resolveApproval ${approvalId}: resolution must be an object`);
  }
  if (resolution.decision !== 'approved' && resolution.decision !== 'denied') {
    throw storeError(
      'store.invalid_argument',
      `resolveApproval ${approvalId}: decision must be 'approved' or 'denied', got ${JSON.stringify(resolution.decision)}`,
      { approvalId },
    );
  }
}

export function checkRecord(record: SessionRecord): void {
  if (record === null || typeof record !== 'object' || typeof record.id !== 'string' || record.id === '') {
    throw storeError('store.invalid_argument', 'createSession: record.id must be a non-empty string');
  }
}

export function sessionExists(id: string): TurnstateError {
  return storeError('store.session_exists', `session ${id} already exists`, { sessionId: id });
}

export function sessionNotFound(id: string): TurnstateError {
  return storeError('store.session_not_found', `commit: no session ${id} (create it before committing to it)`, {
    sessionId: id,
  });
}

export function approvalConflict(approvalId: string, owner: string, sessionId: string): TurnstateError {
  return storeError(
    'store.approval_conflict',
    `approval ${approvalId} belongs to session ${owner}, not ${sessionId}; nothing of this commit was written`,
    { approvalId, owner, sessionId },
  );
}

export function storeClosed(kind: string): TurnstateError {
  return storeError('store.closed', `the ${kind} store is closed`);
}
