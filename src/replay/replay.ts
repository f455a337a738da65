/**
 * Replay: re-run a recorded session in a fresh runtime on a memory store, feeding it the
 * recorded user inputs, model outputs, tool results, approval decisions and client-tool
 * results, then compare the two paths.
 *
 * - `replaySession` plays the recorded model outputs back (no model is called) and serves
 *   every tool call its recorded result (no handler is called): the same registrations must
 *   produce the same path. A changed policy, registry or runtime shows up as a divergence.
 * - `replayWithScript` / `replaySession({ model })` run the recorded user inputs against
 *   another model (a new ScriptedModel script, a new prompt, a real model); tool results and
 *   approval decisions are matched to the new calls by tool and arguments within the turn.
 *
 * Ids are reproduced (turn and approval ids come out in the recorded order), so the two
 * sessions can be read side by side.
 */
import type { RuntimeLimits } from '../api.js';
import type { ReasoningTraces } from '../envelope/reasoning.js';
import { createIdSource } from '../host/clock.js';
import type { ModelPort, SessionHandle, SessionStore } from '../api.js';
import { createScriptedModel } from '../models/scripted.js';
import type { ModelScript } from '../models/script.js';
import { createRegistries } from '../create-registries.js';
import type { Registries, ToolContext, ToolDefinition, ToolRegistryApi } from '../registries/types.js';
import { createRuntime } from '../runtime.js';
import { createMemoryStore } from '../stores/memory.js';
import type { ApprovalRecord, ClientTool, Envelope, ExecutionRecord, MailboxEntry, SessionEvent } from '../types.js';
import { diffSessions, type PathDiff } from './diff.js';
import { inferSetup } from './infer.js';
import { recordedArtifacts } from './artifacts.js';
import { registerRecordedSurfaces } from './surfaces.js';
import { extractPath, type SessionPath } from './path.js';
import { createRecordedModel, injectionEntries, readRecording, type Recording } from './recording.js';
import { checkLimits, checkReasoningTraces, reasoningTracesFor, replayNotes, withholdThinking, type ReplayReasoningTraces } from './options.js';

export interface ReplayOptions {
  /**
   * Registers the part types, turn states, tools and actors the session ran with: the
   * application's own bootstrap, given the replay runtime's registries. Tool handlers
   * registered here are replaced by recorded results and never called. Default: inferred
   * from the recording (see infer.ts).
   */
  setup?: (registries: Registries) => void | Promise<void>;
  /** The model of the re-run. Default: the recorded model outputs (nothing is called). */
  model?: ModelPort;
  /**
   * The runtime limits the session was recorded with (a recording does not hold them; the
   * default is DEFAULT_LIMITS). A turn that ran out of a budget replays the same only with them.
   */
  limits?: Partial<RuntimeLimits>;
  /**
   * The `reasoningTraces` the session was recorded with. Default: inferred from the recording
   * (redacted reasoning-trace parts: 'redact'; thinking but no reasoning-trace part: 'drop'),
   * else 'keep'. Whatever the mode, the paths never show thinking text the recording withheld.
   */
  reasoningTraces?: ReasoningTraces;
  /**
   * How tool results and approval decisions are matched to the re-run's calls: 'callId' (the
   * default with recorded model outputs, whose tool_use ids are the recorded ones) or
   * 'content' (tool and arguments within the turn; the default with another model).
   */
  match?: 'callId' | 'content';
}

export interface ReplayResult {
  sessionId: string;
  recorded: SessionPath;
  replayed: SessionPath;
  diff: PathDiff;
  /** Model calls answered from the recording (0 when another model was used). */
  recordedModelCalls: number;
  /** Tool calls served a recorded result. */
  servedResults: number;
  /** Tool calls of the re-run with no recorded result (each got an error result). */
  unmatchedCalls: { turnId: string; tool: string; callId: string }[];
  /** Set when the re-run stopped before the recording's last turn, and why. */
  stoppedEarly?: string;
  /** The reasoningTraces mode of the re-run, and whether it was given or inferred. */
  reasoningTraces: ReplayReasoningTraces;
  /**
   * What the replay could not know from the recording and may explain a divergence: an
   * inferred reasoningTraces mode, a turn that ran out of a budget when no limits were given.
   */
  notes: string[];
  /** The re-run's event log and mailbox (the session has the recorded id). */
  events: SessionEvent[];
  mailbox: MailboxEntry[];
}

