/**
 * One model call: builds the request from the derived history, consumes the stream, and returns
 * what the response amounted to (a `ResponseSummary` for the machine to decide on).
 *
 * Contract:
 * - respond() parts stream as `part.delta` while a call is written; a call that yields no parts
 *   afterwards is taken back with `part.retracted`.
 * - A progress call (the actor keeps working: ack, thinking) is published as its block completes;
 *   a state change waits for the response's end (respond/ordering.ts) and is returned, unapplied.
 * - The response's mailbox records (the assistant message, every respond() call's tool result,
 *   "not run" results for tool uses a cut response never dispatches; a `refused` marker after a
 *   refusal) and its `model.usage` are committed here, in `written`, which the caller awaits
 *   after telling the machine.
 * - Interrupted (a double-texted message joined): what the cut response already applied is
 *   recorded, the rest never happened. Stopped (shutdown): nothing more is recorded.
 */
import { reasoningTracePart } from '../envelope/reasoning.js';
import { ModelError } from '../errors.js';
import type { ResponseSummary } from '../machines/actor.machine.js';
import type { ModelEvent, ModelRequest, StepCommit } from '../machines/ports.js';
import type { ActorDefinition } from '../registries/types.js';
import { compatRejection, MARK_WORK_COMPLETE_SUCCESS, MARK_WORK_COMPLETE_TOOL, RESPOND_TOOL_NAME, RespondRule, isCompatTool, type RespondResult } from '../respond/index.js';
import { compatTrackerOf, isCompatActor } from './compat-turn.js';
import { parseRespondBlock, ResponseOrder, type OrderedCall } from '../respond/ordering.js';
import { createRespondStreamParser } from '../respond/stream.js';
import type {
  ContentBlock,
  MailboxEntry,
  ModelStopReason,
  ModelTool,
  Part,
  RedactedThinkingBlock,
  SessionEvent,
  SessionEventBody,
  ThinkingBlock,
  ToolUseBlock,
  Usage,
} from '../types.js';
import { needsSurfaces, sessionOf, type HostCore } from './core.js';
import type { ActorTools } from './tool-catalog.js';
import { addUsage, RESPOND_OK, ZERO, type ActiveTurn } from './turn.js';
import { pairSafeEnd } from '../text.js';

type Accepted = Extract<RespondResult, { ok: true }>;

const ignoreWriteError = (): void => {};

export type ModelCallOutcome =
  | { kind: 'stopped' }
  | { kind: 'interrupted'; written: void | Promise<void> }
  | { kind: 'failed'; error: ModelError; written: void | Promise<void> }
  | {
      kind: 'response';
      summary: ResponseSummary;
      /** The state change the response asks for (applied by the caller once the machine agrees). */
      change?: { callId: string; result: Accepted };
      toolUses: ToolUseBlock[];
      written: void | Promise<void>;
    };

/** Stop reasons that leave the response's tool uses undispatched. */
const UNDISPATCHED = new Set(['max_tokens', 'model_context_window_exceeded', 'refusal']);

/**
 * A respond_to_user / mark_work_complete call as a respond() result (spec 003 compatibility).
 * `deferCompletion`: a mark_work_complete whose response is still streaming is only checked; it
 * completes the turn at the response's end, if the response is accepted (see callModel).
 */
