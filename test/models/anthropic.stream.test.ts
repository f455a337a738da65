import { afterEach, describe, expect, it } from 'vitest';
import type { ModelEvent } from '../../src/machines/ports.js';
import type { ContentBlock } from '../../src/types.js';
import { collect, request, respondInput, rig } from './helpers.js';
import type { Rig } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.server.close();
  r = undefined;
});

const TEXT = 'Two direct options. EasyJet £94pp at 06:15; BA £187pp at 08:45 — "comfort" wins?\nThe end 😀.';

describe('anthropic adapter: streaming', () => {
  it('models:stream:order — a respond() call streamed in many chunks maps to block.start, input.delta*, block.stop, message.stop', async () => {
    const input = respondInput(TEXT);
    r = await rig([{ content: [{ type: 'tool_use', name: 'respond', input, id: 'toolu_1' }], split: 3, usage: { inputTokens: 120, outputTokens: 80 } }]);
    const { events, error } = await collect(r.model.stream(request(), new AbortController().signal));
    expect(error).toBeUndefined();
    const json = JSON.stringify(input);
    const deltas = events.filter((e): e is Extract<ModelEvent, { type: 'input.delta' }> => e.type === 'input.delta');
    expect(deltas.length).toBe(Math.ceil(json.length / 3));
    expect(deltas.map((d) => d.partialJson).join('')).toBe(json);
    expect(events[0]).toEqual({ type: 'block.start', index: 0, block: { type: 'tool_use', id: 'toolu_1', name: 'respond' } });
    expect(events.slice(1, 1 + deltas.length).every((e) => e.type === 'input.delta' && e.index === 0)).toBe(true);
    const stop = events[1 + deltas.length];
    expect(stop).toEqual({ type: 'block.stop', index: 0, block: { type: 'tool_use', id: 'toolu_1', name: 'respond', input } });
    const last = events[events.length - 1];
    expect(events.length).toBe(deltas.length + 3);
    expect(last).toEqual({
      type: 'message.stop',
      stopReason: 'tool_use',
      usage: { inputTokens: 120, outputTokens: 80, cacheReadTokens: 0, cacheWriteTokens: 0 },
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'respond', input }],
    });
  });

  it('models:stream:blocks — thinking, text and two tool_use blocks keep their API indexes and order', async () => {
    r = await rig([
      {
        content: [
          { type: 'thinking', thinking: 'The user wants flights. Search first.', signature: 'sig-abc==' },
          { type: 'text', text: 'stray text' },
          { type: 'tool_use', name: 'respond', input: respondInput('Looking up flights.', 'ack', 'awaiting'), id: 'toolu_a' },
          { type: 'tool_use', name: 'search_flights', input: { from: 'LGW', to: 'CFU' }, id: 'toolu_b' },
        ],
        split: { seed: 7, maxChunk: 5 },
      },
    ]);
    const { events, error } = await collect(r.model.stream(request({ thinking: { budgetTokens: 2048 } }), new AbortController().signal));
    expect(error).toBeUndefined();
    // Per block: start, deltas, stop, in index order; message.stop last.
    const order = events.map((e) => `${e.type}${'index' in e ? `@${e.index}` : ''}`);
    const collapsed = order.filter((x, i) => x !== order[i - 1]);
    expect(collapsed).toEqual([
      'block.start@0', 'thinking.delta@0', 'block.stop@0',
      'block.start@1', 'text.delta@1', 'block.stop@1',
      'block.start@2', 'input.delta@2', 'block.stop@2',
      'block.start@3', 'input.delta@3', 'block.stop@3',
      'message.stop',
    ]);
    const thinking = events
      .filter((e): e is Extract<ModelEvent, { type: 'thinking.delta' }> => e.type === 'thinking.delta')
      .map((e) => e.text)
      .join('');
    expect(thinking).toBe('The user wants flights. Search first.');
    const stop = events.at(-1) as Extract<ModelEvent, { type: 'message.stop' }>;
    expect(stop.content).toEqual([
      { type: 'thinking', thinking: 'The user wants flights. Search first.', signature: 'sig-abc==' },
      { type: 'text', text: 'stray text' },
      { type: 'tool_use', id: 'toolu_a', name: 'respond', input: respondInput('Looking up flights.', 'ack', 'awaiting') },
      { type: 'tool_use', id: 'toolu_b', name: 'search_flights', input: { from: 'LGW', to: 'CFU' } },
    ]);
  });

  it('models:stream:redacted-thinking — a redacted_thinking block is kept (block.stop and content), with no block.start', async () => {
    r = await rig([{ content: [{ type: 'redacted_thinking', data: 'EncRypted==' }, { type: 'tool_use', name: 'respond', input: respondInput('ok'), id: 't' }] }]);
    const { events } = await collect(r.model.stream(request({ thinking: { budgetTokens: 1024 } }), new AbortController().signal));
    expect(events[0]).toEqual({ type: 'block.stop', index: 0, block: { type: 'redacted_thinking', data: 'EncRypted==' } });
    const stop = events.at(-1) as Extract<ModelEvent, { type: 'message.stop' }>;
    expect(stop.content[0]).toEqual({ type: 'redacted_thinking', data: 'EncRypted==' });
  });

  it('models:stream:invalid-input — tool JSON that does not parse yields input {} with inputError and rawInput', async () => {
    const raw = '{"parts":[{"text":"cut off';
    r = await rig([{ content: [{ type: 'tool_use', name: 'respond', rawInput: raw, id: 'toolu_x' }], stopReason: 'max_tokens' }]);
    const { events, error } = await collect(r.model.stream(request(), new AbortController().signal));
    expect(error).toBeUndefined();
    const stop = events.find((e) => e.type === 'block.stop') as Extract<ModelEvent, { type: 'block.stop' }>;
    const block = stop.block as Extract<ContentBlock, { type: 'tool_use' }>;
    expect(block.input).toEqual({});
    expect(block.rawInput).toBe(raw);
    expect(block.inputError).toMatch(/not valid JSON/);
    expect((events.at(-1) as Extract<ModelEvent, { type: 'message.stop' }>).stopReason).toBe('max_tokens');
  });

  it('models:stream:empty-input — a tool_use with no input deltas parses to {}', async () => {
    r = await rig([{ content: [{ type: 'tool_use', name: 'search_flights', rawInput: '', id: 'toolu_e' }] }]);
    const { events } = await collect(r.model.stream(request(), new AbortController().signal));
    const stop = events.find((e) => e.type === 'block.stop') as Extract<ModelEvent, { type: 'block.stop' }>;
    expect(stop.block).toEqual({ type: 'tool_use', id: 'toolu_e', name: 'search_flights', input: {} });
  });

  it.each(['refusal', 'max_tokens', 'end_turn', 'pause_turn', 'model_context_window_exceeded'])(
    'models:stop-reason:%s — passed through on message.stop',
    async (reason) => {
      r = await rig([{ content: [{ type: 'text', text: 'x' }], stopReason: reason }]);
      const { events, error } = await collect(r.model.stream(request(), new AbortController().signal));
      expect(error).toBeUndefined();
      expect((events.at(-1) as Extract<ModelEvent, { type: 'message.stop' }>).stopReason).toBe(reason);
    },
  );

  it('models:usage — input, output and cache tokens map from message_start and the cumulative message_delta', async () => {
    r = await rig([
      {
        content: [{ type: 'tool_use', name: 'respond', input: respondInput('hi'), id: 't' }],
        usage: { inputTokens: 1500, outputTokens: 321, cacheReadTokens: 1200, cacheWriteTokens: 250 },
      },
    ]);
    const { events } = await collect(r.model.stream(request(), new AbortController().signal));
    expect((events.at(-1) as Extract<ModelEvent, { type: 'message.stop' }>).usage).toEqual({
      inputTokens: 1500,
      outputTokens: 321,
      cacheReadTokens: 1200,
      cacheWriteTokens: 250,
    });
  });

  it('models:stream:pings — pings anywhere in the stream produce no events', async () => {
    r = await rig([{ content: [{ type: 'text', text: 'abcdefghij' }], split: 1, pingEvery: 2 }]);
    const { events } = await collect(r.model.stream(request(), new AbortController().signal));
    expect(events.map((e) => e.type)).toEqual(['block.start', ...Array(10).fill('text.delta'), 'block.stop', 'message.stop']);
  });

  it('models:llm-context-model — purpose llm-context without a model uses the context model', async () => {
    r = await rig(
      [{ content: [{ type: 'text', text: 'a' }] }, { content: [{ type: 'text', text: 'b' }] }],
      { model: 'main-model', contextModel: 'fast-model' },
    );
    const { model: _m, ...noModel } = request();
    await collect(r.model.stream({ ...noModel, purpose: 'llm-context' }, new AbortController().signal));
    await collect(r.model.stream(noModel, new AbortController().signal));
    expect(r.server.requests.map((q) => q.body.model)).toEqual(['fast-model', 'main-model']);
  });
});
