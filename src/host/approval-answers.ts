/**
 * Approval answers: the same path for every channel (API, AAP, WebSocket, a surface's button).
 *
 * Contract:
 * - The store's compare-and-set decides: the first answer wins; a later one changes nothing and
 *   says who answered first, how and when (`approval.already_resolved`).
 * - An answer that is not `{ approved: boolean, reason?: string }` (a reason of at most
 *   MAX_APPROVAL_REASON_CHARS), from a principal object via a named channel, is refused with
 *   `approval.invalid` naming the field, before anything is looked up (`checkAnswer`, at the
 *   session API's edges: a session handle and `runtime.answerApproval`).
 * - A principal the runtime's `canAnswerApproval` refuses gets `approval.forbidden`, pending or
 *   resolved (a resolved approval's record is not shown to it); an approval
 *   of another session is `approval.not_found` (never confirmed to exist).
 * - `approval.resolved` is durable before an approved call runs (so a restart never runs it
 *   twice); a denied call's result tells the model it was denied, with the reason.
 * - The turn resumes when its last answered call has its outcome recorded, whichever answer
 *   came last (an approved call may still be running when another call's denial arrives).
 */
import { TurnstateError } from '../errors.js';
import { MAX_APPROVAL_REASON_CHARS } from '../limits.js';
import type { AnswerResult, ApprovalRecord, Principal } from '../types.js';
import type { HostCore } from './core.js';
import { runTool } from './tool-dispatch.js';
import { denialText, outcomeStep } from './tool-results.js';
import type { ActiveTurn } from './turn.js';

/** Refuses an answer that is not what every channel must send (see the contract); nothing is answered. */
export function checkAnswer(answer: unknown, by: unknown, via: unknown): void {
  const a = answer as { approved?: unknown; reason?: unknown } | null;
  let problem: string | undefined;
  if (a === null || typeof a !== 'object') problem = `the answer must be an object { approved, reason? }, got ${JSON.stringify(answer) ?? String(answer)}`;
  else if (typeof a.approved !== 'boolean') problem = `approved must be true or false, got ${JSON.stringify(a.approved) ?? 'undefined'}`;
  else if (a.reason !== undefined && typeof a.reason !== 'string') problem = `reason must be a string, got ${typeof a.reason}`;
  else if (typeof a.reason === 'string' && a.reason.length > MAX_APPROVAL_REASON_CHARS) problem = `reason is ${a.reason.length} characters; at most ${MAX_APPROVAL_REASON_CHARS}`;
  else if (by === null || typeof by !== 'object') problem = 'the answering principal must be an object (e.g. { userId })';
  else if (typeof via !== 'string' || via === '') problem = 'via must name the channel the answer came through (e.g. "websocket")';
  if (problem !== undefined) throw new TurnstateError('approval.invalid', `answerApproval(): ${problem}; nothing was answered`);
}

/** Resolve an approval in the store (first answer wins). */
export async function resolveApproval(
  core: HostCore,
  approvalId: string,
  answer: { approved: boolean; reason?: string },
  by: Principal,
  via: string,
): Promise<AnswerResult> {
  const { store, canAnswerApproval, clock } = core.deps;
  const notFound = (): AnswerResult => ({ ok: false, code: 'approval.not_found', message: `no approval ${approvalId} in session ${core.id}` });
  const record = await store.getApproval(approvalId);
  if (!record || record.sessionId !== core.id) return notFound();
  // Also once resolved: `already_resolved` carries the record (its args, who answered), which a
  // principal that may not answer must not read.
  if (!canAnswerApproval(record, by)) {
    return { ok: false, code: 'approval.forbidden', message: `this principal may not answer approval ${approvalId}` };
  }
  const resolution = {
    decision: answer.approved ? ('approved' as const) : ('denied' as const),
    by,
    via,
    at: clock.iso(),
    ...(answer.reason ? { reason: answer.reason } : {}),
  };
  const res = await store.resolveApproval(approvalId, resolution);
  if (!res) return notFound();
  if (!res.changed) {
    const first = res.record.resolution;
    return {
      ok: false,
      code: 'approval.already_resolved',
      message: `approval ${approvalId} was already resolved: ${first?.decision ?? res.record.status}${first ? ` by ${first.by.userId ?? 'unknown'} via ${first.via} at ${first.at}` : ''}; this answer changed nothing`,
      record: res.record,
    };
  }
  return { ok: true, record: res.record };
}

/**
 * Publish a resolved approval and, when the turn waits for its call, run it (approved) or tell
 * the model it was denied. Returns true when the call was one the turn waited for.
 */
export async function applyResolution(core: HostCore, t: ActiveTurn | null, record: ApprovalRecord): Promise<boolean> {
  const { journal } = core;
  const resolution = record.resolution!;
  await journal.commit({
    events: [
      journal.event(record.turnId, {
        type: 'approval.resolved',
        approvalId: record.approvalId,
        callId: record.callId,
        decision: resolution.decision,
        by: resolution.by,
        via: resolution.via,
        ...(resolution.reason ? { reason: resolution.reason } : {}),
      }),
    ],
  });
  if (!t || t.turnId !== record.turnId || !t.pending.has(record.callId)) return false;
  t.pending.delete(record.callId);
  // Until its outcome is recorded the call still holds the turn (another answer meanwhile does not resume it).
  t.answering++;
  try {
    if (resolution.decision === 'approved') {
      const tool = core.deps.registries.tools.get(record.tool);
      if (tool) await runTool(core, t, record.actor, tool, { type: 'tool_use', id: record.callId, name: record.tool, input: record.args }, record, false);
      else {
        // Unregistered since it was asked for (a restart with another setup): the call still gets an outcome.
        const content = `Tool "${record.tool}" is no longer registered; the approved call was not run.`;
        await journal.commit(outcomeStep(journal, core.deps.clock.iso(), { turnId: t.turnId, actor: record.actor, callId: record.callId, tool: record.tool, content, isError: true }));
      }
    } else {
      await journal.commit(
        outcomeStep(journal, core.deps.clock.iso(), {
          turnId: t.turnId,
          actor: record.actor,
          callId: record.callId,
          tool: record.tool,
          content: denialText(resolution.reason),
          isError: true,
          denial: resolution.reason ? { reason: resolution.reason } : {},
        }),
      );
    }
  } finally {
    t.answering--;
  }
  return true;
}