export function compatCall(
  t: ActiveTurn,
  b: ToolUseBlock,
  actor: ActorDefinition,
  opts: { deferCompletion?: boolean } = {},
): { result: RespondResult; content: string } {
  // Input the adapter could not read as one JSON object never reaches the tracker (it would see
  // `{}`: a mark_work_complete summary silently lost), as for respond() and every other tool.
  if (b.duplicateKey !== undefined || b.inputError) {
    const message =
      b.duplicateKey !== undefined
        ? `the arguments of ${b.name} name the key at ${b.duplicateKey} twice; call it again naming each key once`
        : `the arguments of ${b.name} were not valid JSON (${b.inputError}); call it again with a complete JSON object`;
    const rule = b.duplicateKey !== undefined ? RespondRule.jsonDuplicateKey : RespondRule.jsonInvalid;
    // In spec 003's result form, as the tracker's own refusals ({"success":false,"error":...}).
    const result = compatRejection(rule, message, b.duplicateKey ?? '');
    return { result, content: result.message };
  }
  const tracker = compatTrackerOf(t, actor);
  if (b.name === MARK_WORK_COMPLETE_TOOL && opts.deferCompletion) {
    // Applied at the response's end (in callModel), once the response is accepted: checked only.
    const c = tracker.checkComplete(b.input);
    if (!c.ok) return trackerRefusal(b.name, c.message);
    return { result: { ok: true, call: { parts: [], turnState: 'complete' }, events: [] }, content: MARK_WORK_COMPLETE_SUCCESS };
  }
  const r = tracker.onCall(b.name, b.input);
  if (!r.ok) return trackerRefusal(b.name, r.message);
  const parts: Part[] = [];
  for (const e of r.events) if (e.type === 'part.received') parts.push(e.part);
  return { result: { ok: true, call: { parts, turnState: r.completed ? 'complete' : 'awaiting' }, events: [] }, content: r.content };
}

/** A call the compatibility tracker refused: its message, already in spec 003's result form, is the tool result. */
function trackerRefusal(tool: string, message: string): { result: RespondResult; content: string } {
  return { result: { ok: false, violations: [{ rule: `compat:${tool}`, path: '', message }], message }, content: message };
}

/**
 * Spec 003: the turn stopped without mark_work_complete and its nudges are spent: complete it
 * with the last respond_to_user text (else the final assistant text).
 */
export function compatFallback(t: ActiveTurn, actor: ActorDefinition): { callId: string; result: Accepted } | undefined {
  const callId = `${t.turnId}:fallback`;
  const { result } = compatCall(t, { type: 'tool_use', id: callId, name: 'mark_work_complete', input: {} }, actor);
  return result.ok ? { callId, result } : undefined;
}

/** A refused call's violations in one line, at most 500 characters. */
function rejectionSummary(r: Extract<RespondResult, { ok: false }>): string {
  const line = r.violations.map((v) => `${v.path === '' ? '(the call)' : v.path}: ${v.message}`).join('; ');
  return line.length > 500 ? `${line.slice(0, pairSafeEnd(line, 497))}...` : line;
}

interface Thought {
  block: ThinkingBlock | RedactedThinkingBlock;
  /** How many respond() (or compatibility) calls of the response came before it. */
  before: number;
}

/**
 * The assistant message a cut response leaves: its applied calls, each after the thinking blocks
 * that came before it, unchanged (with thinking on, the API refuses a history whose last
 * assistant message does not start with them).
 */
function appliedContent(calls: readonly OrderedCall[], thoughts: readonly Thought[] | null): ContentBlock[] {
  const out: ContentBlock[] = [];
  let next = 0;
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i]!;
    if (!c.now) continue;
    while (thoughts !== null && next < thoughts.length && thoughts[next]!.before <= i) out.push(thoughts[next++]!.block);
    out.push(c.block);
  }
  return out;
}

/** The events of an accepted call: its parts in order (the caller adds the turn-state change). */
export function partEvents(core: HostCore, t: ActiveTurn, actor: string, result: Accepted, callId: string): SessionEvent[] {
  const { call } = result;
  const events: SessionEvent[] = [];
  for (let i = 0; i < call.parts.length; i++) {
    const part = call.parts[i]!;
    t.parts.push(part);
    events.push(core.journal.partReceived(t.turnId, callId, i, part, call.turnState, actor));
  }
  return events;
}

