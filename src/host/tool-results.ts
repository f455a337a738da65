/**
 * The one builder of a tool call's outcome: the `tool.result` event every subscriber sees and the
 * mailbox entry the model's history is derived from, always together. The texts the model reads
 * for a denial or an unknown outcome live here once.
 */
import type { StepCommit } from '../machines/ports.js';
import type { MailboxEntry, SessionEvent } from '../types.js';
import { pairSafeEnd } from '../text.js';
import type { Journal } from './journal.js';

export { denialText, TOOL_CALL_DENIED } from '../types.js';

/**
 * What the model reads for a call that may have run but whose result was never recorded: the
 * process stopped while it ran, or the write of its result failed (never run twice). Recovery
 * writes it (recovery.ts); replay reads such a call by its missing execution record, not this text.
 */
export function unknownOutcomeText(tool: string): string {
  return `The outcome of ${tool} is unknown: its result was not recorded (the runtime restarted while it ran, or writing its result failed), and it was not run again. Check its effect before calling it again.`;
}

/**
 * What the model is shown of a tool result: the whole text up to `max` characters, else its start
 * and a note saying how much was left out (the tool.result event and the execution log keep theirs).
 * Every later request of the session carries it again, so one huge result must not fill the context.
 */
export function forModel(content: string, max: number): string {
  if (content.length <= max) return content;
  const end = pairSafeEnd(content, max);
  return `${content.slice(0, end)}\n[truncated: the result is ${content.length} characters; the first ${end} are shown]`;
}

/** The note forModel ends a cut result with, read back (replay): the whole length (1) and the characters shown (2). */
export const CUT_NOTE = /\n\[truncated: the result is (\d+) characters; the first (\d+) are shown\]$/;

export interface ToolOutcome {
  turnId: string;
  actor: string;
  callId: string;
  tool: string;
  /** What the model reads (the llm-session view). */
  content: string;
  isError: boolean;
  /** What subscribers see (the ui-stream view); the content when not given. */
  view?: unknown;
  /** The call was denied and never ran (recorded as data: replay reads it, never the text). */
  denial?: { reason?: string };
}

/** Collects outcomes into one step: each outcome is one event plus one mailbox entry. */
export class OutcomeBatch {
  readonly events: SessionEvent[] = [];
  readonly mailbox: MailboxEntry[] = [];

  constructor(private readonly journal: Journal, private readonly at: string) {}

  add(o: ToolOutcome): this {
    this.events.push(
      this.journal.toolResult(o.turnId, o.callId, o.tool, 'view' in o ? o.view : o.content, o.isError, o.denial),
    );
    this.mailbox.push({ kind: 'tool_result', turnId: o.turnId, at: this.at, actor: o.actor, callId: o.callId, tool: o.tool, content: o.content, isError: o.isError });
    return this;
  }

  get size(): number {
    return this.events.length;
  }

  step(): StepCommit {
    return { events: this.events, mailbox: this.mailbox };
  }
}

/** One outcome as one step. */
export function outcomeStep(journal: Journal, at: string, o: ToolOutcome): StepCommit {
  return new OutcomeBatch(journal, at).add(o).step();
}
