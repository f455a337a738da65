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
 * - A write that fails after the store recorded the answer does not undo it: the error
 *   (`store.write_failed`) says the answer is recorded and what else landed (the approved call's
 *   run, its outcome), and the host gives way to one restored from the store, where recovery
 *   finishes what did not land (**store:failure:approval-answer-truthful**).
 * - A host stopped while it applies an answer is no failed write: the runtime closed
 *   (`runtime.closed`, saying whether the answer is recorded and what recovery does) or the
 *   session was deleted (`session.not_found`: nothing of it remains) (**approvals:property:close-race**).
 */
import { TurnstateError } from '../errors.js';
import { MAX_APPROVAL_REASON_CHARS, MAX_PRINCIPAL_JSON_CHARS } from '../limits.js';
import type { AnswerResult, ApprovalRecord, Principal } from '../types.js';
import type { HostCore } from './core.js';
import type { Journal } from './journal.js';
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
  const record = await asRuntime(core, () => store.getApproval(approvalId));
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
  let res: Awaited<ReturnType<typeof store.resolveApproval>>;
  try {
    res = await store.resolveApproval(approvalId, resolution);
  } catch (err) {
    // Closed meanwhile: the store's `store.closed` is the runtime's `runtime.closed`.
    if (core.closed) throw runtimeClosedAnswering(approvalId, 'the answer may not be recorded: answer it again once the runtime is open (a recorded one is reported as approval.already_resolved)', err);
    // A store's own error (SQLite: store.write_failed naming its cause) as it is; anything else named.
    if (err instanceof TurnstateError) throw err;
    throw new TurnstateError(
      'store.write_failed',
      `the ${store.kind} store failed to record the answer to approval ${approvalId}: ${err instanceof Error ? err.message : String(err)}; answer again (an answer it did record is reported as approval.already_resolved)`,
      { cause: err, details: { sessionId: core.id, approvalId } },
    );
  }
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

/** How far an answer got: the seqs of its `approval.resolved` and of its call's outcome (0: not yet), and whether the call ran. */
export interface AnswerProgress {
  resolvedSeq: number;
  waited: boolean;
  ran: boolean;
  outcomeSeq: number;
}

/** What applyAnswer needs of the session besides its core. */
export interface AnsweringSession extends HostCore {
  /** Every pending call answered: the machine may resume the turn. */
  answered(t: ActiveTurn): unknown;
  /** The host gives way to one restored from the store. */
  writeFailed(): void;
}

/**
 * Apply an answer the store recorded: publish it, run or deny the call, resume the turn, and write
 * it all before returning. A failure after the answer was recorded says what landed (see the contract).
 */
export async function applyAnswer(s: AnsweringSession, record: ApprovalRecord): Promise<void> {
  const t = s.turn;
  const progress: AnswerProgress = { resolvedSeq: 0, waited: false, ran: false, outcomeSeq: 0 };
  try {
    if (await applyResolution(s, t, record, progress)) s.answered(t!);
    s.journal.barrier();
  } catch (err) {
    // Stopped while it applied the answer (the runtime closed, the session was deleted), and no
    // write failed (a host that gave way after a failed write is stopped too: that is below).
    if (s.closed && !s.journal.failed()) throw await answerCutByStop(s, record, progress, err);
    // The host is ahead of the store (the answer applied in memory): a fresh one is woken from it on next use.
    s.writeFailed();
    throw answerNotWritten(s.id, s.journal, record, progress, err);
  }
}

/** What `read` reads, with the store's error once the runtime closed (`store.closed`) as the runtime's. */
async function asRuntime<T>(core: HostCore, read: () => T | Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (core.closed) throw runtimeClosedAnswering('', 'nothing was answered', err);
    throw err;
  }
}

function runtimeClosedAnswering(approvalId: string, what: string, cause: unknown): TurnstateError {
  return new TurnstateError('runtime.closed', `the runtime closed while ${approvalId === '' ? 'an approval' : `approval ${approvalId}`} was answered: ${what}`, { cause });
}

/**
 * The error for an answer the store recorded whose host stopped before it was applied: the
 * session was deleted (nothing of it remains: `session.not_found`), or the runtime closed
 * (`runtime.closed`): what landed, and what recovery does with the rest.
 */
