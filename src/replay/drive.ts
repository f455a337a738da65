/**
 * The driver of a re-run: sends the recorded inputs, one turn at a time, with the tool settings
 * they were sent with, and answers what each turn waits for as the recording did: approval
 * decisions and client-tool results in the order the recording answered them (by the seq of the
 * `approval.resolved` / `tool.result` that answered each), and injections that resumed a held
 * state. The order of answers is not the model's choice but it shapes what the model reads next
 * (its tool results in that order), so it is reproduced rather than compared loosely.
 */
import { ModelError } from '../errors.js';
import type { ModelEvent, ModelPort, ModelRequest, SessionHandle } from '../api.js';
import type { Registries } from '../registries/types.js';
import type { createRuntime } from '../runtime.js';
import type { ApprovalRecord, Envelope, MailboxEntry, SessionEvent } from '../types.js';
import { canonicalJson } from './results.js';
import { injectionEntries, type Recording } from './recording.js';
import type { TurnPoints } from './turn-points.js';

type ReplayRuntime = ReturnType<typeof createRuntime>;
type Match = 'callId' | 'content';

/**
 * `model` with the turn points' hooks: before each model call, the tool settings changed before
 * it are applied and the messages that joined before it are sent (the call is then cut, and made again).
 */
export function pointedModel(model: ModelPort, points: TurnPoints): ModelPort {
  const completed = new Map<string, number>();
  async function* stream(req: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    const k = completed.get(req.turnId) ?? 0;
    const before = points.beforeModelCall(req.turnId, k);
    if (before !== undefined && ((await before) || signal.aborted)) {
      throw new ModelError('model.aborted', 'replay: a message joined the turn as this model call started, as recorded');
    }
    let done = false;
    for await (const ev of model.stream(req, signal) as AsyncIterable<ModelEvent>) {
      if (ev.type === 'message.stop') done = true;
      yield ev;
    }
    if (done) completed.set(req.turnId, k + 1);
  }
  return { name: model.name, stream };
}

/** Feed the recorded turns to the re-run; returns why it stopped early, if it did. */
export async function drive(rt: ReplayRuntime, registries: Registries, rec: Recording, match: Match, points: TurnPoints): Promise<string | undefined> {
  const s = await rt.createSession({
    id: rec.record.id,
    actor: rec.record.actor,
    // Messages that joined a running turn join it again; otherwise the driver sends one turn at a time.
    doubleTexting: points.joins ? 'interrupt' : 'queue',
    ...(rec.record.tenantId !== undefined ? { tenantId: rec.record.tenantId } : {}),
    ...(rec.record.metadata ? { metadata: rec.record.metadata } : {}),
  });
  points.attach(s);
  const starts = rec.events.filter((e): e is Extract<SessionEvent, { type: 'turn.started' }> => e.type === 'turn.started');
  const usedApprovals = new Set<ApprovalRecord>();
  const usedClient = new Set<string>();
  const usedInjections = new Set<MailboxEntry>();
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i]!;
    const ref = await s.send(start.input, {
      ...(start.input.principal ? { principal: start.input.principal } : {}),
      ...points.sendOptions(start.turnId, registries),
    });
    await ref.settled;
    for (;;) {
      // The session says whether the turn waits, and for what; a turn that ended is done.
      const snap = await s.snapshot();
      if (snap.held === undefined || snap.turnId !== ref.turnId) break;
      const turnId = ref.turnId;
      const answers: { seq: number; answer: () => Promise<unknown> }[] = [];
      const unanswered: string[] = [];
      for (const p of snap.pendingApprovals) {
        const recorded = findApproval(rec, p, start.turnId, match, usedApprovals);
        if (!recorded?.resolution) {
          unanswered.push(`the approval of ${p.tool} ${canonicalJson(p.args)}`);
          continue;
        }
        usedApprovals.add(recorded);
        const r = recorded.resolution;
        answers.push({
          seq: points.answerSeq(start.turnId, recorded.callId),
          answer: () => s.answerApproval(p.approvalId, { approved: r.decision === 'approved', ...(r.reason ? { reason: r.reason } : {}) }, r.by, r.via),
        });
      }
      for (const c of snap.pendingClientCalls) {
        const recorded = findClientResult(rec, c, start.turnId, match, usedClient);
        if (!recorded) {
          unanswered.push(`the client call of ${c.tool} ${canonicalJson(c.args)}`);
          continue;
        }
        usedClient.add(recorded.callId);
        answers.push({
          seq: points.answerSeq(start.turnId, recorded.callId),
          answer: () => s.inject({ kind: 'client-tool-result', callId: c.callId, content: recorded.content, isError: recorded.isError }),
        });
      }
      let waiting = snap.pendingApprovals.length + snap.pendingClientCalls.length;
      let injection: string | undefined;
      // A held state with no call pending resumes on a named injection (a peer's envelope, a
      // consumer state, also one that names approval-response: a sign-off): the injection is in
      // the mailbox as `[<resumeOn>] <json>`.
      const resumeOn = snap.held.resumeOn;
      if (waiting === 0) {
        waiting = 1;
        injection = resumeOn;
        const injected = findInjection(rec, start.turnId, resumeOn, usedInjections);
        if (injected) {
          usedInjections.add(injected.entry);
          answers.push({
            seq: Infinity,
            answer: () =>
              s.inject(resumeOn === 'peer-envelope' ? { kind: 'peer-envelope', envelope: injected.payload as Envelope } : { kind: 'resume', resumeOn, payload: injected.payload }),
          });
        }
      }
      // In the order the recording answered them (a stable sort: equal seqs keep the request order).
      answers.sort((a, b) => a.seq - b.seq);
      if (waiting === 0 || answers.length < waiting) {
        // The recording itself ends here, waiting: the re-run is faithful (what changed while it waited too).
        if (i === starts.length - 1 && !rec.events.some((e) => e.type === 'turn.settled' && e.turnId === start.turnId)) {
          // Some of its calls may have been answered before it ended: they are answered here too (an
          // approved call runs). The turn stays held, so no stop is awaited: each answer resolves once
          // its call's outcome is recorded.
          const refused = await answerAll(points, turnId, answers);
          if (refused) return `turn ${i} (${turnId}): ${refused}`;
          await points.beforeAnswer(turnId, Infinity);
          points.turnDone(start.turnId);
          return undefined;
        }
        const missing =
          injection !== undefined ? `no "${injection}" injection to resume it`
          : unanswered.length ? `no answer for ${unanswered.join(', ')} (of its ${waiting} pending call(s))` : 'no answer for it';
        points.turnDone(start.turnId);
        return `turn ${i} (${turnId}) stopped in "${snap.state}" and the recording holds ${missing}`;
      }
      const stopped = nextStop(s, turnId, snap.lastSeq);
      const refused = await answerAll(points, turnId, answers);
      if (refused) {
        stopped.cancel();
        return `turn ${i} (${turnId}): ${refused}`;
      }
      await stopped.done;
    }
    points.turnDone(start.turnId);
  }
  await s.idle();
  return undefined;
}

