import { afterEach, describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../src/types.js';
import { normaliseHistory } from '../../src/models/anthropic-request.js';
import { collect, RESPOND_TOOL, request, respondInput, rig, SEARCH_TOOL } from './helpers.js';
import type { Rig } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.server.close();
  r = undefined;
});

const ok = () => ({ content: [{ type: 'tool_use' as const, name: 'respond', input: respondInput('ok'), id: 'toolu_ok' }] });

/** A three-call tool-use loop history (spec 000 "Multi-call pattern"). */
const loop: ModelMessage[] = [
  { role: 'user', content: [{ type: 'text', text: 'Flights LGW to Corfu on 15 Aug?' }] },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'Search, then answer.', signature: 'SIG/1+==' },
      { type: 'tool_use', id: 'toolu_r1', name: 'respond', input: respondInput('Looking up flights.', 'ack', 'awaiting') },
      { type: 'tool_use', id: 'toolu_s1', name: 'search_flights', input: { from: 'LGW', to: 'CFU' } },
    ],
  },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_s1', content: '{"flights":2}' },
      { type: 'tool_result', tool_use_id: 'toolu_r1', content: 'delivered' },
    ],
  },
  { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'REDACTED-DATA' }, { type: 'tool_use', id: 'toolu_r2', name: 'respond', input: respondInput('Filtering.', 'thinking', 'awaiting') }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_r2', content: 'delivered' }] },
];

