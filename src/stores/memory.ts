/**
 * The in-memory SessionStore: the reference implementation of the store port and the store
 * of tests and single-process embedding. Every method returns synchronously.
 *
 * Objects handed to `commit` are retained by reference (no copies of history per step), and
 * the objects returned by reads are the stored ones: callers treat both as immutable.
 */
import type {
  ApprovalRecord,
  ExecutionRecord,
  MailboxEntry,
  PersistedSession,
  QueuedEntry,
  SessionEvent,
  SessionRecord,
} from '../types.js';
import {
  approvalConflict,
  byPos,
  checkAfterN,
  checkRead,
  checkRecord,
  checkResolution,
  checkStep,
  sessionExists,
  sessionNotFound,
  storeClosed,
  type SyncSessionStore,
} from './contract.js';

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
      // A commit that carries its session's record creates the session, once all of it is valid:
      // a rejected commit creates nothing.
      const created = s === undefined && step.session !== undefined && step.session.id === sessionId ? step.session : undefined;
      if (s === undefined && created === undefined) throw sessionNotFound(sessionId);
      if (created !== undefined) checkRecord(created);
      checkStep(sessionId, step, s === undefined ? 0 : s.events.length);
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
      if (s === undefined) {
        s = { record: created as SessionRecord, events: [], mailbox: [], executions: [], snapshot: undefined, queue: undefined, approvalIds: undefined };
        sessions.set(sessionId, s);
      }
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
