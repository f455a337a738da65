/**
 * The Messages API stream as ModelEvents: maps the SDK's raw stream events, in order, to
 * `block.start` / deltas / `block.stop` / `message.stop` and accumulates the final content (tool
 * input parsed once at its block's end; duplicate keys and invalid JSON become `inputError`).
 * Names the SDK's types only; `turnstate/anthropic` (anthropic.ts) is what loads the SDK.
 */
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ModelEvent } from '../api.js';
import type { ContentBlock, ModelStopReason, Usage } from '../types.js';
import { firstDuplicateKey } from './duplicate-keys.js';

interface BlockState {
  type: 'text' | 'thinking' | 'redacted_thinking' | 'tool_use' | 'ignored';
  text: string;
  signature: string;
  id: string;
  name: string;
  data: string;
}

/** Maps raw SDK stream events to ModelEvents and accumulates the final content. */
export class StreamAccumulator {
  stopped = false;
  private blocks: (BlockState | undefined)[] = [];
  private content: (ContentBlock | undefined)[] = [];
  private stopReason: ModelStopReason = 'end_turn';
  private usage: Usage = { inputTokens: 0, outputTokens: 0 };

  /** The ModelEvent for one raw event, or undefined when it maps to none. */
  map(ev: RawMessageStreamEvent): ModelEvent | undefined {
    switch (ev.type) {
      case 'content_block_delta': {
        const b = this.blocks[ev.index];
        if (b === undefined) return undefined;
        const d = ev.delta;
        switch (d.type) {
          case 'input_json_delta':
            if (b.type !== 'tool_use') return undefined;
            b.text += d.partial_json;
            return { type: 'input.delta', index: ev.index, partialJson: d.partial_json };
          case 'text_delta':
            if (b.type !== 'text') return undefined;
            b.text += d.text;
            return { type: 'text.delta', index: ev.index, text: d.text };
          case 'thinking_delta':
            if (b.type !== 'thinking') return undefined;
            b.text += d.thinking;
            return { type: 'thinking.delta', index: ev.index, text: d.thinking };
          case 'signature_delta':
            if (b.type === 'thinking') b.signature += d.signature;
            return undefined;
          default:
            return undefined;
        }
      }
      case 'content_block_start': {
        const cb = ev.content_block;
        const st: BlockState = { type: 'ignored', text: '', signature: '', id: '', name: '', data: '' };
        this.blocks[ev.index] = st;
        switch (cb.type) {
          case 'text':
            st.type = 'text';
            st.text = cb.text ?? '';
            return { type: 'block.start', index: ev.index, block: { type: 'text' } };
          case 'thinking':
            st.type = 'thinking';
            st.text = cb.thinking ?? '';
            st.signature = cb.signature ?? '';
            return { type: 'block.start', index: ev.index, block: { type: 'thinking' } };
          case 'redacted_thinking':
            st.type = 'redacted_thinking';
            st.data = cb.data;
            return undefined;
          case 'tool_use':
            st.type = 'tool_use';
            st.id = cb.id;
            st.name = cb.name;
            return { type: 'block.start', index: ev.index, block: { type: 'tool_use', id: cb.id, name: cb.name } };
          default:
            return undefined;
        }
      }
      case 'content_block_stop': {
        const b = this.blocks[ev.index];
        if (b === undefined || b.type === 'ignored') return undefined;
        const block = finishBlock(b);
        this.content[ev.index] = block;
        return { type: 'block.stop', index: ev.index, block };
      }
      case 'message_start': {
        this.readUsage(ev.message.usage);
        return undefined;
      }
      case 'message_delta': {
        if (ev.delta.stop_reason !== null && ev.delta.stop_reason !== undefined) this.stopReason = stopReasonOf(ev.delta.stop_reason);
        this.readUsage(ev.usage);
        return undefined;
      }
      case 'message_stop': {
        this.stopped = true;
        const content: ContentBlock[] = [];
        for (const c of this.content) if (c !== undefined) content.push(c);
        return { type: 'message.stop', stopReason: this.stopReason, usage: this.usage, content };
      }
      default:
        return undefined;
    }
  }

  private readUsage(u: {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
  } | null | undefined): void {
    if (u === null || u === undefined) return;
    // Counts are cumulative: the latest non-null value wins.
    if (typeof u.input_tokens === 'number') this.usage.inputTokens = u.input_tokens;
    if (typeof u.output_tokens === 'number') this.usage.outputTokens = u.output_tokens;
    if (typeof u.cache_read_input_tokens === 'number') this.usage.cacheReadTokens = u.cache_read_input_tokens;
    if (typeof u.cache_creation_input_tokens === 'number') this.usage.cacheWriteTokens = u.cache_creation_input_tokens;
  }
}

function finishBlock(b: BlockState): ContentBlock {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'thinking':
      return { type: 'thinking', thinking: b.text, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
    default: {
      const raw = b.text;
      if (raw.length === 0) return { type: 'tool_use', id: b.id, name: b.name, input: {} };
      try {
        const input: unknown = JSON.parse(raw);
        const duplicateKey = firstDuplicateKey(raw);
        if (duplicateKey === undefined) return { type: 'tool_use', id: b.id, name: b.name, input };
        return {
          type: 'tool_use',
          id: b.id,
          name: b.name,
          input: {},
          inputError: `tool input names the key at ${duplicateKey} twice in one object`,
          duplicateKey,
          rawInput: raw,
        };
      } catch (e) {
        return {
          type: 'tool_use',
          id: b.id,
          name: b.name,
          input: {},
          inputError: `tool input is not valid JSON (${(e as Error).message})`,
          rawInput: raw,
        };
      }
    }
  }
}

const STOP_REASONS: ReadonlySet<string> = new Set<ModelStopReason>([
  'end_turn',
  'tool_use',
  'max_tokens',
  'stop_sequence',
  'refusal',
  'pause_turn',
  'model_context_window_exceeded',
]);

/** Unknown stop reasons (newer API versions) map to 'end_turn'. */
function stopReasonOf(s: string): ModelStopReason {
  return STOP_REASONS.has(s) ? (s as ModelStopReason) : 'end_turn';
}