describe('anthropic adapter: request building', () => {
  it('models:request:tool-choice-any — tool_choice any, eager_input_streaming on respond, cache_control on system and the last tool', async () => {
    r = await rig([ok()]);
    await collect(r.model.stream(request({ maxTokens: 777 }), new AbortController().signal));
    const body = r.server.requests[0]!.body;
    expect(body.stream).toBe(true);
    expect(body.model).toBe('claude-test');
    expect(body.max_tokens).toBe(777);
    expect(body.tool_choice).toEqual({ type: 'any' });
    expect(body.thinking).toBeUndefined();
    expect(body.system).toEqual([{ type: 'text', text: 'You are Sally.', cache_control: { type: 'ephemeral' } }]);
    expect(body.tools).toEqual([
      { name: SEARCH_TOOL.name, description: SEARCH_TOOL.description, input_schema: SEARCH_TOOL.input_schema },
      {
        name: 'respond',
        description: RESPOND_TOOL.description,
        input_schema: RESPOND_TOOL.input_schema,
        eager_input_streaming: true,
        cache_control: { type: 'ephemeral' },
      },
    ]);
    // the credential reached the server, and the recording holds no copy of it
    expect(r.server.requests[0]!.auth).not.toBe('none');
    expect(r.server.requests[0]!.headers['x-api-key']).toBeUndefined();
    expect(r.server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('models:request:thinking-auto — with thinking: thinking enabled with the budget, tool_choice auto, max_tokens above the budget', async () => {
    r = await rig([ok()]);
    await collect(r.model.stream(request({ thinking: { budgetTokens: 8000 }, maxTokens: 4096 }), new AbortController().signal));
    const body = r.server.requests[0]!.body;
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 8000 });
    expect(body.tool_choice).toEqual({ type: 'auto' });
    expect(body.max_tokens).toBeGreaterThan(8000);
  });

  it('models:request:no-tools — no tools means no tools and no tool_choice; empty system is left out', async () => {
    r = await rig([{ content: [{ type: 'text', text: 'x' }] }]);
    await collect(r.model.stream(request({ tools: [], system: '' }), new AbortController().signal));
    const body = r.server.requests[0]!.body;
    expect(body.tools).toBeUndefined();
    expect(body.tool_choice).toBeUndefined();
    expect(body.system).toBeUndefined();
  });

  it('models:history:tool-results-first — tool_results lead the next user message, one per tool_use, in tool_use order', async () => {
    r = await rig([ok()]);
    const messages: ModelMessage[] = [
      ...loop.slice(0, 2),
      // results out of order, a text block before them, and split across two user messages
      { role: 'user', content: [{ type: 'text', text: 'also: prefer mornings' }, { type: 'tool_result', tool_use_id: 'toolu_s1', content: '{"flights":2}' }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_r1', content: 'delivered' }] },
    ];
    await collect(r.model.stream(request({ messages }), new AbortController().signal));
    const sent = r.server.requests[0]!.body.messages;
    expect(sent.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(sent[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_r1', content: 'delivered' },
      { type: 'tool_result', tool_use_id: 'toolu_s1', content: '{"flights":2}' },
      { type: 'text', text: 'also: prefer mornings' },
    ]);
  });

  it('models:history:thinking-unchanged — thinking and redacted_thinking blocks go back unchanged, with their signatures', async () => {
    r = await rig([ok()]);
    await collect(r.model.stream(request({ messages: loop, thinking: { budgetTokens: 1024 } }), new AbortController().signal));
    const sent = r.server.requests[0]!.body.messages;
    expect(sent[1].content[0]).toEqual({ type: 'thinking', thinking: 'Search, then answer.', signature: 'SIG/1+==' });
    expect(sent[3].content[0]).toEqual({ type: 'redacted_thinking', data: 'REDACTED-DATA' });
    expect(sent).toHaveLength(5);
  });

  it('models:history:missing-result — a tool_use without a result gets an is_error tool_result so the API accepts the history', () => {
    const out = normaliseHistory([
      loop[0]!,
      loop[1]!,
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_s1', content: 'x' }] },
    ]);
    expect(out[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_r1', content: expect.stringMatching(/No result/), is_error: true },
      { type: 'tool_result', tool_use_id: 'toolu_s1', content: 'x' },
    ]);
    // an assistant tool_use as the last message gets a trailing user message with results
    const tail = normaliseHistory(loop.slice(0, 2));
    expect(tail).toHaveLength(3);
    expect(tail[2]!.role).toBe('user');
    expect((tail[2]!.content as Array<{ type: string }>).every((b) => b.type === 'tool_result')).toBe(true);
  });

  it('models:history:orphan-result — a tool_result matching no preceding tool_use becomes text; duplicates too', () => {
    const out = normaliseHistory([
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_ghost', content: 'boo', is_error: true }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'search_flights', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'first' },
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'second' },
        ],
      },
    ]);
    expect(out[0]!.content).toEqual([{ type: 'text', text: '[result of tool call toolu_ghost, error]\nboo' }]);
    expect(out[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: 'first' },
      { type: 'text', text: '[result of tool call toolu_1]\nsecond' },
    ]);
  });

  it('models:history:merge — consecutive same-role messages merge, empty text blocks and empty messages drop, tool_use extras are stripped', () => {
    const out = normaliseHistory([
      { role: 'user', content: [{ type: 'text', text: 'a' }] },
      { role: 'user', content: [{ type: 'text', text: '' }] },
      { role: 'user', content: [{ type: 'text', text: 'b' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'x', name: 'respond', input: {}, inputError: 'bad', rawInput: '{"par' }],
      },
      { role: 'assistant', content: [] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'invalid input', is_error: true }] },
    ]);
    expect(out).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'respond', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'invalid input', is_error: true }] },
    ]);
  });

  it('models:history:whitespace-text — "text content blocks must contain non-whitespace text": whitespace-only text blocks drop from user and assistant messages; an assistant message left empty drops and its neighbours merge', () => {
    const out = normaliseHistory([
      { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'text', text: ' \t' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 'sig1' },
          { type: 'text', text: '\n\n' },
          { type: 'tool_use', id: 'toolu_1', name: 'respond', input: respondInput('Hello!') },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'delivered' }, { type: 'text', text: '\n' }] },
      { role: 'assistant', content: [{ type: 'text', text: ' \n ' }] },
      { role: 'user', content: [{ type: 'text', text: 'again' }] },
    ]);
    expect(out).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 'sig1' },
          { type: 'tool_use', id: 'toolu_1', name: 'respond', input: respondInput('Hello!') },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'delivered' }, { type: 'text', text: 'again' }] },
    ]);
  });

  it('models:history:whitespace-text-sent — "text content blocks must contain non-whitespace text": a "\\n\\n" text block the model wrote beside thinking and respond() is not sent back, so the next call is accepted', async () => {
    r = await rig([
      { content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig1' }, { type: 'text', text: '\n\n' }, { type: 'tool_use', name: 'respond', id: 'toolu_1', input: respondInput('Hello!') }] },
      { content: [{ type: 'thinking', thinking: 'ok', signature: 'sig2' }, { type: 'tool_use', name: 'respond', id: 'toolu_2', input: respondInput('Again!') }] },
    ]);
    const thinking = { budgetTokens: 1024 };
    const first = await collect(r.model.stream(request({ thinking }), new AbortController().signal));
    expect(first.error).toBeUndefined();
    const stop = first.events.at(-1);
    if (stop?.type !== 'message.stop') throw new Error('no message.stop');
    expect(stop.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    const messages: ModelMessage[] = [
      ...request().messages,
      { role: 'assistant', content: stop.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'delivered' }, { type: 'text', text: 'again' }] },
    ];
    const second = await collect(r.model.stream(request({ thinking, messages }), new AbortController().signal));
    expect(second.error).toBeUndefined();
    expect(second.events.at(-1)?.type).toBe('message.stop');
    const sent = r.server.requests[1]!.body.messages as Array<{ content: Array<{ type: string; text?: string }> }>;
    expect(sent[1]!.content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
  });
});
