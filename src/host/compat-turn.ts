/**
 * The host's side of the spec 003 compatibility mode: a turn's respond_to_user tracker, the
 * completion nudge, the fields `turn.settled` carries, and the tracker rebuilt after a restart.
 * No I/O.
 */
import { compatOptions, createCompatTracker, replayCompat, COMPAT_COMPLETION_NUDGE, type CompatTracker } from '../respond/index.js';
import type { ActorDefinition } from '../registries/types.js';
import type { MailboxEntry } from '../types.js';
import type { ActiveTurn } from './turn.js';

export function isCompatActor(actor: ActorDefinition): boolean {
  return actor.compat !== undefined;
}

/** The turn's tracker, created with the actor's delivery options on first use. */
export function compatTrackerOf(t: ActiveTurn, actor: ActorDefinition): CompatTracker {
  return (t.compat ??= createCompatTracker(compatOptions(actor)));
}

/** Spec 003's completion nudge, for an actor that stopped without mark_work_complete. */
export function compatNudge(turnId: string, at: string, actor: string): MailboxEntry {
  return { kind: 'nudge', turnId, at, actor, text: COMPAT_COMPLETION_NUDGE };
}

/**
 * `userResponse` / `finalContent` for `turn.settled` and the TurnOutcome: set for a compat turn
 * that did not fail (a failed turn delivers its error part, not a draft).
 */
export function compatSettledFields(t: ActiveTurn, failed: boolean): { userResponse?: string; finalContent?: string } {
  const c = t.compat;
  if (c === undefined || failed) return {};
  const out: { userResponse?: string; finalContent?: string } = {};
  if (c.userResponse !== undefined) out.userResponse = c.userResponse;
  if (c.finalContent !== undefined) out.finalContent = c.finalContent;
  return out;
}

/** After a restart: the turn's drafts and assistant text, read back from its mailbox. */
export function replayCompatTurn(t: ActiveTurn, actor: ActorDefinition | undefined, mailbox: readonly MailboxEntry[]): void {
  if (actor === undefined || !isCompatActor(actor)) return;
  t.compat = replayCompat(createCompatTracker(compatOptions(actor)), mailbox, t.turnId);
}
