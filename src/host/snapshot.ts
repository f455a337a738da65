/**
 * What a session looks like from outside right now (`SessionHandle.snapshot()`): its turn state,
 * the acting actor, the last seq, pending approvals and client calls, and queued messages.
 */
import type { SessionSnapshot } from '../api.js';
import type { ApprovalRecord } from '../types.js';
import type { HostCore } from './core.js';
import type { MessageQueue } from './queue.js';

/**
 * `queue`: the host's queue of messages waiting behind the running turn (restored from the store,
 * `readQueue`, when a passivated or restarted session wakes): their count and, in order, each
 * one's turnId and text.
 */
export async function sessionSnapshot(core: HostCore, queue: MessageQueue): Promise<SessionSnapshot> {
  const t = core.turn;
  const pendingApprovals = t ? ((await core.deps.store.listApprovals({ sessionId: core.id, status: 'pending' })) as ApprovalRecord[]) : [];
  const snap: SessionSnapshot = {
    id: core.id,
    actor: core.record.actor,
    state: core.machine.state(),
    lastSeq: core.journal.seq,
    pendingApprovals,
    pendingClientCalls: t ? [...t.pending.values()].filter((p) => p.kind === 'client').map((p) => ({ callId: p.callId, tool: p.tool, args: p.args })) : [],
    queued: queue.length,
    queuedMessages: queue.waiting(),
  };
  if (core.record.tenantId !== undefined) snap.tenantId = core.record.tenantId;
  if (t) snap.turnId = t.turnId;
  const acting = core.machine.context().actor;
  if (t && acting) snap.actingActor = acting;
  const held = t ? core.machine.held() : undefined;
  if (held !== undefined) snap.held = held;
  return snap;
}
