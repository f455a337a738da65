/**
 * Settlement: what a turn ending in `state` publishes, and the outcome its sender receives.
 *
 * Contract:
 * - A state that emits an envelope gets one: its parts and the turn's data-bearing records
 *   (envelope/assemble.ts), plus an llm-context part when the envelope bears data and the sender
 *   consumes one (produced once, by the context model, within limits.llmContextTimeoutMs; a
 *   failed, timed-out or stopped translation leaves it out and never fails the turn).
 * - The turn's approvals were all answered before it could settle: the envelope's approval-request
 *   parts carry their resolutions (the store's records), and so do the outcome's parts of a turn
 *   that settles without an envelope (what `delivery.buffered(outcome)` gives buffered channels).
 *   The parts as published when asked are not changed.
 * - The actor's own llm-context part reaches the envelope only when an originator consumes it.
 * - A failed turn (the machine's settle effect says `failed`: it ends in `error`) always carries
 *   a user-facing `error` part, and `turn.settled` a stop of `error` when an error is known.
 * - `turn.settled` is the last event of the turn; its usage is the sum of the turn's `model.usage`.
 */
import type { TurnOutcome } from '../api.js';
import { assembleEnvelope, collectData, recordAnswer, withResolution } from '../envelope/assemble.js';
import { consumesPart } from '../envelope/consumers.js';
import { compatSettledFields } from './compat-turn.js';
import type { ApprovalRecord, Envelope, Part, SessionEvent } from '../types.js';
import type { SettleEffect } from '../machines/session.machine.js';
import type { HostCore } from './core.js';
import { addUsage, type ActiveTurn } from './turn.js';

const NO_APPROVALS: readonly ApprovalRecord[] = [];

export const GENERIC_ERROR_TEXT = 'Sorry, something went wrong and I could not finish this request.';

/** The events that settle `t` as the machine's settle effect says, and the outcome to hand its sender once they are durable. */
export async function settlement(core: HostCore, t: ActiveTurn, fx: SettleEffect): Promise<{ events: SessionEvent[]; outcome: TurnOutcome }> {
  const { state, emitsEnvelope } = fx;
  const failed = fx.failed === true;
  const { journal, deps } = core;
  const actor = core.machine.actingActor();
  const events: SessionEvent[] = [];
  let envelope: Envelope | undefined;
  // The turn's approvals were all answered before it could settle: their records carry the decisions.
  const approvals = t.parts.some((p) => p.metadata.partType === 'approval-request') ? await approvalsOf(core, t.parts) : NO_APPROVALS;
  if (emitsEnvelope) {
    const mailbox = await journal.mailbox();
    let llmContext: Part | undefined;
    const consumesLlmContext = consumesPart(t.opts, 'llm-context');
    // Only a data-bearing envelope gets one (spec 001: a conversational turn's peer receives the
    // response part only); the call is cut by close, deletion and limits.llmContextTimeoutMs.
    const produce = consumesLlmContext && !t.parts.some((p) => p.metadata.partType === 'llm-context') ? deps.produceLlmContext : undefined;
    const data = produce === undefined ? undefined : collectData(mailbox, t.turnId).map((d) => d.data);
    if (produce !== undefined && data !== undefined && (data.length > 0 || t.parts.some((p) => p.metadata.partType === 'domain-data'))) {
      const abort = core.modelAbort();
      t.abort = abort;
      const timer = setTimeout(() => abort.abort(), deps.limits.llmContextTimeoutMs);
      try {
        const r = await produce(deps.contextModel, { sessionId: core.id, turnId: t.turnId, actor, parts: t.parts, data, signal: abort.signal });
        llmContext = r.part;
        t.usage = addUsage(t.usage, r.usage);
        t.parts.push(llmContext);
        // The translation is a model call of the turn: turn.settled.usage stays the sum of model.usage.
        events.push(journal.modelUsage(t.turnId, actor, r.usage));
        events.push(journal.partReceived(t.turnId, `${t.turnId}:llm-context`, 0, llmContext, state, actor));
      } catch {
        // llm-context is an enrichment: a failed translation leaves it out, never fails the turn.
      } finally {
        clearTimeout(timer);
        t.abort = null;
      }
    }
    envelope = assembleEnvelope({
      partTypes: deps.registries.partTypes,
      approvals,
      consumesLlmContext,
      parts: llmContext ? t.parts.slice(0, -1) : t.parts,
      mailbox,
      sessionId: core.id,
      turnId: t.turnId,
      producedAt: deps.clock.iso(),
      finalizedBy: state,
      ...(llmContext ? { llmContext } : {}),
    });
    events.push(journal.envelopeSettled(t.turnId, envelope));
  }
  const ctxErr = core.machine.context().error;
  const error = t.error ?? (failed && ctxErr ? ctxErr : undefined);
  if (failed && !t.parts.some((p) => p.metadata.partType === 'error')) {
    // A budget or internal failure: the user still gets an error part.
    const part: Part = { text: GENERIC_ERROR_TEXT, metadata: { partType: 'error', ...(error ? { code: error.code } : {}) } };
    t.parts.push(part);
    events.unshift(journal.partReceived(t.turnId, `${t.turnId}:runtime`, 0, part, 'error', actor));
  }
  const stop = t.stop ?? (failed && error ? 'error' : undefined);
  const compatFields = compatSettledFields(t, failed);
  events.push(
    stop || error || t.compat
      ? journal.event(t.turnId, { type: 'turn.settled', finalizedBy: state, usage: t.usage, ...(stop ? { stop } : {}), ...(error ? { error } : {}), ...compatFields })
      : journal.turnSettled(t.turnId, state, t.usage),
  );
  // Without an envelope the outcome's parts are what buffered channels get: its requests say what was decided.
  const parts = envelope === undefined && approvals.length > 0 ? t.parts.map((p) => withResolution(p, recordAnswer(p, approvals))) : t.parts;
  const outcome: TurnOutcome = { turnId: t.turnId, finalizedBy: state, parts, usage: t.usage };
  if (envelope) outcome.envelope = envelope;
  // Without an envelope, buffered delivery applies the envelope's llm-context rule itself and needs to know who consumes it.
  else if (consumesPart(t.opts, 'llm-context')) outcome.consumes = [...new Set([...(t.opts.consumes ?? []), 'llm-context'])];
  Object.assign(outcome, compatFields);
  if (stop) outcome.stop = stop;
  if (error) outcome.error = error;
  return { events, outcome };
}

/** The store's records of the approvals `parts` asked for (none read for a turn that asked none). */
async function approvalsOf(core: HostCore, parts: readonly Part[]): Promise<ApprovalRecord[]> {
  const approvals: ApprovalRecord[] = [];
  for (const p of parts) {
    const id = p.metadata.partType === 'approval-request' ? p.data?.approvalId : undefined;
    const record = typeof id === 'string' ? await core.deps.store.getApproval(id) : undefined;
    if (record) approvals.push(record);
  }
  return approvals;
}
