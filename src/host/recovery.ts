/**
 * Recovery: after a restart, a plan for an unfinished turn, computed from what the store holds
 * (the host state persisted with the last snapshot, the log, the mailbox, the approval records).
 * The facade feeds the plan to the machine as events; the machine decides what follows.
 *
 * At most once: a tool call whose `tool.called` was recorded without a result is never run again
 * (the model is told its outcome is unknown); a call never started is dispatched now; an approval
 * resolved in the store but never published is applied now.
 */
import type { ApprovalRecord, MailboxEntry, SessionEvent, ToolUseBlock } from '../types.js';
import { RESPOND_TOOL_NAME, type RespondResult } from '../respond/index.js';
import { parseRespondBlock } from '../respond/ordering.js';
import { applyResolution } from './approval-answers.js';
import { replayCompatTurn } from './compat-turn.js';
import { needsSurfaces, sessionOf, type HostCore } from './core.js';
import type { EffectLoop } from './effect-loop.js';
import { peerCallPrefix } from './injections.js';
import { requestedChange } from './model-call.js';
import { dispatchTools, STANDING_APPROVAL } from './tool-dispatch.js';
import { denialText, OutcomeBatch, unknownOutcomeText, type ToolOutcome } from './tool-results.js';
import type { TurnOutcome } from '../api.js';
import { ANSWERED, deferred, newTurn, type ActiveTurn, type HostState } from './turn.js';

export interface RecoveryPlan {
  /** A state change the log recorded after the last snapshot (the machine replays it silently). */
  replayChange?: string;
  /** Outcomes to record for calls that will never run (again). */
  outcomes: ToolOutcome[];
  /** Tool uses of the last response that never started: safe to dispatch now. */
  dispatch: { actor: string; uses: ToolUseBlock[] };
  /** Approvals resolved in the store whose resolution was never published. */
  resolve: ApprovalRecord[];
  /** A state-changing respond() whose response committed but whose parts and state did not. */
  change?: { actor: string; callId: string; result: Extract<RespondResult, { ok: true }> };
  /** respond() calls whose streamed `part.delta` events no part and no retraction followed (the stream was cut). */
  retract: string[];
}

/** The turn in flight as the last snapshot left it (its settlement promise is new). */
export function restoredTurn(h: NonNullable<HostState['turn']>): ActiveTurn {
  const t = newTurn(h.turnId, h.input, h.opts, deferred<TurnOutcome>());
  t.parts = h.parts;
  t.usage = h.usage;
  t.joined = h.joined ?? [];
  return t;
}

/** Feed an unfinished turn's recovery plan to the machine; the caller runs the effect loop after. */
export async function recoverTurn(core: HostCore, loop: EffectLoop, t: ActiveTurn, h: NonNullable<HostState['turn']>): Promise<void> {
  const { machine, journal, deps } = core;
  const plan = await planRecovery(core, t, h);
  if (plan.replayChange) {
    // The log already holds this change's announcement: replay it silently.
    for (const fx of machine.ask({ type: 'RESPOND', to: plan.replayChange })) {
      if (fx.type !== 'state.changed' && fx.type !== 'actor.passed') machine.effects.push(fx);
    }
  }
  if (plan.retract.length) {
    await journal.commit({ events: plan.retract.map((callId) => journal.event(t.turnId, { type: 'part.retracted', callId, reason: 'interrupted' })) });
  }
  if (plan.outcomes.length) {
    const batch = new OutcomeBatch(journal, deps.clock.iso());
    for (const o of plan.outcomes) batch.add(o);
    await journal.commit(batch.step());
  }
  const actorDef = deps.registries.actors.get(plan.dispatch.actor);
  if (plan.dispatch.uses.length && actorDef) {
    await dispatchTools(core, t, plan.dispatch.actor, plan.dispatch.uses, deps.catalog.forActor(actorDef, t.opts));
  }
  for (const appr of plan.resolve) await applyResolution(core, t, appr);
  if (plan.change && t.pending.size === 0) {
    loop.publishChange(t, plan.change.actor, plan.change);
    machine.send({ type: 'RESPOND', ...requestedChange(core, plan.change.result) });
  }
  if (machine.effects.length === 0) {
    // Every pending call answered while the process was down: the machine may resume the turn
    // (only the state calls hold it in answers ANSWERED). Otherwise every state where a turn can
    // rest answers RECOVER with its effect.
    if (t.pending.size === 0 && machine.can(ANSWERED)) machine.send(ANSWERED);
    else machine.send({ type: 'RECOVER', pending: t.pending.size });
  }
}

