/**
 * respond()'s `note` (spec 000: "free-form note for logs; not delivered to any consumer") as an
 * audit record. The note lives in the respond() call the mailbox keeps (the assistant entry's
 * tool_use input); this reads it back out for audit tooling. No transport calls it.
 */
import type { MailboxEntry } from '../types.js';
import { RESPOND_TOOL_NAME } from './types.js';

export interface RespondNote {
  turnId: string;
  actor: string;
  /** The respond() call's tool_use id. */
  callId: string;
  at: string;
  note: string;
}

/** Every note of every respond() call in the mailbox, in order (of one turn when `turnId` is given). */
export function respondNotes(mailbox: readonly MailboxEntry[], turnId?: string): RespondNote[] {
  const out: RespondNote[] = [];
  for (const e of mailbox) {
    if (e.kind !== 'assistant' || (turnId !== undefined && e.turnId !== turnId)) continue;
    for (const b of e.content) {
      if (b.type !== 'tool_use' || b.name !== RESPOND_TOOL_NAME) continue;
      const note = (b.input as { note?: unknown } | null)?.note;
      if (typeof note === 'string') out.push({ turnId: e.turnId, actor: e.actor, callId: b.id, at: e.at, note });
    }
  }
  return out;
}
