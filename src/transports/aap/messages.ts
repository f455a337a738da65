/**
 * Folds AAP items (from AapProjector, `whole` granularity) into AAP `HistoryMessage`s:
 * assistant messages of thinking/text/tool_use blocks, closed by each tool message.
 *
 * Contract: when calls are still unresolved at `finish()`, their tool_use blocks are moved into
 * a final assistant message, so the last message holds them (AAP tool-call resumption).
 * An assistant message holding a single text block is written with string content.
 */
import type { AapItem } from './projector.js';
import type { AapContentBlock, AapToolUseBlock, HistoryMessage } from './types.js';

export interface MessageBuilderOptions {
  /** Include user messages (history: yes; a `none` response never echoes them). */
  includeUser: boolean;
  /** Include `tool` messages of client-side tools (history: yes; a `none` response: no, the client sent them). */
  includeClientResults: boolean;
  /** Include thinking blocks (full history and responses: yes; compacted history: no). */
  includeThinking: boolean;
}

export class MessageBuilder {
  readonly #opts: MessageBuilderOptions;
  readonly #messages: HistoryMessage[] = [];
  #current: AapContentBlock[] = [];

  constructor(opts: MessageBuilderOptions) {
    this.#opts = opts;
  }

  /** Feed one projector item. Delta items are ignored (use `whole` granularity). */
  readonly push = (item: AapItem): void => {
    switch (item.kind) {
      case 'user':
        if (!this.#opts.includeUser) return;
        this.#flush();
        this.#messages.push({ role: 'user', content: item.text });
        return;
      case 'text':
        this.#current.push({ type: 'text', text: item.text });
        return;
      case 'thinking':
        if (this.#opts.includeThinking) this.#current.push({ type: 'thinking', thinking: item.thinking });
        return;
      case 'tool_call':
        this.#current.push({ type: 'tool_use', toolCallId: item.toolCallId, name: item.name, input: item.input });
        return;
      case 'tool_result':
        if (item.side === 'client' && !this.#opts.includeClientResults) return;
        this.#flush();
        this.#messages.push({ role: 'tool', toolCallId: item.toolCallId, content: item.content });
        return;
      case 'text_delta':
      case 'thinking_delta':
        return;
    }
  };

  /**
   * The messages so far. `unresolved` lists call ids still waiting for the client: their
   * tool_use blocks end up in the last message.
   */
  finish(unresolved: readonly string[] = []): HistoryMessage[] {
    this.#flush();
    const out = this.#messages.slice();
    if (unresolved.length === 0) return out;
    const last = out[out.length - 1];
    if (last !== undefined && last.role === 'assistant' && holdsAll(last, unresolved)) return out;
    const wanted = new Set(unresolved);
    const moved: AapToolUseBlock[] = [];
    for (let i = 0; i < out.length; i++) {
      const m = out[i]!;
      if (m.role !== 'assistant' || typeof m.content === 'string') continue;
      const keep: AapContentBlock[] = [];
      for (const b of m.content) {
        if (b.type === 'tool_use' && wanted.has(b.toolCallId)) moved.push(b);
        else keep.push(b);
      }
      if (keep.length !== m.content.length) out[i] = { role: 'assistant', content: normalise(keep) };
    }
    const compact = out.filter((m) => !(m.role === 'assistant' && (m.content.length === 0)));
    if (moved.length > 0) compact.push({ role: 'assistant', content: moved });
    return compact;
  }

  #flush(): void {
    if (this.#current.length === 0) return;
    this.#messages.push({ role: 'assistant', content: normalise(this.#current) });
    this.#current = [];
  }
}

function normalise(blocks: AapContentBlock[]): string | AapContentBlock[] {
  const only = blocks[0];
  if (blocks.length === 1 && only !== undefined && only.type === 'text') return only.text;
  return blocks;
}

function holdsAll(m: HistoryMessage, ids: readonly string[]): boolean {
  if (typeof m.content === 'string') return false;
  const have = new Set<string>();
  for (const b of m.content) if (b.type === 'tool_use') have.add(b.toolCallId);
  return ids.every((id) => have.has(id));
}

/** The text of assistant messages, concatenated (text blocks only). */
export function assistantText(messages: readonly HistoryMessage[]): string {
  let s = '';
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    if (typeof m.content === 'string') s += m.content;
    else for (const b of m.content) if (b.type === 'text') s += b.text;
  }
  return s;
}
