/**
 * A scripted reply as the Messages API sends it: the JSON message (`messageBody`) or the SSE
 * frames of a streamed one (`buildFrames`, pings interleaved), its text and tool input cut into
 * deltas by the reply's `split`. Pure: the server (loopback-server.ts) writes them, with faults.
 */
import type { LoopbackBlock, LoopbackReply, LoopbackSplit, LoopbackUsage } from './loopback-script.js';

let toolCounter = 0;

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A keep-alive `ping` event, as the Messages API sends them. */
export const PING_FRAME = frame('ping', { type: 'ping' });

/** The in-stream `error` event a reply's `streamError` sends. */
export function errorFrame(err: NonNullable<LoopbackReply['streamError']>): string {
  return frame('error', { type: 'error', error: { type: err.type ?? 'overloaded_error', message: err.message ?? 'Overloaded' } });
}

/** The JSON message of a reply to a request that did not ask for a stream. */
export function messageBody(reply: LoopbackReply, body: { model?: unknown }, id: string): Record<string, unknown> {
  const content = reply.content.map((b, i) => finalBlock(b, i));
  const usage = usageOf(reply, content);
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: reply.model ?? body.model ?? 'loopback',
    content,
    stop_reason: stopReasonOf(reply),
    stop_sequence: null,
    usage: {
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      cache_creation_input_tokens: usage.cacheWriteTokens,
      cache_read_input_tokens: usage.cacheReadTokens,
    },
  };
}

/** The SSE frames of one reply, in Messages API order (pings interleaved). */
export function buildFrames(reply: LoopbackReply, body: { model?: unknown } | undefined, id: string): string[] {
  const out: string[] = [];
  const pingEvery = reply.pingEvery ?? 10;
  const content = reply.content.map((b, i) => finalBlock(b, i));
  const usage = usageOf(reply, content);
  const split = splitter(reply.split);
  const push = (event: string, data: unknown) => {
    out.push(frame(event, data));
    if (pingEvery > 0 && out.length % pingEvery === 0) out.push(frame('ping', { type: 'ping' }));
  };
  out.push(
    frame('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: reply.model ?? (typeof body?.model === 'string' ? body.model : 'loopback'),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.inputTokens,
          output_tokens: 1,
          cache_creation_input_tokens: usage.cacheWriteTokens,
          cache_read_input_tokens: usage.cacheReadTokens,
        },
      },
    }),
  );
  if (pingEvery > 0) out.push(frame('ping', { type: 'ping' }));
  reply.content.forEach((b, index) => {
    switch (b.type) {
      case 'text':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        for (const t of split(b.text)) push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
        break;
      case 'tool_use': {
        const block = content[index] as { id: string };
        push('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: block.id, name: b.name, input: {} },
        });
        const json = b.rawInput ?? JSON.stringify(b.input ?? {});
        for (const c of split(json)) {
          push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: c } });
        }
        break;
      }
      case 'thinking':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        for (const t of split(b.thinking)) push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: t } });
        push('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } });
        break;
      case 'redacted_thinking':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: b.data } });
        break;
    }
    push('content_block_stop', { type: 'content_block_stop', index });
  });
  push('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReasonOf(reply), stop_sequence: null },
    usage: {
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      cache_creation_input_tokens: usage.cacheWriteTokens,
      cache_read_input_tokens: usage.cacheReadTokens,
    },
  });
  out.push(frame('message_stop', { type: 'message_stop' }));
  return out;
}

function finalBlock(b: LoopbackBlock, index: number): Record<string, unknown> {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text, citations: null };
    case 'tool_use': {
      let input: unknown = b.input ?? {};
      if (b.rawInput !== undefined) {
        try {
          input = JSON.parse(b.rawInput);
        } catch {
          input = {};
        }
      }
      return { type: 'tool_use', id: b.id ?? `toolu_loopback_${++toolCounter}_${index}`, name: b.name, input };
    }
    case 'thinking':
      return { type: 'thinking', thinking: b.thinking, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
  }
}

function stopReasonOf(reply: LoopbackReply): string {
  return reply.stopReason ?? (reply.content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
}

function usageOf(reply: LoopbackReply, content: Record<string, unknown>[]): Required<LoopbackUsage> {
  const u = reply.usage ?? {};
  return {
    inputTokens: u.inputTokens ?? 10,
    outputTokens: u.outputTokens ?? Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
    cacheReadTokens: u.cacheReadTokens ?? 0,
    cacheWriteTokens: u.cacheWriteTokens ?? 0,
  };
}

/** Cuts a string into chunks per the split spec; at least one chunk (possibly empty). */
export function splitter(spec: LoopbackSplit | undefined): (s: string) => string[] {
  if (spec === undefined) return (s) => chunkBySize(s, 16);
  if (typeof spec === 'number') return (s) => chunkBySize(s, Math.max(1, Math.floor(spec)));
  if (Array.isArray(spec)) {
    const cuts = [...spec].sort((a, b) => a - b);
    return (s) => {
      const out: string[] = [];
      let from = 0;
      for (const c of cuts) {
        if (c <= from || c >= s.length) continue;
        out.push(s.slice(from, c));
        from = c;
      }
      out.push(s.slice(from));
      return out;
    };
  }
  const maxChunk = Math.max(1, spec.maxChunk ?? 12);
  let state = spec.seed >>> 0;
  const rand = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (s) => {
    const out: string[] = [];
    let from = 0;
    while (from < s.length) {
      const n = 1 + Math.floor(rand() * maxChunk);
      out.push(s.slice(from, from + n));
      from += n;
    }
    if (out.length === 0) out.push('');
    return out;
  };
}

function chunkBySize(s: string, n: number): string[] {
  if (s.length <= n) return [s];
  const out: string[] = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out;
}
