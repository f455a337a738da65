/**
 * Differences between two session paths. Turns are compared by position; within a turn,
 * steps in order and, in each step, the actor, part types, turn-state changes, tools,
 * approvals, tool outcomes and hand-offs. The first divergence of a turn is reported (later
 * steps of that turn usually differ only because of it); part texts are compared only where
 * the structure is the same. `first` is the earliest divergence of the session.
 */
import type { PathStep, SessionPath, TurnPath } from './path.js';

export type DivergenceField =
  | 'turn'
  | 'input'
  | 'step'
  | 'actor'
  | 'parts'
  | 'states'
  | 'tools'
  | 'approvals'
  | 'results'
  | 'handoffs'
  | 'finalizedBy'
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

const STEP_FIELDS = ['actor', 'parts', 'states', 'tools', 'approvals', 'results', 'handoffs'] as const;

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
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
  const n = Math.max(a.steps.length, b.steps.length);
  for (let k = 0; k < n && !structural; k++) {
    const sa = a.steps[k];
    const sb = b.steps[k];
    if (!sa || !sb) {
      push(k, 'step', sa ? stepSummary(sa) : null, sb ? stepSummary(sb) : null, sa ? 'a step is missing' : 'an extra step');
      structural = true;
      break;
    }
    for (const f of STEP_FIELDS) {
      if (!same(sa[f], sb[f])) {
        push(k, f, sa[f], sb[f], `${f} differ`);
        structural = true;
        break;
      }
    }
  }
  if (a.finalizedBy !== b.finalizedBy) push(null, 'finalizedBy', a.finalizedBy, b.finalizedBy, 'the turn settled differently');
  if (structural) return;
  for (let k = 0; k < n; k++) {
    const sa = a.steps[k]!;
    const sb = b.steps[k]!;
    if (!same(sa.texts, sb.texts)) {
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