export async function planRecovery(core: HostCore, t: ActiveTurn, h: NonNullable<HostState['turn']>): Promise<RecoveryPlan> {
  const { deps, journal } = core;
  const mailbox = await journal.mailbox();
  const events = await deps.store.readEvents(core.id, 0);
  const called = new Set<string>();
  const resulted = new Set<string>();
  let lastChange: string | undefined;
  /** Calls with streamed deltas, and those whose deltas a part or a retraction followed. */
  const streamed = new Set<string>();
  const ended = new Set<string>();
  // Parts published after the last persisted snapshot belong to the turn too; a peer envelope's
  // parts (injections.ts) are the peer's, not the turn's.
  const known = new Set(t.parts.map((p) => JSON.stringify(p)));
  const peer = peerCallPrefix(t.turnId);
  for (const e of events) {
    if (e.turnId !== t.turnId) continue;
    if (e.type === 'tool.called') called.add(e.callId);
    else if (e.type === 'tool.result') resulted.add(e.callId);
    else if (e.type === 'turnState.changed') lastChange = e.to;
    else if (e.type === 'part.delta') streamed.add(e.callId);
    else if (e.type === 'part.retracted') ended.add(e.callId);
    else if (e.type === 'part.received') {
      ended.add(e.callId);
      if (e.callId.startsWith(peer)) continue;
      const key = JSON.stringify(e.part);
      if (!known.has(key)) {
        known.add(key);
        t.parts.push(e.part);
      }
    }
  }
  for (const m of mailbox) if (m.turnId === t.turnId && m.kind === 'tool_result') resulted.add(m.callId);

  const actor = core.machine.actingActor();
  replayCompatTurn(t, deps.registries.actors.get(actor), mailbox);
  const plan: RecoveryPlan = { outcomes: [], dispatch: { actor, uses: [] }, resolve: [], retract: [] };
  if (lastChange !== undefined && lastChange !== core.machine.state()) plan.replayChange = lastChange;

  const approvals = (await deps.store.listApprovals({ sessionId: core.id })).filter((a) => a.turnId === t.turnId);
  const resolvedInLog = new Set<string>();
  for (const e of events) if (e.type === 'approval.resolved') resolvedInLog.add(e.approvalId);
  const outcome = (c: { id: string; tool: string }, content: string): ToolOutcome => ({ turnId: t.turnId, actor, callId: c.id, tool: c.tool, content, isError: true });
  for (const m of mailbox) {
    if (m.turnId !== t.turnId || m.kind !== 'assistant') continue;
    for (const b of m.content) {
      if (b.type !== 'tool_use' || b.name === RESPOND_TOOL_NAME || resulted.has(b.id)) continue;
      const c = { id: b.id, tool: b.name, args: b.input };
      const appr = approvals.find((a) => a.callId === c.id);
      if (appr) {
        if (appr.status === 'pending') t.pending.set(c.id, { callId: c.id, tool: c.tool, args: c.args, kind: 'approval', approvalId: appr.approvalId });
        else if (resolvedInLog.has(appr.approvalId) || appr.resolution?.via === STANDING_APPROVAL) {
          // approval.resolved commits before an approved call runs, and a standing approval's record
          // with the call's tool.called: it may have run, so never again.
          const reason = appr.resolution?.reason;
          plan.outcomes.push(
            appr.status === 'denied'
              ? { ...outcome(c, denialText(reason)), denial: reason ? { reason } : {} }
              : outcome(c, unknownOutcomeText(c.tool)),
          );
        } else {
          t.pending.set(appr.callId, { callId: appr.callId, tool: appr.tool, args: appr.args, kind: 'approval', approvalId: appr.approvalId });
          plan.resolve.push(appr);
        }
        continue;
      }
      const client = h.pending.find((p) => p.callId === c.id && p.kind === 'client');
      if (client) t.pending.set(c.id, client);
      else if (called.has(c.id)) plan.outcomes.push(outcome(c, unknownOutcomeText(c.tool)));
      else plan.dispatch.uses.push({ type: 'tool_use', id: c.id, name: c.tool, input: c.args });
    }
  }
  const change = await unappliedChange(core, t, mailbox, events);
  if (change) plan.change = change;
  // A cut stream's deltas are void (events:delta:provisional), unless the change applied now publishes their parts.
  for (const callId of streamed) if (!ended.has(callId) && callId !== change?.callId) plan.retract.push(callId);
  return plan;
}

/** The last response's state-changing respond() call, committed but never applied. */
async function unappliedChange(core: HostCore, t: ActiveTurn, mailbox: readonly MailboxEntry[], events: readonly SessionEvent[]): Promise<RecoveryPlan['change']> {
  const last = mailbox.findLast((m) => m.turnId === t.turnId && m.kind === 'assistant');
  if (last?.kind !== 'assistant') return undefined;
  const def = core.deps.registries.actors.get(last.actor);
  if (!def) return undefined;
  for (const b of last.content) {
    if (b.type !== 'tool_use' || b.name !== RESPOND_TOOL_NAME) continue;
    const ack = mailbox.find((m) => m.kind === 'tool_result' && m.callId === b.id);
    if (!ack || (ack.kind === 'tool_result' && ack.isError)) continue;
    if (events.some((e) => e.type === 'part.received' && e.callId === b.id)) continue;
    // Its a2ui-surface parts are checked against the live surfaces, as when it arrived.
    if (needsSurfaces((b.input as { parts?: unknown } | null)?.parts)) await core.journal.liveSurfaces();
    const r = parseRespondBlock(core.deps.parser, b, def, sessionOf(core));
    // A call that keeps the actor working was applied as it arrived; only a change can be pending.
    if (r.ok && r.call.turnState !== core.machine.state()) return { actor: last.actor, callId: b.id, result: r };
  }
  return undefined;
}