async function answerCutByStop(s: AnsweringSession, record: ApprovalRecord, p: AnswerProgress, err: unknown): Promise<TurnstateError> {
  // Deleted: the store holds no record; closed: it holds it, or cannot be read any more.
  const stored = await Promise.resolve()
    .then(() => s.deps.store.getApproval(record.approvalId))
    .catch(() => record);
  if (stored === undefined) {
    return new TurnstateError('session.not_found', `session ${s.id} was deleted while the answer to approval ${record.approvalId} was applied: nothing of it remains, and ${record.tool} (call ${record.callId}) did not run`, {
      cause: err,
      details: { sessionId: s.id, approvalId: record.approvalId },
    });
  }
  const decision = record.resolution?.decision ?? record.status;
  const call = `${record.tool} (call ${record.callId})`;
  const rest =
    decision !== 'approved' || !p.waited
      ? 'recovery applies it'
      : p.ran
        ? `${call} was started; if its outcome was not recorded, the model is told it is unknown and it is not run again`
        : p.resolvedSeq > 0 && s.journal.seq >= p.resolvedSeq
          ? `${call} did not run, but its approval was recorded as applied: after a restart the model is told its outcome is unknown (it is not run)`
          : `${call} has not run: recovery runs it`;
  return new TurnstateError(
    'runtime.closed',
    `approval ${record.approvalId} is answered (${decision}) and the answer is recorded: answering again gets approval.already_resolved. The runtime closed while the answer was applied; ${rest} (runtime.recover(), or the session's next use, after a restart)`,
    { cause: err, details: { sessionId: s.id, approvalId: record.approvalId, callId: record.callId, decision, answerRecorded: true, callRan: p.ran } },
  );
}

/** The error for an answer the store recorded whose later write failed: what landed, and what becomes of the rest. */
function answerNotWritten(sessionId: string, journal: Journal, record: ApprovalRecord, p: AnswerProgress, err: unknown): TurnstateError {
  // After a failed write the journal's seq is the last one written: a seq up to it landed.
  const landed = (seq: number): boolean => seq > 0 && journal.seq >= seq;
  const decision = record.resolution?.decision ?? record.status;
  const call = `${record.tool} (call ${record.callId})`;
  const outcomeRecorded = landed(p.outcomeSeq);
  const rest = !p.waited
    ? `${call} was not waiting in the session's turn, so nothing else follows from the answer`
    : outcomeRecorded
      ? `the outcome of ${call} is recorded too, and the turn goes on from the store when the session is next used`
      : p.ran
        ? `${call} ran, but its outcome could not be recorded: it is unknown, and the call will not be run again (the model is told so when the session is next used)`
        : decision === 'approved' && !landed(p.resolvedSeq)
          ? `${call} has not run: the session runs it when it is next used`
          : `the session finishes applying the answer when it is next used`;
  const cause = err instanceof Error ? err.message : String(err);
  return new TurnstateError(
    err instanceof TurnstateError ? err.code : 'store.write_failed',
    `approval ${record.approvalId} is answered (${decision}) and the answer is recorded: answering again gets approval.already_resolved. ` +
      `A later write of session ${sessionId} failed (${cause}); ${rest}`,
    { cause: err, details: { sessionId, approvalId: record.approvalId, callId: record.callId, decision, answerRecorded: true, callRan: p.ran, outcomeRecorded } },
  );
}

/**
 * Publish a resolved approval and, when the turn waits for its call, run it (approved) or tell
 * the model it was denied. Returns true when the call was one the turn waited for. `progress`
 * follows how far it got (for the error when a write fails).
 */
export async function applyResolution(core: HostCore, t: ActiveTurn | null, record: ApprovalRecord, progress?: AnswerProgress): Promise<boolean> {
  const { journal } = core;
  const resolution = record.resolution!;
  const resolved = journal.event(record.turnId, {
    type: 'approval.resolved',
    approvalId: record.approvalId,
    callId: record.callId,
    decision: resolution.decision,
    by: resolution.by,
    via: resolution.via,
    ...(resolution.reason ? { reason: resolution.reason } : {}),
  });
  // Not awaited when the store takes it at once (group commit, a synchronous store): from here to
  // the approved handler's start nothing else runs, so a close() or a delete cannot land between
  // approval.resolved and the call it allows, which a restart would then report unknown although
  // it never ran (approvals:property: an approved call's handler runs exactly once).
  const written = journal.commit({ events: [resolved] });
  if (written !== undefined) await written;
  if (progress) progress.resolvedSeq = resolved.seq;
  const waited = t !== null && t.turnId === record.turnId && t.pending.has(record.callId);
  if (progress) progress.waited = waited;
  // An asynchronous store's write awaited: stopped meanwhile, the call does not start.
  if (core.closed) throw new TurnstateError('session.stopped', `session ${core.id} stopped before ${record.tool} (call ${record.callId}) ran`);
  if (!waited) return false;
  t.pending.delete(record.callId);
  // Until its outcome is recorded the call still holds the turn (another answer meanwhile does not resume it).
  t.answering++;
  try {
    if (resolution.decision === 'approved') {
      const tool = core.deps.registries.tools.get(record.tool);
      if (tool) {
        // approval.resolved is durable before the call runs (a restart never runs it twice).
        journal.barrier();
        if (progress) progress.ran = true;
        await runTool(core, t, record.actor, tool, { type: 'tool_use', id: record.callId, name: record.tool, input: record.args }, record, false);
      } else {
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
    if (progress) progress.outcomeSeq = journal.seq;
  } finally {
    t.answering--;
  }
  return true;
}
