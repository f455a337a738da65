/**
 * The model's history, derived from the mailbox for one actor. Pure.
 *
 * - The actor's own model responses and their tool results appear as sent (tool_results first
 *   in the next user message, one per tool_use, as the Messages API requires).
 * - Another actor's bookkeeping (its respond() calls, tool calls, results) never appears as tool
 *   blocks (the actor may not have those tools); what it said to the user appears as its text.
 * - A hand-off appears as the sender's parts: text parts as text, data parts (domain-data, ...)
 *   as `[<partType>] <json>`. The receiver inherits the mailbox (spec 000 `passed`): before the
 *   hand-off it reads the data the turn gathered so far that it has not seen, one
 *   `[data from <actor>] <content>` line per data-bearing record of another actor, its content
 *   the tool result as the model may see it (the llm-session view, as its own tool_result
 *   would be), never the record itself (the peer-response view). A peer's record is not repeated:
 *   its envelope is a user entry every actor reads.
 * - A turn the model refused (a `refused` entry) is left out whole, for every actor: its user
 *   message, the model's responses (the refused partial one included), their tool results, nudges
 *   and data. Claude's guidance: after a refusal, reset the context (remove the turn that
 *   triggered it) before continuing, or later requests keep being refused.
 * - Consecutive messages of one role are merged; the history always starts with a user message.
 */
import type { ContentBlock, MailboxEntry, ModelMessage, Part } from '../types.js';

const USER_FACING = new Set(['response', 'clarify', 'error', 'ack']);

export function deriveHistory(mailbox: readonly MailboxEntry[], actor: string): ModelMessage[] {
  const h = createHistory(actor);
  return h.update(mailbox);
}

/**
 * An incremental view of the history for one actor: `update(mailbox)` folds in only the entries
 * appended since the last call (the mailbox is append-only), so its cost is what is new, not the
 * length of the conversation. It returns the view's own array (no copy): read-only, and valid
 * until the next `update` (which appends to it and may replace its last message). A holder that
 * keeps it longer copies it. Message objects are never mutated: merging replaces the last one.
 */
export interface HistoryView {
  readonly actor: string;
  update(mailbox: readonly MailboxEntry[]): ModelMessage[];
}

export function createHistory(actor: string): HistoryView {
  const out: ModelMessage[] = [];
  let upTo = 0;
  /** Another actor's data-bearing results of `gatheredTurn` this actor has not been shown yet. */
  let gathered: string[] | null = null;
  let gatheredTurn = '';
  /** Turns the model refused: none of their entries is folded (null until the first refusal). */
  let refused: Set<string> | null = null;
  const push = (role: 'user' | 'assistant', block: ContentBlock) => {
    const n = out.length;
    const last = n > 0 ? out[n - 1]! : undefined;
    if (last && last.role === role) {
      const content = last.content.slice();
      // tool_result blocks must come first in a user message.
      if (role === 'user' && block.type === 'tool_result') {
        let i = 0;
        while (i < content.length && content[i]!.type === 'tool_result') i++;
        content.splice(i, 0, block);
      } else content.push(block);
      out[n - 1] = { role, content };
    } else out.push({ role, content: [block] });
  };
  const fold = (e: MailboxEntry, mailbox: readonly MailboxEntry[], i: number) => {
    switch (e.kind) {
      case 'user':
        push('user', { type: 'text', text: e.text });
        break;
      case 'assistant':
        if (e.actor === actor) {
          for (const b of e.content) push('assistant', b);
        } else {
          const said = spokenText(e.content);
          if (said) push('assistant', { type: 'text', text: `[${e.actor}] ${said}` });
        }
        break;
      case 'tool_result':
        if (e.actor === actor) push('user', { type: 'tool_result', tool_use_id: e.callId, content: e.content, ...(e.isError ? { is_error: true } : {}) });
        break;
      case 'handoff':
        if (e.from !== actor) {
          if (gathered !== null && gatheredTurn === e.turnId) push('user', { type: 'text', text: gathered.join('\n') });
          gathered = null;
          push('user', { type: 'text', text: `[handoff from ${e.from}] ${partsText(e.parts) || '(no message)'}` });
        }
        break;
      case 'nudge':
        if (e.actor === actor) push('user', { type: 'text', text: `[runtime] ${e.text}` });
        break;
      case 'data': {
        if (e.actor === actor || e.from === 'peer') break;
        const content = resultContent(mailbox, i, e.callId);
        if (content === undefined) break;
        if (gathered === null || gatheredTurn !== e.turnId) {
          gathered = [];
          gatheredTurn = e.turnId;
        }
        gathered.push(`[data from ${e.actor}] ${content}`);
        break;
      }
    }
  };
  return {
    actor,
    update(mailbox) {
      let refold = mailbox.length < upTo;
      if (refold) refused = null;
      // A refusal takes back its whole turn, entries already folded included: the view is
      // folded again without it (refusals are rare; the cost is one pass over the mailbox).
      for (let i = refold ? 0 : upTo; i < mailbox.length; i++) {
        const e = mailbox[i]!;
        if (e.kind === 'refused' && !(refused ??= new Set()).has(e.turnId)) {
          refused.add(e.turnId);
          refold = true;
        }
      }
      if (refold) {
        out.length = 0;
        upTo = 0;
        gathered = null;
      }
      for (let i = upTo; i < mailbox.length; i++) {
        const e = mailbox[i]!;
        if (refused === null || !refused.has(e.turnId)) fold(e, mailbox, i);
      }
      upTo = mailbox.length;
      if (out.length > 0 && out[0]!.role !== 'user') {
        return [{ role: 'user', content: [{ type: 'text', text: '(conversation continues)' }] }, ...out];
      }
      return out;
    },
  };
}

/** The user-facing text another actor's respond() calls carried. */
function spokenText(content: readonly ContentBlock[]): string {
  let text = '';
  for (const b of content) {
    if (b.type !== 'tool_use' || b.name !== 'respond') continue;
    const parts = (b.input as { parts?: Part[] } | undefined)?.parts;
    if (!Array.isArray(parts)) continue;
    for (const p of parts) {
      if (p && typeof p.text === 'string' && USER_FACING.has(p.metadata?.partType)) text += (text ? '\n' : '') + p.text;
    }
  }
  return text;
}

/** A hand-off's parts: texts as they are, data parts as `[<partType>] <json>`, in order. */
function partsText(parts: readonly Part[]): string {
  let text = '';
  for (const p of parts) {
    if (typeof p.text === 'string') text += (text ? '\n' : '') + p.text;
    else if (p.data !== undefined) text += `${text ? '\n' : ''}[${p.metadata.partType}] ${JSON.stringify(p.data)}`;
  }
  return text;
}

/**
 * The tool result a data record at `i` belongs to, as the model may see it: written in the same
 * step just before the record (tool-dispatch.ts), so the walk back is one or two entries.
 */
function resultContent(mailbox: readonly MailboxEntry[], i: number, callId: string): string | undefined {
  const turnId = mailbox[i]!.turnId;
  for (let j = i - 1; j >= 0; j--) {
    const m = mailbox[j]!;
    if (m.turnId !== turnId) return undefined;
    if (m.kind === 'tool_result' && m.callId === callId) return m.isError ? undefined : m.content;
  }
  return undefined;
}
