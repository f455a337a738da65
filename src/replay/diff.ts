/**
 * Differences between two session paths. Turns are compared by position; within a turn,
 * steps in order and, in each step, the actor, part types, turn-state changes, tools,
 * approvals, tool outcomes and hand-offs. The first divergence of a turn is reported (later
 * steps of that turn usually differ only because of it); part texts are compared only where
 * the structure is the same. `first` is the earliest divergence of the session. A recorded turn
 * the recording ends in the middle of (`endsMidTurn`) is compared as far as it goes, and then
 * named as such (`ended`): what the re-run did past the recording's end is no divergence of the model.
 */
import type { PathStep, SessionPath, TurnPath } from './path.js';

export type DivergenceField =
  | 'turn'
  | 'input'
  | 'step'
  | 'actor'
  | 'joined'
  | 'parts'
  | 'states'
  | 'tools'
  | 'approvals'
  | 'results'
  | 'handoffs'
  | 'finalizedBy'
  | 'ended'
  | 'texts';

export interface Divergence {
  /** 0-based turn index. */
  turn: number;
  /** 0-based step (model call) within the turn; null for turn-level differences. */
  step: number | null;
  field: DivergenceField;
  expected: unknown;
  actual: unknown;
  message: string;
}

export interface PathDiff {
  identical: boolean;
  /** The earliest divergence, when there is one. */
  first?: Divergence;
  /** At most one structural divergence per turn, plus settlement and text differences. */
  differences: Divergence[];
}

const STEP_FIELDS = ['actor', 'joined', 'parts', 'states', 'tools', 'approvals', 'results', 'handoffs'] as const;

/** A step's field; `joined` is absent where no message joined. */
const field = (s: PathStep, f: (typeof STEP_FIELDS)[number]): unknown => (f === 'joined' ? (s.joined ?? []) : s[f]);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
/** `a` is `b` or (a list) the start of it. */
const startOf = (a: unknown, b: unknown) => (Array.isArray(a) && Array.isArray(b) ? same(a, b.slice(0, a.length)) : same(a, b));
const show = (v: unknown) => {
  const s = JSON.stringify(v);
  return s === undefined ? 'nothing' : s.length > 160 ? `${s.slice(0, 157)}...` : s;
};
const stepSummary = (s: PathStep) => ({ actor: s.actor, parts: s.parts, states: s.states, tools: s.tools });

function where(turn: number, t: TurnPath | undefined, step: number | null): string {
  return `turn ${turn}${t ? ` (${t.turnId})` : ''}${step === null ? '' : `, step ${step}`}`;
}

function diffTurn(i: number, a: TurnPath, b: TurnPath, out: Divergence[]): void {
  const push = (step: number | null, field: DivergenceField, expected: unknown, actual: unknown, what: string) =>
    out.push({ turn: i, step, field, expected, actual, message: `${where(i, a, step)}: ${what} — expected ${show(expected)} but got ${show(actual)}` });
  if (a.input !== b.input) {
    push(null, 'input', a.input, b.input, 'the user input differs');
    return;
  }
  let structural = false;
  // A turn the recording ends in: its steps as far as they go, the last one as far as it got.
  const cut = a.endsMidTurn === true;
  const n = cut ? a.steps.length : Math.max(a.steps.length, b.steps.length);
  const agree = (k: number, x: unknown, y: unknown) => (cut && k === n - 1 ? startOf(x, y) : same(x, y));
  for (let k = 0; k < n && !structural; k++) {
    const sa = a.steps[k];
    const sb = b.steps[k];
    if (!sa || !sb) {
      push(k, 'step', sa ? stepSummary(sa) : null, sb ? stepSummary(sb) : null, sa ? 'a step is missing' : 'an extra step');
      structural = true;
      break;
    }
    for (const f of STEP_FIELDS) {
      if (!agree(k, field(sa, f), field(sb, f))) {
        push(k, f, field(sa, f), field(sb, f), `${f} differ`);
        structural = true;
        break;
      }
    }
  }
  if (cut) {
    const went = b.finalizedBy === null ? 'did not settle' : `settled in ${JSON.stringify(b.finalizedBy)}`;
    const message = `${where(i, a, null)}: the recording ends mid-turn (not settled and waiting for nothing: its process stopped and the session was never recovered, or the turn was still running); the re-run went on from there and ${went}`;
    if (!structural) out.push({ turn: i, step: null, field: 'ended', expected: null, actual: b.finalizedBy, message });
  } else if (a.finalizedBy !== b.finalizedBy) push(null, 'finalizedBy', a.finalizedBy, b.finalizedBy, 'the turn settled differently');
  if (structural) return;
  for (let k = 0; k < n; k++) {
    const sa = a.steps[k]!;
    const sb = b.steps[k]!;
    if (!agree(k, sa.texts, sb.texts)) {
      push(k, 'texts', sa.texts, sb.texts, 'part content differs');
      return;
    }
  }
}

/** Compare a recorded path with a new one. */
export function diffSessions(expected: SessionPath, actual: SessionPath): PathDiff {
  const differences: Divergence[] = [];
  const n = Math.max(expected.turns.length, actual.turns.length);
  for (let i = 0; i < n; i++) {
    const a = expected.turns[i];
    const b = actual.turns[i];
    if (!a || !b) {
      const summary = (t: TurnPath | undefined) => (t ? { input: t.input, finalizedBy: t.finalizedBy } : null);
      differences.push({
        turn: i,
        step: null,
        field: 'turn',
        expected: summary(a),
        actual: summary(b),
        message: `${where(i, a ?? b, null)}: ${a ? 'the turn is missing' : 'an extra turn'} — expected ${show(summary(a))} but got ${show(summary(b))}`,
      });
      continue;
    }
    diffTurn(i, a, b, differences);
  }
  const diff: PathDiff = { identical: differences.length === 0, differences };
  if (differences[0]) diff.first = differences[0];
  return diff;
}

export function formatDiff(diff: PathDiff): string {
  if (diff.identical) return 'identical: same turns, steps, turn states, part types, tools and texts';
  return [`diverged (${diff.differences.length} difference(s)); first: ${diff.first!.message}`, ...diff.differences.slice(1).map((d) => `  also: ${d.message}`)].join('\n');
}