/** Gives `answers` in their order, each after the tool settings changed before it; says why one was refused, if one was. */
async function answerAll(points: TurnPoints, turnId: string, answers: readonly { seq: number; answer: () => Promise<unknown> }[]): Promise<string | undefined> {
  for (const a of answers) {
    await points.beforeAnswer(turnId, a.seq);
    const r = (await a.answer()) as { ok?: boolean; code?: string; message?: string } | undefined;
    if (r && r.ok === false) return `the recorded answer was refused (${r.code}: ${r.message})`;
  }
  return undefined;
}

/** The recorded approval for a pending one: the same call, or (content) the same tool and arguments in the turn. */
function findApproval(rec: Recording, pending: ApprovalRecord, turnId: string, match: Match, used: Set<ApprovalRecord>): ApprovalRecord | undefined {
  if (match === 'callId') return rec.approvals.find((a) => a.callId === pending.callId && !used.has(a));
  const key = canonicalJson(pending.args);
  return rec.approvals.find((a) => a.turnId === turnId && a.tool === pending.tool && !used.has(a) && a.resolution && canonicalJson(a.args) === key);
}

function findInjection(rec: Recording, turnId: string, resumeOn: string, used: Set<MailboxEntry>): { entry: MailboxEntry; payload: unknown } | undefined {
  const prefix = `[${resumeOn}] `;
  for (const m of injectionEntries(rec, turnId)) {
    if (used.has(m) || !m.text.startsWith(prefix)) continue;
    try {
      return { entry: m, payload: JSON.parse(m.text.slice(prefix.length)) as unknown };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The recorded client result for a pending client call: the same call, or (content) the same tool and arguments in the turn. */
function findClientResult(
  rec: Recording,
  pending: { callId: string; tool: string; args: unknown },
  turnId: string,
  match: Match,
  used: Set<string>,
): Extract<MailboxEntry, { kind: 'tool_result' }> | undefined {
  const argsOf = new Map<string, string>();
  if (match === 'content') {
    for (const e of rec.events) if (e.type === 'tool.called' && e.side === 'client' && e.turnId === turnId) argsOf.set(e.callId, canonicalJson(e.args));
  }
  const key = canonicalJson(pending.args);
  for (const m of rec.mailbox) {
    if (m.kind !== 'tool_result' || used.has(m.callId)) continue;
    if (match === 'callId' ? m.callId === pending.callId : m.turnId === turnId && m.tool === pending.tool && argsOf.get(m.callId) === key) return m;
  }
  return undefined;
}

/** Resolves when the turn next stops: settled, or held again (as the session's snapshot says). */
function nextStop(s: Pick<SessionHandle, 'events' | 'snapshot'>, turnId: string, afterSeq: number): { done: Promise<void>; cancel(): void } {
  let sub: { unsubscribe(): void } | undefined;
  let done = false;
  const cancel = (): void => {
    done = true;
    queueMicrotask(() => sub?.unsubscribe());
  };
  const promise = new Promise<void>((resolve, reject) => {
    const finish = (): void => {
      if (done) return;
      cancel();
      resolve();
    };
    sub = s.events(afterSeq).subscribe({
      next: (e) => {
        if (done || e.turnId !== turnId) return;
        if (e.type === 'turn.settled') finish();
        else if (e.type === 'turnState.changed') {
          // Nothing but this driver answers the turn, so a turn seen held stays held until it does.
          s.snapshot().then((snap) => {
            if (snap.turnId === turnId && snap.held !== undefined) finish();
          }, reject);
        }
      },
      error: reject,
    });
    if (done) sub.unsubscribe();
  });
  return { done: promise, cancel };
}
