/**
 * The model's history, derived from the mailbox for one actor. Pure.
 *
 * - The actor's own model responses and their tool results appear as sent (tool_results first
 *   in the next user message, one per tool_use, as the Messages API requires).
 * - Another actor's bookkeeping (its respond() calls, tool calls, results) never appears; what
 *   it said to the user appears as its text, and a hand-off appears as the sender's parts.
 * - Consecutive messages of one role are merged; the history always starts with a user message.
 */
import type { ContentBlock, MailboxEntry, ModelMessage, Part } from '../types.js';

const USER_FACING = new Set(['response', 'clarify', 'error', 'ack']);

export function deriveHistory(mailbox: readonly MailboxEntry[], actor: string): ModelMessage[] {
  const out: ModelMessage[] = [];
  const push = (role: 'user' | 'assistant', block: ContentBlock) => {
    const last = out[out.length - 1];
    if (last && last.role === role) {
      // tool_result blocks must come first in a user message.
      if (role === 'user' && block.type === 'tool_result') {
        let i = 0;
        while (i < last.content.length && last.content[i]!.type === 'tool_result') i++;
        last.content.splice(i, 0, block);
      } else last.content.push(block);
    } else out.push({ role, content: [block] });
  };
  for (const e of mailbox) {
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
        if (e.from !== actor) push('user', { type: 'text', text: `[handoff from ${e.from}] ${partsText(e.parts) || '(no message)'}` });
        break;
      case 'nudge':
        if (e.actor === actor) push('user', { type: 'text', text: `[runtime] ${e.text}` });
        break;
      case 'data':
        break;
    }
  }
  if (out.length > 0 && out[0]!.role !== 'user') out.unshift({ role: 'user', content: [{ type: 'text', text: '(conversation continues)' }] });
  return out;
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

function partsText(parts: readonly Part[]): string {
  let text = '';
  for (const p of parts) if (typeof p.text === 'string') text += (text ? '\n' : '') + p.text;
  return text;
}