export async function callModel(core: HostCore, t: ActiveTurn, actorDef: ActorDefinition, tools: ActorTools): Promise<ModelCallOutcome> {
  const { journal, deps } = core;
  const actorName = actorDef.name;
  const state = core.machine.state();
  const mailbox = await journal.mailbox();
  const req: ModelRequest = {
    sessionId: core.id,
    turnId: t.turnId,
    actor: actorName,
    system: tools.system,
    messages: journal.history(actorName).update(mailbox),
    tools: tools.modelTools as ModelTool[],
    // compat: spec 003 assistant text is internal and allowed, so the model may stop (and be nudged).
    toolChoice: actorDef.thinking || isCompatActor(actorDef) ? 'auto' : 'any',
    ...(actorDef.model ? { model: actorDef.model } : {}),
    ...(actorDef.maxTokens ? { maxTokens: actorDef.maxTokens } : {}),
    ...(actorDef.thinking ? { thinking: actorDef.thinking } : {}),
  };
  const abort = core.modelAbort();
  t.abort = abort;
  t.interrupted = false;
  // Tools an interrupt cancelled: the next tools of the turn get a fresh signal.
  if (t.toolAbort?.signal.aborted) {
    t.toolAbort = undefined;
    t.signalCalls = 0;
  }
  const compat = isCompatActor(actorDef);
  const order = new ResponseOrder(deps.registries.turnStates, compat);
  const toolUses: ToolUseBlock[] = [];
  let freeText = '';
  let stopReason = 'end_turn';
  let usage: Usage = ZERO;
  let content: ContentBlock[] = [];
  // The response's finished thinking blocks, each with how many respond() calls came before it:
  // a cut response keeps those before its applied calls (null until the first: most have none).
  let thoughts: Thought[] | null = null;
  const respondBlocks = new Map<number, string>();
  const streams = new Map<number, { callId: string; parser: ReturnType<typeof createRespondStreamParser> }>();
  // respond() calls whose part.delta events went out: one that yields no parts is retracted.
  // Created at the first delta (a response that arrives whole allocates nothing).
  let streamed: Set<string> | null = null;
  const retractions = (kept: readonly OrderedCall[], reason: 'rejected' | 'interrupted' | 'failed'): SessionEvent[] => {
    const out: SessionEvent[] = [];
    if (streamed === null) return out;
    for (const callId of streamed) {
      if (!kept.some((k) => k.block.id === callId)) out.push(journal.event(t.turnId, { type: 'part.retracted', callId, reason }));
    }
    return out;
  };
  /**
   * A response cut short (interrupted, or failed mid-stream): what it had already applied (its
   * ack reached the user) is recorded, so the model later sees what the user saw; the rest of the
   * response never happened, and its streamed calls are taken back.
   */
  const keepApplied = (reason: 'interrupted' | 'failed'): void | Promise<void> => {
    const kept = order.applied();
    const retracted = retractions(kept, reason);
    if (kept.length === 0) return retracted.length ? journal.commit({ events: retracted }) : undefined;
    const at = deps.clock.iso();
    const entries: MailboxEntry[] = [{ kind: 'assistant', turnId: t.turnId, at, actor: actorName, content: appliedContent(order.calls, thoughts) }];
    for (const a of kept) entries.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: a.block.id, tool: a.block.name, content: a.content, isError: false });
    return journal.commit({ mailbox: entries, ...(retracted.length ? { events: retracted } : {}) });
  };
  // Parts earlier calls published (ack, thinking) reach subscribers before the next call starts.
  // Other buffered records (a tool's result) ride the next write.
  journal.flushParts();
  try {
    for await (const ev of deps.model.stream(req, abort.signal) as AsyncIterable<ModelEvent>) {
      switch (ev.type) {
        case 'block.start':
          if (ev.block.type === 'tool_use' && ev.block.name === RESPOND_TOOL_NAME) respondBlocks.set(ev.index, ev.block.id);
          break;
        case 'input.delta': {
          // The incremental parser is created on the first chunk: a call that arrives whole costs nothing.
          let st = streams.get(ev.index);
          if (!st) {
            const callId = respondBlocks.get(ev.index);
            if (callId === undefined) break;
            st = {
              callId,
              parser: createRespondStreamParser((d) => {
                if (!d.text && d.partType === undefined) return;
                (streamed ??= new Set()).add(callId);
                const body: SessionEventBody = d.partType === undefined
                  ? { type: 'part.delta', callId, index: d.index, text: d.text }
                  : { type: 'part.delta', callId, index: d.index, partType: d.partType, text: d.text };
                // Not awaited: a failed write fails the response's own commit after it.
                journal.commit({ events: [journal.event(t.turnId, body)] })?.catch(ignoreWriteError);
              }),
            };
            streams.set(ev.index, st);
          }
          st.parser.push(ev.partialJson);
          break;
        }
        case 'block.stop': {
          const b = ev.block;
          if (b.type === 'tool_use') {
            streams.get(ev.index)?.parser.end();
            if (b.name === RESPOND_TOOL_NAME || (compat && isCompatTool(b.name))) {
              // An a2ui-surface part is checked against the session's live surfaces (surfaces:live).
              if (b.name === RESPOND_TOOL_NAME && needsSurfaces((b.input as { parts?: unknown } | null)?.parts)) await journal.liveSurfaces();
              const { result, content: ok } = b.name === RESPOND_TOOL_NAME ? { result: parseRespondBlock(deps.parser, b, actorDef, sessionOf(core)), content: RESPOND_OK } : compatCall(t, b, actorDef, { deferCompletion: true });
              const call = order.add(b, result, ok);
              // A progress call applies at once: its parts reach subscribers now.
              if (call.now) await publishProgress(core, t, actorName, call.result as Accepted, b.id, state);
            } else toolUses.push(b);
          } else if (b.type === 'thinking' || b.type === 'redacted_thinking') {
            (thoughts ??= []).push({ block: b, before: order.calls.length });
            if (b.type === 'redacted_thinking') break;
            const part = reasoningTracePart(b.thinking, deps.reasoningTraces ?? 'keep');
            if (part === undefined) break;
            t.parts.push(part);
            // Each thinking block is its own part: `<turnId>:thinking:<n>`, n counting the turn's
            // reasoning traces so far (t.parts survives a restart, so n does too).
            let n = 0;
            for (const p of t.parts) if (p.metadata.partType === 'reasoning-trace') n++;
            const callId = `${t.turnId}:thinking:${n}`;
            await journal.commit({ events: [journal.partReceived(t.turnId, callId, 0, part, state, actorName)] });
          } else if (b.type === 'text') freeText += b.text;
          break;
        }
        case 'message.stop':
          stopReason = ev.stopReason;
          usage = ev.usage;
          content = ev.content;
          break;
        default:
          break;
      }
    }
  } catch (err) {
    t.abort = null;
    // Stopped mid-call (shutdown, deletion): record nothing more; recover() resumes the turn.
    if (core.closed) return { kind: 'stopped' };
    if (err instanceof ModelError && err.code === 'model.aborted' && t.interrupted) return { kind: 'interrupted', written: keepApplied('interrupted') };
    const error = err instanceof ModelError ? err : new ModelError('model.unknown', err instanceof Error ? err.message : String(err), { cause: err });
    return { kind: 'failed', error, written: keepApplied('failed') };
  }
  t.abort = null;
  // A message joined after the call's last abort check: this response never saw it.
  if (t.interrupted) return { kind: 'interrupted', written: keepApplied('interrupted') };
  t.usage = addUsage(t.usage, usage);

  // Spec 003: assistant text is internal; it is the fallback an incomplete turn delivers, and what
  // a mark_work_complete of this response delivers when no respond_to_user came before it.
  const tracker = compat ? compatTrackerOf(t, actorDef) : undefined;
  tracker?.onAssistantText(freeText);
  let { change: deferred, rejected } = order.finish(toolUses);
  if (tracker !== undefined && deferred !== undefined) {
    // The response is accepted: its mark_work_complete completes the turn now, or is refused
    // (nothing to deliver) as any call the model can make again; then a later one of the same
    // response, refused only because that one came first, counts in its place.
    let call: OrderedCall | undefined = deferred;
    deferred = undefined;
    while (call !== undefined) {
      const counted = !call.result.ok;
      const done = compatCall(t, call.block, actorDef);
      call.result = done.result;
      call.content = done.content;
      if (done.result.ok) {
        deferred = call as OrderedCall & { result: Accepted };
        if (counted) rejected--;
        break;
      }
      if (!counted) rejected++;
      const from: number = order.calls.indexOf(call) + 1;
      call = order.calls.slice(from).find((c) => c.block.name === MARK_WORK_COMPLETE_TOOL && !c.result.ok && c.result.violations[0]?.rule === RespondRule.stateChangeOnce);
    }
  }
  const at = deps.clock.iso();
  const mailbox2: MailboxEntry[] = [{ kind: 'assistant', turnId: t.turnId, at, actor: actorName, content }];
  for (const a of order.calls) {
    const r = a.result;
    if (!r.ok) t.lastRejection = rejectionSummary(r);
    mailbox2.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: a.block.id, tool: a.block.name, content: r.ok ? a.content : r.message, isError: !r.ok });
  }
  if (UNDISPATCHED.has(stopReason)) {
    // These calls are never dispatched; the history must still answer each tool_use or the next request is refused.
    for (const u of toolUses) {
      mailbox2.push({ kind: 'tool_result', turnId: t.turnId, at, actor: actorName, callId: u.id, tool: u.name, content: `Not run: the response ended (${stopReason}) before ${u.name} could be called.`, isError: true });
    }
  }
  // Claude's guidance: after a refusal, reset the context before continuing. The turn stays in
  // the mailbox; this marker leaves the whole turn out of every later request (machines/mailbox.ts).
  if (stopReason === 'refusal') mailbox2.push({ kind: 'refused', turnId: t.turnId, at, actor: actorName });
  // Calls that will become parts: the accepted ones.
  const events = retractions(order.accepted(), 'rejected');
  events.push(journal.modelUsage(t.turnId, actorName, usage, stopReason as ModelStopReason));
  const step: StepCommit = { events, mailbox: mailbox2 };
  const change: { callId: string; result: Accepted } | undefined = deferred ? { callId: deferred.block.id, result: deferred.result } : undefined;
  const applied = order.calls.length - rejected;
  const fallback = tracker !== undefined && order.calls.length === 0 && tracker.userResponse !== undefined && !tracker.completed;
  const summary: ResponseSummary = {
    toolUses: UNDISPATCHED.has(stopReason) ? 0 : toolUses.length,
    rejected,
    applied,
    freeText: freeText !== '',
    stopReason,
    ...(compat ? { compat: true } : {}),
    ...(fallback ? { fallback: 'complete' } : {}),
  };
  if (change) summary.change = requestedChange(core, change.result);
  return { kind: 'response', summary, ...(change ? { change } : {}), toolUses, written: journal.commit(step) };
}

