/**
 * The in-memory SessionStore: the reference implementation of the store port and the store
 * of tests and single-process embedding. Every method returns synchronously.
 *
 * Objects handed to `commit` are retained by reference (no copies of history per step), and
 * the objects returned by reads are the stored ones: callers treat both as immutable.
 */
import { TurnstateError } from '../errors.js';
import type {
  ApprovalRecord,
  ApprovalResolution,
  ExecutionRecord,
  MailboxEntry,
  SessionEvent,
} from '../types.js';
import type { PersistedSession, QueuedEntry, SessionRecord, StepCommit } from '../machines/ports.js';
import type { SyncSessionStore } from './index.js';

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
              ? `has pos ${JSON.stringify(q.pos)} (an integer is required)`
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

function mismatch(sessionId: string, what: string, index: number, got: unknown): TurnstateError {
  return storeError(
    'store.session_mismatch',
    `commit to session ${sessionId}: ${what} ${index} names session ${JSON.stringify(got)}; nothing of this commit was written`,
    { sessionId, got, index },
  );
}

/** Validates readMailbox's `afterN`; returns it as a whole count (0 when absent). */
export function checkAfterN(afterN: number | undefined): number {
  if (afterN === undefined) return 0;
  if (typeof afterN !== 'number' || Number.isNaN(afterN) || afterN < 0) {
    throw storeError('store.invalid_argument', `readMailbox: afterN must be a non-negative number, got ${JSON.stringify(afterN)}`);
  }
  return Math.floor(afterN);
}

/** Orders queued messages as a store returns them. */
export function byPos(a: QueuedEntry, b: QueuedEntry): number {
  return a.pos - b.pos;
}