const TOOL_FAILED = /^tool "[^"]*" failed: /;

/** A tool result served from the recording: the router turns the message into the same error result. */
class RecordedToolError extends Error {}

interface ToolResultSource {
  serve(tool: string, args: unknown, ctx: ToolContext): unknown;
  served: number;
  unmatched: { turnId: string; tool: string; callId: string }[];
}

function recordedResults(rec: Recording, match: 'callId' | 'content'): ToolResultSource {
  const byCall = new Map<string, ExecutionRecord>();
  // A retried call logs one record per attempt; its last one is what the call returned.
  for (const x of rec.executions) byCall.set(x.callId, x);
  const finals = new Set(byCall.values());
  const mailboxResults = new Map<string, Extract<MailboxEntry, { kind: 'tool_result' }>>();
  for (const m of rec.mailbox) if (m.kind === 'tool_result') mailboxResults.set(m.callId, m);
  const used = new Set<ExecutionRecord>();
  const src: ToolResultSource = {
    served: 0,
    unmatched: [],
    serve(tool, args, ctx) {
      let x: ExecutionRecord | undefined;
      if (match === 'callId') x = byCall.get(ctx.callId);
      else {
        const argJson = JSON.stringify(args ?? null);
        const open = rec.executions.filter((e) => e.turnId === ctx.turnId && e.tool === tool && finals.has(e) && !used.has(e));
        x = open.find((e) => JSON.stringify(e.args ?? null) === argJson) ?? open[0];
      }
      if (x) {
        used.add(x);
        src.served++;
        const shown = match === 'callId' ? mailboxResults.get(ctx.callId) : undefined;
        if (x.isError) {
          let message = shown?.content;
          if (message === undefined) {
            try {
              message = String((JSON.parse(x.result) as { error?: unknown }).error ?? x.result);
            } catch {
              message = x.result;
            }
          }
          throw new RecordedToolError(message.replace(TOOL_FAILED, ''));
        }
        if (x.resultTruncated) return shown?.content ?? x.result;
        return JSON.parse(x.result) as unknown;
      }
      // A call that ran but never logged its execution (its outcome was reported unknown after a restart).
      const shown = match === 'callId' ? mailboxResults.get(ctx.callId) : undefined;
      if (shown) {
        src.served++;
        if (shown.isError) throw new RecordedToolError(shown.content.replace(TOOL_FAILED, ''));
        return shown.content;
      }
      src.unmatched.push({ turnId: ctx.turnId, tool, callId: ctx.callId });
      throw new Error(`replay: the recording holds no result for this call of ${tool} in turn ${ctx.turnId}`);
    },
  };
  return src;
}