/** A progress call: its parts, then respond()'s own `turnState.changed` (the state it keeps). */
async function publishProgress(core: HostCore, t: ActiveTurn, actor: string, result: Accepted, callId: string, state: string): Promise<void> {
  const events = partEvents(core, t, actor, result, callId);
  events.push(core.journal.stateChanged(t.turnId, state, result.call.turnState, actor));
  await core.journal.commit({ events });
}

/** The state change an accepted call asks for, with the receiving actor's bounds for a hand-off. */
export function requestedChange(core: HostCore, result: Accepted): NonNullable<ResponseSummary['change']> {
  const { call } = result;
  const receiver = call.passTo ? core.deps.registries.actors.get(call.passTo) : undefined;
  return {
    to: call.turnState,
    ...(call.passTo ? { passTo: call.passTo } : {}),
    ...(receiver ? { limits: boundsOf(core, receiver) } : {}),
  };
}

/** An actor's bounds for its turn: its own, else the runtime's. */
export function boundsOf(core: HostCore, actor: ActorDefinition) {
  return {
    maxModelCalls: actor.maxModelCalls ?? core.deps.limits.maxModelCallsPerTurn,
    maxRespondRetries: actor.maxRespondRetries ?? core.deps.limits.maxRespondRetries,
  };
}
