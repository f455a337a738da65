import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { splitter } from '../../src/models/loopback-frames.js';
import { startLoopbackMessagesServer } from '../../src/models/loopback-server.js';
import type { LoopbackMessagesServer } from '../../src/models/loopback-server.js';
import { respondInput, TEST_KEY } from './helpers.js';

let server: LoopbackMessagesServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, ...headers }, body: JSON.stringify(body) });

function parseSse(text: string): Array<{ event: string; data: any }> {
  return text
    .split('\n\n')
    .filter((f) => f.length > 0)
    .map((f) => {
      const lines = f.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))!.slice(7);
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6));
      return { event, data };
    });
}

describe('loopback Messages API server', () => {
  it('loopback:request-rules — "thinking blocks must be sent back unchanged ... or the API returns a 400": a thinking request whose tool-use assistant message does not start with thinking, or a tool_use left unanswered, gets the API\'s 400 and consumes no turn', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'text', text: 'ok' }] }] });
    const use = { type: 'tool_use', id: 'toolu_a', name: 'respond', input: {} };
    const answered = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'ok' }] };
    const base = { model: 'm', max_tokens: 4096, stream: false };
    const noThinking = await post(server.url, { ...base, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [use] }, answered] });
    expect(noThinking.status).toBe(400);
    const err = (await noThinking.json()) as { error: { type: string; message: string } };
    expect(err.error.type).toBe('invalid_request_error');
    expect(err.error.message).toContain('messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`');
    const unanswered = await post(server.url, { ...base, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [use] }, { role: 'user', content: 'next' }] });
    expect(unanswered.status).toBe(400);
    expect(((await unanswered.json()) as { error: { message: string } }).error.message).toContain('toolu_a');
    // Well-formed: the thinking block first, every tool_use answered; the scripted turn is still there.
    const thought = { type: 'thinking', thinking: 'plan', signature: 'sig' };
    const ok = await post(server.url, { ...base, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [thought, use] }, answered] });
    expect(ok.status).toBe(200);
  });

  it('loopback:request-rules:forced-tool-thinking — "Forced tool choice (any/tool) + manual extended thinking → 400": both forced choices are refused with thinking enabled and consume no turn; auto is accepted', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'text', text: 'ok' }] }] });
    const base = { model: 'm', max_tokens: 4096, stream: false, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [{ name: 't', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'hi' }] };
    const client = new Anthropic({ baseURL: server.url, apiKey: TEST_KEY, maxRetries: 0 });
    for (const tool_choice of [{ type: 'any' }, { type: 'tool', name: 't' }] as const) {
      const err = await client.messages.create({ ...base, tool_choice } as never).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'Thinking may not be enabled when tool_choice forces tool use.' },
      });
    }
    expect(server.pending).toBe(1);
    expect((await post(server.url, { ...base, tool_choice: { type: 'auto' } })).status).toBe(200);
  });

  it('loopback:request-rules:tool-result-first — "tool_result goes back in the next user message, first in its content": a tool_result after a text block gets the API\'s 400; first, it is accepted', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'text', text: 'ok' }] }] });
    const base = { model: 'm', max_tokens: 1024, stream: false };
    const use = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 't', input: {} }] };
    const result = { type: 'tool_result', tool_use_id: 'toolu_1', content: 'r' };
    const late = await post(server.url, { ...base, messages: [{ role: 'user', content: 'hi' }, use, { role: 'user', content: [{ type: 'text', text: 'x' }, result] }] });
    expect(late.status).toBe(400);
    const err = ((await late.json()) as { error: { type: string; message: string } }).error;
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toBe(
      'messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.',
    );
    // A tool_result after text in a message that follows no tool_use is refused too.
    const stray = await post(server.url, { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, result] }] });
    expect(stray.status).toBe(400);
    expect(((await stray.json()) as { error: { message: string } }).error.message).toContain('messages.0.content.1: unexpected `tool_use_id`');
    expect(server.pending).toBe(1);
    const first = await post(server.url, { ...base, messages: [{ role: 'user', content: 'hi' }, use, { role: 'user', content: [result, { type: 'text', text: 'x' }] }] });
    expect(first.status).toBe(200);
  });

  it('loopback:request-rules:text-blocks — "messages: text content blocks must contain non-whitespace text": a whitespace-only (or empty) text block in a user or assistant message gets the API\'s 400', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'text', text: 'ok' }] }] });
    const base = { model: 'm', max_tokens: 1024, stream: false };
    const cases: Array<[unknown[], string]> = [
      [[{ role: 'user', content: [{ type: 'text', text: ' \n\t' }] }], 'messages: text content blocks must contain non-whitespace text'],
      [[{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'text', text: '\n\n' }] }, { role: 'user', content: 'again' }], 'messages: text content blocks must contain non-whitespace text'],
      [[{ role: 'user', content: [{ type: 'text', text: '' }] }], 'messages: text content blocks must be non-empty'],
    ];
    for (const [messages, message] of cases) {
      const res = await post(server.url, { ...base, messages });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { type: string; message: string } }).error).toEqual({ type: 'invalid_request_error', message });
    }
    expect(server.pending).toBe(1);
    expect((await post(server.url, { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: ' a ' }] }] })).status).toBe(200);
  });

  it('loopback:request-rules:max-tokens-budget — "`max_tokens` must be greater than `thinking.budget_tokens`": a budget equal to max_tokens gets the API\'s 400', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'text', text: 'ok' }] }] });
    const body = { model: 'm', max_tokens: 1024, stream: false, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi' }] };
    const res = await post(server.url, body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('`max_tokens` must be greater than `thinking.budget_tokens`.');
    expect((await post(server.url, { ...body, max_tokens: 1025 })).status).toBe(200);
  });

  it('loopback:sse:frames — every frame has an event line matching its data type, in Messages API order', async () => {
    server = await startLoopbackMessagesServer({
      script: [
        {
          content: [
            { type: 'thinking', thinking: 'plan', signature: 'sig' },
            { type: 'tool_use', name: 'respond', input: respondInput('hello'), id: 'toolu_1' },
          ],
          split: 5,
          pingEvery: 3,
          usage: { inputTokens: 11, outputTokens: 22, cacheReadTokens: 5 },
        },
      ],
    });
    const res = await post(server.url, { model: 'm', max_tokens: 10, stream: true, messages: [] });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const frames = parseSse(await res.text());
    for (const f of frames) expect(f.data.type).toBe(f.event);
    const kinds = frames.map((f) => f.event).filter((e) => e !== 'ping');
    expect(kinds[0]).toBe('message_start');
    expect(kinds.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(frames.filter((f) => f.event === 'ping').length).toBeGreaterThan(2);
    const deltas = frames.filter((f) => f.event === 'content_block_delta');
    const sig = deltas.findIndex((f) => f.data.delta.type === 'signature_delta');
    expect(deltas[sig - 1]!.data.delta.type).toBe('thinking_delta');
    const json = deltas.filter((f) => f.data.delta.type === 'input_json_delta').map((f) => f.data.delta.partial_json);
    expect(json.every((c: string) => c.length <= 5)).toBe(true);
    expect(JSON.parse(json.join(''))).toEqual(respondInput('hello'));
    const md = frames.find((f) => f.event === 'message_delta')!.data;
    expect(md.delta.stop_reason).toBe('tool_use');
    expect(md.usage).toMatchObject({ output_tokens: 22, input_tokens: 11, cache_read_input_tokens: 5 });
    expect(frames[0]!.data.message.usage).toMatchObject({ input_tokens: 11, output_tokens: 1 });
  });

  it('loopback:sdk:stream-helper — the SDK\'s messages.stream() assembles the same final message', async () => {
    const input = respondInput('Two options — £94 and £187.');
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'tool_use', name: 'respond', input, id: 'toolu_9' }], split: { seed: 3 } }] });
    const client = new Anthropic({ baseURL: server.url, apiKey: TEST_KEY, maxRetries: 0 });
    const msg = await client.messages.stream({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(msg.content).toEqual([expect.objectContaining({ type: 'tool_use', id: 'toolu_9', name: 'respond', input })]);
    expect(msg.stop_reason).toBe('tool_use');
  });

  it('loopback:json — a non-streaming request gets a JSON message', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [{ type: 'text', text: 'hi there' }] }] });
    const client = new Anthropic({ baseURL: server.url, apiKey: TEST_KEY, maxRetries: 0 });
    const msg = await client.messages.create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'hi there', citations: null }]);
    expect(msg.stop_reason).toBe('end_turn');
  });

  it('loopback:script — turns are consumed in order; exhaustion is a clear 400; a fallback answers afterwards', async () => {
    server = await startLoopbackMessagesServer({ script: [{ fail: { status: 529 } }] });
    expect((await post(server.url, { stream: false })).status).toBe(529);
    const res = await post(server.url, { stream: false });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/script exhausted/);
    await server.close();
    server = await startLoopbackMessagesServer({ fallback: (req) => ({ content: [{ type: 'text', text: `echo ${req.body.messages.length}` }] }) });
    server.push({ content: [{ type: 'text', text: 'queued' }] });
    expect(server.pending).toBe(1);
    const a = await (await post(server.url, { messages: [] })).json();
    const b = await (await post(server.url, { messages: [1, 2] })).json();
    expect([a.content[0].text, b.content[0].text]).toEqual(['queued', 'echo 2']);
    expect(server.requests.map((q) => q.turn)).toEqual([0, -1]);
  });

  it('loopback:errors — failures carry the API error body and retry-after headers', async () => {
    server = await startLoopbackMessagesServer({ script: [{ fail: { status: 429, retryAfter: 3, retryAfterMs: 2500 } }] });
    const res = await post(server.url, {});
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('retry-after-ms')).toBe('2500');
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect((await fetch(`${server.url}/v1/other`)).status).toBe(404);
  });

  it('loopback:record — requests are recorded with parsed bodies and without credentials', async () => {
    server = await startLoopbackMessagesServer({ script: [{ content: [] }] });
    await post(server.url, { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { authorization: `Bearer ${TEST_KEY}` });
    const rec = server.requests[0]!;
    expect(rec.body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(rec.auth).toBe('x-api-key');
    expect(JSON.stringify(rec)).not.toContain(TEST_KEY);
  });

  it('loopback:split — seeded splits are deterministic and lossless; explicit cut points are honoured', () => {
    const s = 'abcdefghijklmnopqrstuvwxyz😀é'.repeat(4);
    const a = splitter({ seed: 9, maxChunk: 7 })(s);
    const b = splitter({ seed: 9, maxChunk: 7 })(s);
    expect(a).toEqual(b);
    expect(a.join('')).toBe(s);
    expect(splitter([2, 5])('abcdefg')).toEqual(['ab', 'cde', 'fg']);
    expect(splitter(3)('abcdefg')).toEqual(['abc', 'def', 'g']);
  });
});