/** The registries as `setup` sees them: every tool registered gets the recorded-result handler. */
function replayRegistries(registries: Registries, results: ToolResultSource): Registries {
  const tools = new Proxy(registries.tools, {
    get(target, prop) {
      if (prop === 'register') {
        return (def: ToolDefinition) =>
          target.register({ ...def, handler: (args: unknown, ctx: ToolContext) => results.serve(def.name, args, ctx) } as ToolDefinition);
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as ToolRegistryApi;
  return { ...registries, tools };
}

/** Turn and approval ids in the order the recording created them; fresh ids after that. */
function recordedIds(rec: Recording): (prefix: string) => string {
  const turns = rec.events.filter((e) => e.type === 'turn.started').map((e) => e.turnId);
  const order = new Map<string, number>();
  for (const m of rec.mailbox) {
    if (m.kind !== 'assistant') continue;
    for (const b of m.content) if (b.type === 'tool_use' && !order.has(b.id)) order.set(b.id, order.size);
  }
  const approvals = [...rec.approvals]
    .sort((a, b) => (order.get(a.callId) ?? Infinity) - (order.get(b.callId) ?? Infinity))
    .map((a) => a.approvalId);
  const queues: Record<string, string[]> = { turn: turns, appr: approvals };
  const fresh = createIdSource();
  return (prefix) => queues[prefix]?.shift() ?? fresh(prefix);
}

/** Re-run a recorded session (see the module comment). */
export async function replaySession(store: SessionStore, sessionId: string, options: ReplayOptions = {}): Promise<ReplayResult> {
  const limits = options.limits === undefined ? undefined : checkLimits(options.limits);
  if (options.reasoningTraces !== undefined) checkReasoningTraces(options.reasoningTraces);
  const rec = await readRecording(store, sessionId);
  const reasoningTraces = reasoningTracesFor(rec, options.reasoningTraces);
  const match = options.match ?? (options.model ? 'content' : 'callId');
  const recordedModel = options.model ? undefined : createRecordedModel(rec);
  const results = recordedResults(rec, match);
  const registries = createRegistries();
  const setup = options.setup ?? inferSetup(rec);
  await setup(replayRegistries(registries, results));
  registerRecordedSurfaces(registries.surfaceTemplates, rec);
  const replayStore = createMemoryStore();
  const rt = createRuntime({
    model: options.model ?? recordedModel!,
    store: replayStore,
    artifacts: recordedArtifacts(rec),
    registries,
    newId: recordedIds(rec),
    reasoningTraces: reasoningTraces.mode,
    ...(limits ? { limits } : {}),
  });
  let stoppedEarly: string | undefined;
  let events: SessionEvent[];
  let mailbox: MailboxEntry[];
  try {
    stoppedEarly = await drive(rt, rec, match);
  } finally {
    events = replayStore.readEvents(sessionId, 0);
    mailbox = replayStore.readMailbox(sessionId);
    await rt.close();
  }
  const recorded = extractPath(sessionId, rec.events, rec.mailbox);
  // Thinking the recording withheld stays withheld, whatever mode the re-run used.
  const replayed = withholdThinking(rec, extractPath(sessionId, events, mailbox));
  const result: ReplayResult = {
    sessionId,
    recorded,
    replayed,
    diff: diffSessions(recorded, replayed),
    recordedModelCalls: recordedModel?.calls ?? 0,
    servedResults: results.served,
    unmatchedCalls: results.unmatched,
    reasoningTraces,
    notes: replayNotes(rec, reasoningTraces, limits !== undefined),
    events,
    mailbox,
  };
  if (stoppedEarly) result.stoppedEarly = stoppedEarly;
  return result;
}

/** Run the recorded user inputs against a new ScriptedModel script and compare the paths. */
export async function replayWithScript(
  store: SessionStore,
  sessionId: string,
  script: ModelScript,
  options: Omit<ReplayOptions, 'model'> = {},
): Promise<ReplayResult> {
  return replaySession(store, sessionId, { ...options, model: createScriptedModel(script, { name: 'replay-script' }) });
}

type ReplayRuntime = ReturnType<typeof createRuntime>;

/** Feed the recorded turns to the re-run; returns why it stopped early, if it did. */
async function drive(rt: ReplayRuntime, rec: Recording, match: 'callId' | 'content'): Promise<string | undefined> {
  const s = await rt.createSession({
    id: rec.record.id,
    actor: rec.record.actor,
    doubleTexting: 'queue',
    ...(rec.record.tenantId !== undefined ? { tenantId: rec.record.tenantId } : {}),
    ...(rec.record.metadata ? { metadata: rec.record.metadata } : {}),
  });
  const starts = rec.events.filter((e): e is Extract<SessionEvent, { type: 'turn.started' }> => e.type === 'turn.started');
  const usedApprovals = new Set<ApprovalRecord>();
  const usedClient = new Set<string>();
  const usedInjections = new Set<MailboxEntry>();
  const clientCalls = new Map<string, SessionEvent[]>();
  for (const e of rec.events) {
    if (e.type !== 'tool.called' || e.side !== 'client') continue;
    const list = clientCalls.get(e.turnId);
    if (list) list.push(e);
    else clientCalls.set(e.turnId, [e]);
  }
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i]!;
    const clientTools: ClientTool[] = [];
    for (const e of clientCalls.get(start.turnId) ?? []) {
      if (e.type === 'tool.called' && e.side === 'client' && !clientTools.some((c) => c.name === e.tool)) {
        clientTools.push({ name: e.tool, description: `${e.tool} (client-side, replayed)`, parameters: { type: 'object' } });
      }
    }
    const standing = [...new Set(rec.approvals.filter((a) => a.turnId === start.turnId && a.policyResult.source === 'standing').map((a) => a.tool))];
    const ref = await s.send(start.input, {
      ...(start.input.principal ? { principal: start.input.principal } : {}),
      ...(clientTools.length ? { clientTools } : {}),
      ...(standing.length ? { standingApprovals: standing } : {}),
    });
    await ref.settled;
    for (;;) {
      // The session says whether the turn waits, and for what; a turn that ended is done.
      const snap = await s.snapshot();
      if (snap.held === undefined || snap.turnId !== ref.turnId) break;
      const turnId = ref.turnId;
      const answers: (() => Promise<unknown>)[] = [];
      for (const p of snap.pendingApprovals) {
        const recorded = findApproval(rec, p, start.turnId, match, usedApprovals);
        if (!recorded?.resolution) continue;
        usedApprovals.add(recorded);
        const r = recorded.resolution;
        answers.push(() => s.answerApproval(p.approvalId, { approved: r.decision === 'approved', ...(r.reason ? { reason: r.reason } : {}) }, r.by, r.via));
      }
      for (const c of snap.pendingClientCalls) {
        const recorded = findClientResult(rec, c, start.turnId, match, usedClient);
        if (!recorded) continue;
        usedClient.add(recorded.callId);
        answers.push(() => s.inject({ kind: 'client-tool-result', callId: c.callId, content: recorded.content, isError: recorded.isError }));
      }
      let waiting = snap.pendingApprovals.length + snap.pendingClientCalls.length;
      let injection: string | undefined;
      // A held state that resumes on a named injection (a peer's envelope, a consumer state):
      // the injection is in the mailbox as `[<resumeOn>] <json>`.
      const resumeOn = snap.held.resumeOn;
      if (waiting === 0 && resumeOn !== 'approval-response') {
        waiting = 1;
        injection = resumeOn;
        const injected = findInjection(rec, start.turnId, resumeOn, usedInjections);
        if (injected) {
          usedInjections.add(injected.entry);
          answers.push(() =>
            s.inject(resumeOn === 'peer-envelope' ? { kind: 'peer-envelope', envelope: injected.payload as Envelope } : { kind: 'resume', resumeOn, payload: injected.payload }),
          );
        }
      }
      if (waiting === 0 || answers.length < waiting) {
        // The recording itself ends here, waiting: the re-run is faithful.
        if (i === starts.length - 1 && !rec.events.some((e) => e.type === 'turn.settled' && e.turnId === start.turnId)) return undefined;
        const missing =
          injection !== undefined ? `no "${injection}" injection to resume it`
          : waiting ? `no answer for ${waiting - answers.length} of its ${waiting} pending call(s)` : 'no answer for it';
        return `turn ${i} (${turnId}) stopped in "${snap.state}" and the recording holds ${missing}`;
      }
      const stopped = nextStop(s, turnId, snap.lastSeq);
      for (const a of answers) {
        const r = (await a()) as { ok?: boolean; code?: string; message?: string } | undefined;
        if (r && r.ok === false) return `turn ${i} (${turnId}): the recorded answer was refused (${r.code}: ${r.message})`;
      }
      await stopped;
    }
  }
  await s.idle();
  return undefined;
}

function findApproval(rec: Recording, pending: ApprovalRecord, turnId: string, match: 'callId' | 'content', used: Set<ApprovalRecord>): ApprovalRecord | undefined {
  if (match === 'callId') return rec.approvals.find((a) => a.callId === pending.callId && !used.has(a));
  const open = rec.approvals.filter((a) => a.turnId === turnId && a.tool === pending.tool && !used.has(a) && a.resolution);
  const argJson = JSON.stringify(pending.args ?? null);
  return open.find((a) => JSON.stringify(a.args ?? null) === argJson) ?? open[0];
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

function findClientResult(
  rec: Recording,
  pending: { callId: string; tool: string },
  turnId: string,
  match: 'callId' | 'content',
  used: Set<string>,
): Extract<MailboxEntry, { kind: 'tool_result' }> | undefined {
  for (const m of rec.mailbox) {
    if (m.kind !== 'tool_result' || used.has(m.callId)) continue;
    if (match === 'callId' ? m.callId === pending.callId : m.turnId === turnId && m.tool === pending.tool) return m;
  }
  return undefined;
}

/** Resolves when the turn next stops: settled, or held again (as the session's snapshot says). */
function nextStop(s: Pick<SessionHandle, 'events' | 'snapshot'>, turnId: string, afterSeq: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      resolve();
      queueMicrotask(() => sub.unsubscribe());
    };
    const sub = s.events(afterSeq).subscribe({
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
}
