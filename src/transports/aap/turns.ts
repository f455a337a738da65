/**
 * `POST /sessions/{id}/turns`: a user turn, or the re-submission of client tool results and
 * tool permissions after a `tool_use` stop, streamed (`delta`, `message`) or answered as one
 * JSON body (`none`).
 *
 * Contract: every check happens before anything is applied, so a 4xx changes nothing; once the
 * response has started, it ends with exactly one `turn_stop` (SSE) or one JSON body.
 * `tool_permission` answers go through `SessionHandle.answerApproval(..., 'aap')`, the same
 * path as every other channel: the first answer wins, a later one is a 409 naming the first.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SendOptions, SessionHandle, SessionRuntime, SessionSnapshot, TurnTools } from '../../api.js';
import type { ApprovalRecord, Principal, SessionEvent } from '../../types.js';
import { HttpError } from '../http.js';
import { checkClientTools, checkConsumes, checkOptions, checkServerTools, enabledToolNames, howToEnableTools, trustedToolNames, type ResolvedAgent } from './agents.js';
import { followTurn, type TurnError } from './follow.js';
import { AapProjector, type AapItem, type CallSide, type PartClass } from './projector.js';
import { extraFields, jsonSink, sseSink } from './sinks.js';
import { AAP_METADATA_KEY, AAP_REQUEST_KEY, merge, type AapSessionConfig, type SessionConfigs } from './session-config.js';
import type {
  AapContentBlock,
  AapToolMessage,
  AapToolPermissionMessage,
  SessionTurnRequest,
  StopReason,
  StreamMode,
} from './types.js';

export interface TurnRequestContext {
  runtime: SessionRuntime;
  handle: SessionHandle;
  principal: Principal;
  agent: ResolvedAgent;
  configs: SessionConfigs;
  config: AapSessionConfig;
  body: SessionTurnRequest;
  mode: StreamMode;
  classify: (partType: string) => PartClass;
  req: IncomingMessage;
  res: ServerResponse;
  heartbeatMs: number;
  /** The handler's responses still following a turn: closing the handler ends each one (see `RunningTurns`). */
  running: RunningTurns;
}

/**
 * The turn responses a handler is following. `stopAll` ends each with its `turn_stop` (or JSON
 * body) before the server destroys the connections, and resolves once they are written.
 */
export class RunningTurns {
  readonly #stops = new Set<(reason: StopReason, why?: TurnError) => Promise<void>>();

  add(stop: (reason: StopReason, why?: TurnError) => Promise<void>): () => void {
    this.#stops.add(stop);
    return () => this.#stops.delete(stop);
  }

