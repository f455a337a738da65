/**
 * Replay: re-run a recorded session in a fresh runtime on a memory store, feeding it the
 * recorded user inputs, model outputs, tool results (results.ts), approval decisions and
 * client-tool results in the recorded order (drive.ts), and the tool settings and joined
 * messages that reached a turn while it ran, at their points (turn-points.ts); then compare the
 * two paths.
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
import type { ModelPort, RuntimeLimits, SessionStore } from '../api.js';
import type { ReasoningTraces } from '../envelope/reasoning.js';
import { createIdSource } from '../host/clock.js';
import { createScriptedModel } from '../models/scripted.js';
import type { ModelScript } from '../models/script.js';
import { createRegistries } from '../create-registries.js';
import type { Registries, ToolContext } from '../registries/types.js';
import { createRuntime } from '../runtime.js';
import { createMemoryStore } from '../stores/memory.js';
import type { MailboxEntry, SessionEvent } from '../types.js';
import { diffSessions, type PathDiff } from './diff.js';
import { drive, pointedModel } from './drive.js';
import { inferSetup } from './infer.js';
import { recordedArtifacts } from './artifacts.js';
import { registerRecordedSurfaces } from './surfaces.js';
import { extractPath, type SessionPath } from './path.js';
import { createRecordedModel, endedMidTurn, readRecording, type Recording } from './recording.js';
import { recordedResults, replayRegistries, type UnmatchedCall } from './results.js';
import { checkLimits, checkReasoningTraces, reasoningTracesFor, replayNotes, withholdThinking, type ReplayReasoningTraces } from './options.js';
import { turnPoints } from './turn-points.js';

export interface ReplayOptions {
  /**
   * Registers the part types, turn states, tools and actors the session ran with: the
   * application's own bootstrap, given the replay runtime's registries. Tool handlers
   * registered here are replaced by recorded results and never called. Default: inferred
   * from the recording (see infer.ts).
   */
  setup?: ((registries: Registries) => void | Promise<void>) | undefined;
  /** The model of the re-run. Default: the recorded model outputs (nothing is called). */
  model?: ModelPort | undefined;
  /**
   * The runtime limits the session was recorded with (a recording does not hold them; the
   * default is DEFAULT_LIMITS). A turn that ran out of a budget replays the same only with them.
   */
  limits?: { [K in keyof RuntimeLimits]?: RuntimeLimits[K] | undefined } | undefined;
  /**
   * The `reasoningTraces` the session was recorded with. Default: inferred from the recording
   * (redacted reasoning-trace parts: 'redact'; thinking but no reasoning-trace part: 'drop'),
   * else 'keep'. Whatever the mode, the paths never show thinking text the recording withheld.
   */
  reasoningTraces?: ReasoningTraces | undefined;
  /**
   * How tool results and approval decisions are matched to the re-run's calls: 'callId' (the
   * default with recorded model outputs, whose tool_use ids are the recorded ones) or
   * 'content' (tool and arguments within the turn; the default with another model).
   */
  match?: 'callId' | 'content' | undefined;
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
  unmatchedCalls: UnmatchedCall[];
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

/** Turn and approval ids in the order the recording created them; fresh ids after that. */
function recordedIds(rec: Recording): (prefix: string) => string {
  const turns = rec.events.filter((e) => e.type === 'turn.started').map((e) => e.turnId);
  // The order the model made the calls in, per turn: a tool_use id is unique within a turn, not
  // across turns (a script's fixed id used again), so it is keyed with its turn.
  const order = new Map<string, number>();
  const key = (turnId: string, callId: string) => `${turnId}\u0000${callId}`;
  for (const m of rec.mailbox) {
    if (m.kind !== 'assistant') continue;
    for (const b of m.content) if (b.type === 'tool_use' && !order.has(key(m.turnId, b.id))) order.set(key(m.turnId, b.id), order.size);
  }
  const approvals = [...rec.approvals]
    .sort((a, b) => (order.get(key(a.turnId, a.callId)) ?? Infinity) - (order.get(key(b.turnId, b.callId)) ?? Infinity))
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
  const points = turnPoints(rec);
  // Each served result is final; the tool settings changed while its recorded call ran are applied first.
  const handler = (def: { name: string }) => (args: unknown, ctx: ToolContext) => {
    const before = points.beforeResult(ctx.turnId, results.recordedCall(def.name, args, ctx));
    return before === undefined ? results.serve(def.name, args, ctx) : before.then(() => results.serve(def.name, args, ctx));
  };
  const registries = createRegistries();
  const setup = options.setup ?? inferSetup(rec);
  await setup(replayRegistries(registries, handler));
  registerRecordedSurfaces(registries.surfaceTemplates, rec);
  const replayStore = createMemoryStore();
  const rt = createRuntime({
    model: pointedModel(options.model ?? recordedModel!, points),
    store: replayStore,
    artifacts: recordedArtifacts(rec),
    registries,
    newId: recordedIds(rec),
    reasoningTraces: reasoningTraces.mode,
    // The recorded answers were accepted when they were given (the application's own
    // canAnswerApproval, which replay does not know, may admit a role rather than the session's
    // tenant): the re-run applies them as recorded, and only the driver answers here.
    canAnswerApproval: () => true,
    ...(limits ? { limits } : {}),
  });
  let stoppedEarly: string | undefined;
  let events: SessionEvent[];
  let mailbox: MailboxEntry[];
  try {
    stoppedEarly = await drive(rt, registries, rec, match, points);
  } finally {
    events = replayStore.readEvents(sessionId, 0);
    mailbox = replayStore.readMailbox(sessionId);
    await rt.close();
  }
  const recorded = extractPath(sessionId, rec.events, rec.mailbox);
  const cut = endedMidTurn(rec, registries.turnStates);
  if (cut) recorded.turns[cut.index]!.endsMidTurn = true;
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
    notes: [...replayNotes(rec, reasoningTraces, limits !== undefined, cut), ...points.notes()],
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
