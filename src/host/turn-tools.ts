/**
 * The running turn's tool settings, changed while it runs: an AAP re-submission's overrides, or
 * a message that joins the turn (double-texting `interrupt`). From the change on, the turn's next
 * model call offers the tools the settings enable, and its next tool calls are approved (or not)
 * by the trust they give; a call already waiting for approval still waits for its answer. The
 * change is written with the turn's state, so a restarted turn keeps it.
 */
import type { SendOptions, TurnTools } from '../api.js';
import type { HostCore } from './core.js';
import { assertClientToolNames } from './tool-catalog.js';

const KEYS = ['enabledTools', 'howToEnableTools', 'standingApprovals', 'clientTools'] as const;

/** `opts` with each tool setting `tools` gives replaced (one it leaves out keeps its value). */
export function withTurnTools(opts: SendOptions, tools: TurnTools): SendOptions {
  const out: Record<string, unknown> = { ...opts };
  for (const k of KEYS) {
    if (tools[k] !== undefined) out[k] = tools[k];
  }
  return out as SendOptions;
}

/**
 * Refuses client tools the model could not tell from each other or from the acting actor's own
 * (the entry actor's between turns; TurnstateError 'message.invalid_client_tool'), before
 * anything is accepted.
 */
export function assertTurnClientTools(s: HostCore, tools: TurnTools['clientTools']): void {
  if (!tools?.length) return;
  const actor = s.turn === null ? s.record.actor : s.machine.actingActor();
  assertClientToolNames(tools, actor, (n) => s.deps.registries.actors.get(actor)?.tools?.includes(n) === true);
}

/**
 * Replaces each tool setting `tools` gives for turn `turnId` (one left out keeps its value;
 * `clientTools: []` removes the client tools) and publishes `turnTools.changed` (with `metadata`,
 * when given) in the same write; false when it is not the session's running turn.
 */
export async function updateTurnTools(s: HostCore, turnId: string, tools: TurnTools, metadata?: Record<string, unknown>): Promise<boolean> {
  const t = s.turn;
  if (t === null || t.turnId !== turnId) return false;
  assertTurnClientTools(s, tools.clientTools);
  const before = t.opts;
  t.opts = withTurnTools(t.opts, tools);
  const changed: Record<string, unknown> = {};
  for (const k of KEYS) if (tools[k] !== undefined) changed[k] = tools[k];
  const event = s.journal.event(turnId, { type: 'turnTools.changed', tools: changed, ...(metadata === undefined ? {} : { metadata }) });
  try {
    // Durable before it resolves (under group commit, the write at the end of this event-loop turn).
    const written = s.journal.commit({ events: [event] }, true);
    await (written ?? s.journal.durable());
  } catch (err) {
    // Not written: the turn keeps the settings it had.
    t.opts = before;
    throw err;
  }
  return true;
}