  /** `why`: the error each response reports when `reason` is `error` (its turn_stop's `error`, a JSON response's header). */
  async stopAll(reason: StopReason, why?: TurnError): Promise<void> {
    await Promise.allSettled([...this.#stops].map((stop) => stop(reason, why)));
  }
}

export async function runTurnRequest(ctx: TurnRequestContext): Promise<void> {
  const { body, agent } = ctx;
  let users = 0;
  for (const m of body.messages) if (m.role === 'user') users++;
  if (users > 0 && users < body.messages.length) {
    throw new HttpError(
      400,
      'messages.mixed',
      'a turn carries either user message(s) or tool results and tool permissions, never both',
      { path: '/messages' },
    );
  }
  if (body.agent?.tools !== undefined) checkServerTools(agent, body.agent.tools, '/agent/tools');
  if (body.agent?.options !== undefined) checkOptions(agent, body.agent.options, '/agent/options');
  if (body.tools !== undefined) checkClientTools(agent, body.tools, '/tools');
  if (body.consumes !== undefined) checkConsumes(ctx.runtime.registries.partTypes, body.consumes, '/consumes');
  const override: { agent?: SessionTurnRequest['agent']; tools?: SessionTurnRequest['tools']; consumes?: string[] } = {};
  if (body.agent !== undefined) override.agent = body.agent;
  if (body.tools !== undefined) override.tools = body.tools;
  if (body.consumes !== undefined) override.consumes = body.consumes;
  const next = body.agent === undefined && body.tools === undefined && body.consumes === undefined ? ctx.config : merge(ctx.config, override);
  if (users > 0) await userTurn(ctx, next);
  else await resumeTurn(ctx, next);
}

/** The tool settings a session config gives its turns: enabled and trusted server tools, client tools. */
function turnToolsOf(agent: ResolvedAgent, config: AapSessionConfig): TurnTools {
  const tools: TurnTools = {
    enabledTools: enabledToolNames(agent, config.agent),
    howToEnableTools: howToEnableTools(agent.config.name),
    standingApprovals: trustedToolNames(config.agent),
  };
  // Every setting, so a running turn's are all replaced (no client tools: an empty list).
  tools.clientTools = config.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  return tools;
}

/* ------------------------------------------------------------------ user turn */

async function userTurn(ctx: TurnRequestContext, next: AapSessionConfig): Promise<void> {
  const { handle, body } = ctx;
  const parts: string[] = [];
  body.messages.forEach((m, i) => {
    if (m.role === 'user') parts.push(textOf(m.content, `/messages/${i}/content`));
  });
  const text = parts.join('\n\n');
  if (text.trim() === '') {
    throw new HttpError(400, 'content.empty', 'the user message has no text', { path: '/messages/0/content' });
  }
  const snap = await handle.snapshot();
  const waiting = pendingIds(snap);
  if (waiting.length > 0) {
    throw new HttpError(
      409,
      'turn.awaiting_tool_results',
      `session "${handle.id}" waits for the results or permissions of tool calls ${waiting.map((id) => `"${id}"`).join(', ')}: ` +
        'submit them (role "tool" / "tool_permission") before a new user message',
      { details: { pendingToolCallIds: waiting } },
    );
  }
  // A config a re-submission changed has no user message of its own: it is stored with this one.
  const changed = next !== ctx.config || !ctx.configs.isPersisted(handle.id);
  const opts: SendOptions = { principal: ctx.principal, ...turnToolsOf(ctx.agent, next) };
  if (next.consumes !== undefined && next.consumes.length > 0) opts.consumes = next.consumes;

  // Where a message may join a running turn, each carries its request's id: the response of the
  // request it joins ends there, and only that one (two requests may well send the same text).
  const request = handle.record.doubleTexting === 'interrupt' ? randomUUID() : undefined;
  const metadata: Record<string, unknown> = {};
  if (changed) metadata[AAP_METADATA_KEY] = next;
  if (request !== undefined) metadata[AAP_REQUEST_KEY] = request;
  const run = startRun(ctx, snap.lastSeq, [], request);
  let ref;
  try {
    ref = await handle.send(Object.keys(metadata).length > 0 ? { text, metadata } : { text }, opts);
  } catch (err) {
    run.follower.stop('error');
    throw err;
  }
  if (changed) ctx.configs.set(handle.id, next);
  run.begin(ref.turnId);
  ref.settled.then(
    (outcome) => run.follower.outcome(outcome),
    () => run.follower.stop('error'),
  );
  await run.finished;
}

/* ------------------------------------------------------------------ re-submission */

type Answer =
  | { kind: 'tool'; message: AapToolMessage; content: string }
  | { kind: 'permission'; message: AapToolPermissionMessage; approval: ApprovalRecord };

async function resumeTurn(ctx: TurnRequestContext, next: AapSessionConfig): Promise<void> {
  const { handle, body, runtime } = ctx;
  const snap = await handle.snapshot();
  const approvals = new Map(snap.pendingApprovals.map((a) => [a.callId, a]));
  const clientCalls = new Map(snap.pendingClientCalls.map((c) => [c.callId, c]));
  const pending = pendingIds(snap);
  const pendingList = pending.length === 0 ? 'none' : pending.map((id) => `"${id}"`).join(', ');
  const answers: Answer[] = [];
  const seen = new Set<string>();
  let resolvedElsewhere: ApprovalRecord[] | undefined;

  for (let i = 0; i < body.messages.length; i++) {
    const m = body.messages[i]!;
    if (m.role === 'user') continue;
    const path = `/messages/${i}/toolCallId`;
    if (seen.has(m.toolCallId)) throw new HttpError(400, 'tool.duplicate_answer', `tool call "${m.toolCallId}" is answered twice in this request`, { path });
    seen.add(m.toolCallId);
    if (m.role === 'tool') {
      if (clientCalls.has(m.toolCallId)) {
        answers.push({ kind: 'tool', message: m, content: textOf(m.content, `/messages/${i}/content`) });
        continue;
      }
      if (approvals.has(m.toolCallId)) {
        throw new HttpError(
          400,
          'tool.wrong_role',
          `tool call "${m.toolCallId}" is a server tool waiting for permission: answer it with a "tool_permission" message, not a "tool" result`,
          { path: `/messages/${i}/role` },
        );
      }
      throw new HttpError(400, 'tool.not_pending', `no pending client tool call "${m.toolCallId}" in session "${handle.id}" (pending: ${pendingList})`, { path });
    }
    const approval = approvals.get(m.toolCallId);
    if (approval !== undefined) {
      // Checked for every answer before any is applied: a refused request changes nothing.
      if (!runtime.mayAnswerApproval(approval, ctx.principal)) throw forbidden(m.toolCallId);
      answers.push({ kind: 'permission', message: m, approval });
      continue;
    }
    if (clientCalls.has(m.toolCallId)) {
      throw new HttpError(
        400,
        'tool.wrong_role',
        `tool call "${m.toolCallId}" is a client-side tool call: answer it with a "tool" message carrying its result, not a "tool_permission"`,
        { path: `/messages/${i}/role` },
      );
    }
    resolvedElsewhere ??= await runtime.approvals({ sessionId: handle.id });
    const earlier = resolvedElsewhere.filter((a) => a.callId === m.toolCallId && a.status !== 'pending').pop();
    // Who answered, and why, is not shown to a principal that may not answer it.
    if (earlier !== undefined && !runtime.mayAnswerApproval(earlier, ctx.principal)) throw forbidden(m.toolCallId);
    if (earlier !== undefined) throw alreadyResolved(m.toolCallId, earlier);
    throw new HttpError(400, 'tool.not_pending', `no pending tool call "${m.toolCallId}" waits for permission in session "${handle.id}" (pending: ${pendingList})`, { path });
  }
  const missing = pending.filter((id) => !seen.has(id));
  if (missing.length > 0) {
    throw new HttpError(
      400,
      'tool.results_missing',
      `every pending tool call must be answered in one request; missing: ${missing.map((id) => `"${id}"`).join(', ')}`,
      { path: '/messages', details: { missingToolCallIds: missing } },
    );
  }
  if (snap.turnId === undefined) throw new HttpError(400, 'tool.not_pending', `session "${handle.id}" has no turn waiting for tool results`, { path: '/messages' });

  const turnId = snap.turnId;
  const known: { callId: string; side: CallSide; turnId: string }[] = [
    ...snap.pendingApprovals.map((a) => ({ callId: a.callId, side: 'untrusted' as const, turnId })),
    ...snap.pendingClientCalls.map((c) => ({ callId: c.callId, side: 'client' as const, turnId })),
  ];
  const run = startRun(ctx, snap.lastSeq, known);
  // Settings sent with the answers govern the rest of the turn: set before the first answer
  // resumes it (trust removed here is not given to the turn's next call), put back if refused.
  // Written with the session config it comes from, so both outlive a restart.
  const retuned = next !== ctx.config && (await handle.updateTurnTools(turnId, turnToolsOf(ctx.agent, next), { [AAP_METADATA_KEY]: next }));
  let applied = 0;
  try {
    // Client results first: the turn resumes once the last pending call is answered.
    for (const a of answers) {
      if (a.kind !== 'tool') continue;
      const ref = await handle.inject({ kind: 'client-tool-result', callId: a.message.toolCallId, content: a.content, principal: ctx.principal });
      if (ref !== undefined && ref.turnId === snap.turnId) {
        ref.settled.then(
          (outcome) => run.follower.outcome(outcome),
          () => run.follower.stop('error'),
        );
      }
      applied++;
    }
    for (const a of answers) {
      if (a.kind !== 'permission') continue;
      const answer: { approved: boolean; reason?: string } = { approved: a.message.granted };
      if (a.message.reason !== undefined) answer.reason = a.message.reason;
      const result = await handle.answerApproval(a.approval.approvalId, answer, ctx.principal, 'aap');
      if (!result.ok) {
        if (result.code === 'approval.already_resolved') throw alreadyResolved(a.message.toolCallId, result.record, applied);
        if (result.code === 'approval.forbidden') throw new HttpError(403, result.code, result.message);
        throw new HttpError(400, 'tool.not_pending', result.message, { path: '/messages' });
      }
      applied++;
    }
  } catch (err) {
    // Nothing applied: the request changed nothing. Some answers applied: the turn runs on with
    // the settings they were sent with, so the config is what the turn uses.
    if (retuned && applied === 0) await handle.updateTurnTools(turnId, turnToolsOf(ctx.agent, ctx.config), { [AAP_METADATA_KEY]: ctx.config }).catch(() => false);
    else if (next !== ctx.config && applied > 0) ctx.configs.set(handle.id, next, { persisted: retuned });
    run.follower.stop('error');
    throw err;
  }
  // Only once every answer was taken: a refused request (403, 409) leaves the config as it was.
  // Written with the turn's turnTools.changed; were the turn not running (nothing to retune),
  // the next user message stores it (`isPersisted`).
  if (next !== ctx.config) ctx.configs.set(handle.id, next, { persisted: retuned });
  run.begin(snap.turnId);
  await run.finished;
}

function forbidden(toolCallId: string): HttpError {
  return new HttpError(403, 'approval.forbidden', `this principal may not answer the permission of tool call "${toolCallId}"; nothing of this request was applied`, {
    details: { toolCallId },
  });
}

function alreadyResolved(toolCallId: string, record: ApprovalRecord, applied = 0): HttpError {
  const r = record.resolution;
  const who = r === undefined ? 'unknown' : r.by.userId ?? r.by.personId ?? 'an unnamed principal';
  const decision = r?.decision ?? record.status;
  const reason = r?.reason === undefined ? '' : ` (reason: ${r.reason})`;
  return new HttpError(
    409,
    'approval.already_resolved',
    `tool call "${toolCallId}" (approval "${record.approvalId}") was already resolved: ${decision} by ${who} via ${r?.via ?? 'unknown'}` +
      `${r?.at === undefined ? '' : ` at ${r.at}`}${reason}; this answer changed nothing` +
      (applied > 0 ? ` (the ${applied} earlier answer(s) of this request were applied)` : ''),
    {
      details: {
        toolCallId,
        approvalId: record.approvalId,
        decision,
        ...(r === undefined ? {} : { via: r.via, at: r.at, by: r.by }),
      },
    },
  );
}

/* ------------------------------------------------------------------ the response */

interface Run {
  follower: ReturnType<typeof followTurn>;
  /** Start the response and follow this turn. */
  begin(turnId: string): void;
  finished: Promise<void>;
}

/**
 * Starts the response that follows a turn. `own`: the request id the user message of this
 * request carries; another message that joins the turn after it (double-texting `interrupt`)
 * takes the turn over, so this response ends there (`end_turn`) and the joining request's
 * response carries the rest. Messages of other requests that joined before this one's are not
 * this response's.
 */
function startRun(ctx: TurnRequestContext, afterSeq: number, known: { callId: string; side: CallSide; turnId: string }[], own?: string): Run {
  const { res, mode } = ctx;
  const sink = mode === 'none' ? jsonSink(res) : sseSink(res, ctx.heartbeatMs);
  // This request's own message seen yet (its turn.started, or its join): until then another
  // request's join is one that came before it (two joined while a tool ran), not a takeover.
  let ownSeen = own === undefined;
  const emit = (item: AapItem): void => {
    if (item.kind === 'user') {
      if (item.joined === true && item.request !== own) {
        if (ownSeen) follower.stop('end_turn');
        return;
      }
      ownSeen = true;
    }
    sink.item(item);
  };
  const projector = new AapProjector({
    granularity: mode === 'delta' ? 'delta' : 'whole',
    classify: ctx.classify,
    emit,
    knownCalls: known,
  });
  const requeue =
    own === undefined
      ? undefined
      : { waiting: () => !ownSeen, starts: (ev: Extract<SessionEvent, { type: 'turn.started' }>) => ev.input.metadata?.[AAP_REQUEST_KEY] === own };
  const follower = followTurn({ handle: ctx.handle, projector, afterSeq, ...(requeue === undefined ? {} : { requeue }) });
  let closed = false;
  let begun = false;
  /** Set once the follower stopped: how the turn's response ends. */
  let stopped: StopReason | undefined;
  const end = (reason: StopReason): void => {
    // An errored turn says what failed (the code and message the runtime reported), beside stopReason.
    if (!closed) sink.finish(reason, projector.unresolvedCalls(), extraFields(projector, reason === 'error' ? follower.error : undefined));
  };
  const onClose = (): void => {
    closed = true;
    // The client went: no turn_stop to write, but the heartbeat ends with the response.
    sink.close();
    follower.stop('end_turn');
  };
  res.once('close', onClose);
  // Before `begin` nothing is written: a refusal (4xx) is answered by the caller's error path.
  const finished = follower.done.then((reason) => {
    res.off('close', onClose);
    stopped = reason;
    if (begun) end(reason);
  });
  const leave = ctx.running.add((reason, why) => {
    follower.stop(reason, why);
    return finished;
  });
  void finished.then(leave);
  return {
    follower,
    begin(turnId) {
      if (closed) return;
      begun = true;
      sink.start();
      // Stopped while the answers were applied (the handler is closing): end the response now.
      if (stopped !== undefined) end(stopped);
      else follower.setTurnId(turnId);
    },
    finished,
  };
}

/* ------------------------------------------------------------------ helpers */

function pendingIds(snap: SessionSnapshot): string[] {
  return [...snap.pendingApprovals.map((a) => a.callId), ...snap.pendingClientCalls.map((c) => c.callId)];
}

/**
 * Text of a string or text-block content: every text block, an empty one too, joined by "\n"
 * (docs/transports/aap.md); other blocks are refused (the agent declares no image input).
 */
function textOf(content: string | AapContentBlock[], path: string): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  content.forEach((b, j) => {
    if (b.type === 'text' && typeof (b as { text?: unknown }).text === 'string') {
      texts.push(b.text);
      return;
    }
    throw new HttpError(
      400,
      'content.unsupported',
      b.type === 'text' ? 'a text block needs a string "text"' : `content blocks of type "${String(b.type)}" are not supported here (only "text")`,
      { path: `${path}/${j}` },
    );
  });
  return texts.join('\n');
}
