/**
 * The runtime options that shape a path but are not in a recording's registrations:
 * `reasoningTraces` and `limits`. Replay takes them as options; `reasoningTraces` is inferred
 * from the recording where it says (limits it cannot say: a turn that ran out of a budget is
 * named in the result's notes). Thinking the recording withheld (redacted or dropped) is never
 * shown in a replayed path, whatever mode the re-run used.
 */
import type { RuntimeLimits } from '../api.js';
import { REASONING_TRACES, type ReasoningTraces } from '../envelope/reasoning.js';
import { runtimeLimits } from '../host/input-checks.js';
import { DEFAULT_LIMITS } from '../limits.js';
import type { SessionPath } from './path.js';
import { ReplayError, type MidTurnEnd, type Recording } from './recording.js';

/** The reasoningTraces mode a replay ran with, and where it came from. */
export interface ReplayReasoningTraces {
  mode: ReasoningTraces;
  /** 'option': given; 'recording': inferred from it; 'default': the recording holds no thinking (the runtime's default). */
  source: 'option' | 'recording' | 'default';
}

/** What a replayed path shows instead of thinking text the recording withheld. */
export const WITHHELD_THINKING = '[thinking the recording withheld]';

/** Budget errors a turn settles with when it runs out of one of the runtime's limits, with the limit. */
const BUDGETS: Record<string, keyof RuntimeLimits> = {
  'turn.model_call_budget': 'maxModelCallsPerTurn',
  'turn.respond_retries': 'maxRespondRetries',
  'turn.free_text': 'maxFreeTextNudges',
  'turn.handoff_budget': 'maxHandoffsPerTurn',
};

const quoted = (xs: readonly string[]) => xs.map((x) => `"${x}"`).join(', ').replace(/, ([^,]*)$/, ' or $1');

/** Checks a reasoningTraces mode; throws a ReplayError naming it. */
export function checkReasoningTraces(mode: unknown): ReasoningTraces {
  if (typeof mode !== 'string' || !REASONING_TRACES.includes(mode as ReasoningTraces)) {
    throw new ReplayError('replay.options', `reasoningTraces must be ${quoted(REASONING_TRACES)}, not ${JSON.stringify(mode)}`);
  }
  return mode as ReasoningTraces;
}

/**
 * Checks runtime limits as the runtime does (its names, minimums and maximums: runtimeLimits), so
 * a limit the replay accepts never fails the re-run; throws a ReplayError naming the first bad one.
 */
export function checkLimits(limits: unknown): Partial<RuntimeLimits> {
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) {
    throw new ReplayError('replay.options', `limits must be an object of runtime limits (${Object.keys(DEFAULT_LIMITS).join(', ')}), not ${JSON.stringify(limits)}`);
  }
  try {
    runtimeLimits(limits);
  } catch (e) {
    throw new ReplayError('replay.options', e instanceof Error ? e.message : String(e));
  }
  return limits as Partial<RuntimeLimits>;
}

/**
 * The mode the recording was made with, where it says: reasoning-trace parts marked redacted →
 * 'redact'; reasoning-trace parts with text → 'keep'; thinking blocks in the model's responses
 * but no reasoning-trace part → 'drop'. No thinking at all: it cannot say (undefined).
 */
export function inferReasoningTraces(rec: Recording): ReasoningTraces | undefined {
  let redacted = false;
  let kept = false;
  for (const e of rec.events) {
    if (e.type !== 'part.received' || e.part.metadata.partType !== 'reasoning-trace') continue;
    if (e.part.metadata.redacted === true) redacted = true;
    else kept = true;
  }
  // A recording with both (its runtime was restarted with another mode) replays as the more private one.
  if (redacted) return 'redact';
  if (kept) return 'keep';
  const thought = rec.mailbox.some((m) => m.kind === 'assistant' && m.content.some((b) => b.type === 'thinking'));
  return thought ? 'drop' : undefined;
}

export function reasoningTracesFor(rec: Recording, given: unknown): ReplayReasoningTraces {
  if (given !== undefined) return { mode: checkReasoningTraces(given), source: 'option' };
  const inferred = inferReasoningTraces(rec);
  return inferred ? { mode: inferred, source: 'recording' } : { mode: 'keep', source: 'default' };
}

/**
 * The replayed path with every part text that is thinking the recording withheld (a thinking
 * block of its model responses that no recorded part published) replaced by WITHHELD_THINKING.
 */
export function withholdThinking(rec: Recording, path: SessionPath): SessionPath {
  const thinking = new Set<string>();
  for (const m of rec.mailbox) {
    if (m.kind !== 'assistant') continue;
    for (const b of m.content) if (b.type === 'thinking' && b.thinking !== '') thinking.add(b.thinking);
  }
  for (const e of rec.events) if (e.type === 'part.received' && typeof e.part.text === 'string') thinking.delete(e.part.text);
  if (thinking.size === 0) return path;
  return {
    ...path,
    turns: path.turns.map((t) => ({
      ...t,
      steps: t.steps.map((s) => (s.texts.some((x) => thinking.has(x)) ? { ...s, texts: s.texts.map((x) => (thinking.has(x) ? WITHHELD_THINKING : x)) } : s)),
    })),
  };
}

/**
 * Notes on what the replay could not know: an inferred reasoningTraces mode, turns that ran out of
 * a budget when no limits were given, a recording that ends mid-turn.
 */
export function replayNotes(rec: Recording, reasoning: ReplayReasoningTraces, limitsGiven: boolean, cut?: MidTurnEnd): string[] {
  const notes: string[] = [];
  if (cut) {
    notes.push(
      `turn ${cut.index} (${cut.turnId}): the recording ends mid-turn, in "${cut.state}" (not settled and waiting for nothing: its process stopped and the session was never recovered, or the turn was still running when it was read); the re-run went on from there, where the recording holds no further tool result or model output`,
    );
  }
  if (reasoning.source === 'recording') {
    const why = { keep: 'its reasoning-trace parts hold the thinking', redact: 'its reasoning-trace parts are redacted', drop: 'its model responses hold thinking but it has no reasoning-trace part' }[reasoning.mode];
    notes.push(`reasoningTraces "${reasoning.mode}" was inferred from the recording (${why}); give the recorded mode with the reasoningTraces option (--reasoning-traces) if it differs`);
  }
  if (!limitsGiven) {
    const index = new Map<string, number>();
    for (const e of rec.events) {
      if (e.type === 'turn.started' && !index.has(e.turnId)) index.set(e.turnId, index.size);
      if (e.type !== 'turn.settled' || !e.error) continue;
      if (!Object.hasOwn(BUDGETS, e.error.code)) continue;
      const limit = BUDGETS[e.error.code]!;
      notes.push(
        `turn ${index.get(e.turnId) ?? '?'} (${e.turnId}) settled on "${e.error.code}": it ran out of limits.${limit}, which the recording does not hold; replay with the limits it was recorded with (the limits option, --limits '{"${limit}": <n>}'); the default is ${DEFAULT_LIMITS[limit]}`,
      );
    }
  }
  return notes;
}