/** Validates readEvents arguments; returns the limit as a count (Infinity when absent). */
export function checkRead(afterSeq: number, limit: number | undefined): number {
  if (typeof afterSeq !== 'number' || Number.isNaN(afterSeq)) {
    throw storeError('store.invalid_argument', `readEvents: afterSeq must be a number, got ${JSON.stringify(afterSeq)}`);
  }
  if (limit === undefined) return Infinity;
  if (typeof limit !== 'number' || Number.isNaN(limit) || limit < 0) {
    throw storeError('store.invalid_argument', `readEvents: limit must be a non-negative number, got ${JSON.stringify(limit)}`);
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

interface SessionData {
  record: SessionRecord;
  /** events[i].seq === i + 1 (enforced by checkStep). */
  events: SessionEvent[];
  mailbox: MailboxEntry[];
  executions: ExecutionRecord[];
  snapshot: PersistedSession | undefined;
  /** Queued messages by turn id; created with the session's first one. */
  queue: Map<string, QueuedEntry> | undefined;
  /** Created with the session's first approval (most sessions have none). */
  approvalIds: Set<string> | undefined;
}

/** Creates an empty in-memory store (kind 'memory'); nothing survives the process. */
export function createMemoryStore(): SyncSessionStore {
  let sessions = new Map<string, SessionData>();
  /** Approvals by id, in first-insertion order. */
  let approvals = new Map<string, ApprovalRecord>();
  let closed = false;

  const open = (): void => {
    if (closed) throw storeClosed('memory');
  };

  return {
    kind: 'memory',

    createSession(record) {
      open();
      checkRecord(record);
      if (sessions.has(record.id)) throw sessionExists(record.id);
      sessions.set(record.id, {
        record,
        events: [],
        mailbox: [],
        executions: [],
        snapshot: undefined,
        queue: undefined,
        approvalIds: undefined,
      });
    },

    getSession(id) {
      open();
      return sessions.get(id)?.record;
    },

    listSessions(filter) {
      open();
      const tenantId = filter?.tenantId;
      const out: SessionRecord[] = [];
      for (const s of sessions.values()) {
        if (tenantId === undefined || s.record.tenantId === tenantId) out.push(s.record);
      }
      return out;
    },

    deleteSession(id) {
      open();
      const s = sessions.get(id);
      if (s === undefined) return;
      if (s.approvalIds) for (const approvalId of s.approvalIds) approvals.delete(approvalId);
      sessions.delete(id);
    },

    commit(sessionId, step) {
      open();
      let s = sessions.get(sessionId);
      if (s === undefined && step.session !== undefined && step.session.id === sessionId) {
        checkRecord(step.session);
        checkStep(sessionId, step, 0);
        s = { record: step.session, events: [], mailbox: [], executions: [], snapshot: undefined, queue: undefined, approvalIds: undefined };
        sessions.set(sessionId, s);
      }
      if (s === undefined) throw sessionNotFound(sessionId);
      checkStep(sessionId, step, s.events.length);
      const stepApprovals = step.approvals;
      if (stepApprovals !== undefined) {
        for (let i = 0; i < stepApprovals.length; i++) {
          const a = stepApprovals[i] as ApprovalRecord;
          const existing = approvals.get(a.approvalId);
          if (existing !== undefined && existing.sessionId !== sessionId) {
            throw approvalConflict(a.approvalId, existing.sessionId, sessionId);
          }
        }
      }
      // Validated: from here on nothing throws.
      if (step.events !== undefined) pushAll(s.events, step.events);
      if (step.mailbox !== undefined) pushAll(s.mailbox, step.mailbox);
      if (step.executions !== undefined) pushAll(s.executions, step.executions);
      if (stepApprovals !== undefined) {
        for (let i = 0; i < stepApprovals.length; i++) {
          const a = stepApprovals[i] as ApprovalRecord;
          const existing = approvals.get(a.approvalId);
          // A resolution is final: a commit inserts or updates a pending record only.
          if (existing === undefined || existing.status === 'pending') {
            approvals.set(a.approvalId, a);
            (s.approvalIds ??= new Set()).add(a.approvalId);
          }
        }
      }
      if (step.snapshot !== undefined) s.snapshot = step.snapshot;
      const enqueue = step.enqueue;
      if (enqueue !== undefined) for (let i = 0; i < enqueue.length; i++) (s.queue ??= new Map()).set((enqueue[i] as QueuedEntry).turnId, enqueue[i] as QueuedEntry);
      const dequeue = step.dequeue;
      if (dequeue !== undefined && s.queue !== undefined) for (let i = 0; i < dequeue.length; i++) s.queue.delete(dequeue[i] as string);
    },

    readEvents(sessionId, afterSeq, limit) {
      open();
      const max = checkRead(afterSeq, limit);
      const s = sessions.get(sessionId);
      if (s === undefined) return [];
      const events = s.events;
      // seq n lives at index n - 1: the first event after afterSeq is at floor(afterSeq).
      const start = afterSeq <= 0 ? 0 : Math.min(Math.floor(afterSeq), events.length);
      const end = max === Infinity ? events.length : Math.min(events.length, start + max);
      return events.slice(start, end);
    },

    lastSeq(sessionId) {
      open();
      return sessions.get(sessionId)?.events.length ?? 0;
    },

    readMailbox(sessionId, afterN) {
      open();
      const after = checkAfterN(afterN);
      const s = sessions.get(sessionId);
      return s === undefined ? [] : s.mailbox.slice(after);
    },

    readQueue(sessionId) {
      open();
      const q = sessions.get(sessionId)?.queue;
      return q === undefined ? [] : [...q.values()].sort(byPos);
    },

    readExecutions(sessionId) {
      open();
      const s = sessions.get(sessionId);
      return s === undefined ? [] : s.executions.slice();
    },

    loadSnapshot(sessionId) {
      open();
      return sessions.get(sessionId)?.snapshot;
    },

    getApproval(approvalId) {
      open();
      return approvals.get(approvalId);
    },

    listApprovals(filter) {
      open();
      const { sessionId, status } = filter;
      const out: ApprovalRecord[] = [];
      if (sessionId !== undefined) {
        const s = sessions.get(sessionId);
        if (s === undefined || s.approvalIds === undefined) return out;
        for (const id of s.approvalIds) {
          const a = approvals.get(id);
          if (a !== undefined && (status === undefined || a.status === status)) out.push(a);
        }
        // approvalIds keeps first-insertion order per session, as the global map does.
        return out;
      }
      for (const a of approvals.values()) {
        if (status === undefined || a.status === status) out.push(a);
      }
      return out;
    },

    resolveApproval(approvalId, resolution) {
      open();
      checkResolution(approvalId, resolution);
      const existing = approvals.get(approvalId);
      if (existing === undefined) return undefined;
      if (existing.status !== 'pending') return { changed: false, record: existing };
      const record: ApprovalRecord = { ...existing, status: resolution.decision, resolution };
      approvals.set(approvalId, record);
      return { changed: true, record };
    },

    close() {
      if (closed) return;
      closed = true;
      sessions = new Map();
      approvals = new Map();
    },
  };
}

function pushAll<T>(into: T[], items: readonly T[]): void {
  for (let i = 0; i < items.length; i++) into.push(items[i] as T);
}
