/**
 * Approval answers: the same path for every channel (API, AAP, WebSocket, a surface's button).
 *
 * Contract:
 * - The store's compare-and-set decides: the first answer wins; a later one changes nothing and
 *   says who answered first, how and when (`approval.already_resolved`).
 * - An answer that is not `{ approved: boolean, reason?: string }` (a reason of at most
 *   MAX_APPROVAL_REASON_CHARS UTF-16 code units, `String.length`, as every channel counts it), from
 *   a principal object via a named channel, is refused with `approval.invalid` naming the field,
 *   before anything is looked up (`checkAnswer`, at the session API's edges: a session handle and
 *   `runtime.answerApproval`). The principal is a plain object of JSON values (at most
 *   MAX_PRINCIPAL_JSON_CHARS characters as JSON; `userId`, `tenantId`, `personId` strings, `roles`
 *   strings): every store keeps it as it was given, and the record keeps a copy of it.
 * - A principal the runtime's `canAnswerApproval` refuses gets `approval.forbidden`, pending or
 *   resolved (a resolved approval's record is not shown to it); an approval
 *   of another session is `approval.not_found` (never confirmed to exist).
 * - `approval.resolved` is durable before an approved call runs (so a restart never runs it
 *   twice); a denied call's result tells the model it was denied, with the reason.
 * - The turn resumes when its last answered call has its outcome recorded, whichever answer
 *   came last (an approved call may still be running when another call's denial arrives).
 */
import { TurnstateError } from '../errors.js';
import { MAX_APPROVAL_REASON_CHARS, MAX_PRINCIPAL_JSON_CHARS } from '../limits.js';
import type { AnswerResult, ApprovalRecord, Principal } from '../types.js';
import type { HostCore } from './core.js';
import { jsonProblem } from './input-checks.js';
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
  // UTF-16 code units (String.length), on every channel (the AAP schema and WebSocket frames count the same).
  else if (typeof a.reason === 'string' && a.reason.length > MAX_APPROVAL_REASON_CHARS) problem = `reason is ${a.reason.length} characters; at most ${MAX_APPROVAL_REASON_CHARS} (UTF-16 code units)`;
  else problem = principalProblem(by) ?? (typeof via !== 'string' || via === '' ? 'via must name the channel the answer came through (e.g. "websocket")' : undefined);
  if (problem !== undefined) throw new TurnstateError('approval.invalid', `answerApproval(): ${problem}; nothing was answered`);
}

/** Why `by` cannot answer as a principal (naming the field), or undefined. Never throws. */
function principalProblem(by: unknown): string | undefined {
  const shape = 'the answering principal must be an object (e.g. { userId })';
  if (by === null || typeof by !== 'object') return shape;
  try {
    if (Array.isArray(by)) return `${shape}, not an array`;
    const proto = Object.getPrototypeOf(by) as unknown;
    if (proto !== Object.prototype && proto !== null) return `${shape} of JSON values: by is a ${by.constructor?.name ?? 'class instance'}`;
    const p = by as Record<string, unknown>;
    for (const k of ['userId', 'tenantId', 'personId'] as const) {
      if (p[k] !== undefined && typeof p[k] !== 'string') return `by.${k} must be a string, got ${typeof p[k]}`;
    }
    if (p.roles !== undefined && !(Array.isArray(p.roles) && p.roles.every((r) => typeof r === 'string'))) return 'by.roles must be an array of strings';
    const notJson = jsonProblem(by, 'by');
    if (notJson !== undefined) return `${shape} of JSON values: ${notJson}`;
    const size = JSON.stringify(by).length;
    if (size > MAX_PRINCIPAL_JSON_CHARS) return `by is ${size} characters as JSON; at most ${MAX_PRINCIPAL_JSON_CHARS}`;
    return undefined;
  } catch (e) {
    // A getter that throws, a Proxy, nesting too deep to walk.
    return `${shape} of JSON values that can be read: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/**
 * The principal as the record keeps it: a JSON copy (checkAnswer let through only JSON values),
 * so every store keeps the same thing and a caller that changes its object later changes nothing.
 */
function principalCopy(by: Principal): Principal {
  return JSON.parse(JSON.stringify(by)) as Principal;
}

/** Resolve an approval in the store (first answer wins). */
export async function resolveApproval(
  core: HostCore,
  approvalId: string,
  answer: { approved: boolean; reason?: string },
  given: Principal,
  via: string,
): Promise<AnswerResult> {
  const { store, canAnswerApproval, clock } = core.deps;
  const by = principalCopy(given);
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
