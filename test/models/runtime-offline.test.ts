import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicModel } from '../../src/models/anthropic.js';
import { startLoopbackMessagesServer } from '../../src/models/loopback-server.js';
import type { LoopbackMessagesServer } from '../../src/models/loopback-server.js';
import { createRuntime } from '../../src/runtime.js';
import type { SessionEvent } from '../../src/types.js';
import { TEST_KEY } from './helpers.js';

let server: LoopbackMessagesServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('turnstate offline: the runtime, the Anthropic adapter and the loopback server', () => {
  it('models:e2e:three-call — a tool-use loop over the real SDK: part deltas stream, history goes back in a shape the API accepts', async () => {
    server = await startLoopbackMessagesServer({
      script: [
        {
          content: [
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [{ text: 'Looking up flights to Corfu.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'search_flights', id: 'toolu_search', input: { to: 'Corfu' } },
          ],
          split: 6,
        },
        {
          content: [
            {
              type: 'tool_use',
              name: 'respond',
              id: 'toolu_done',
              input: { parts: [{ text: 'Two direct options: EasyJet £94pp, BA £187pp.', metadata: { partType: 'response' } }], turnState: 'complete' },
            },
          ],
          split: 5,
          usage: { inputTokens: 900, outputTokens: 70, cacheReadTokens: 800 },
        },
      ],
    });
    const model = createAnthropicModel({ client: new Anthropic({ baseURL: server.url, apiKey: TEST_KEY, maxRetries: 0 }), model: 'claude-test' });
    const rt = createRuntime({ model });
    rt.registries.tools.register({
      name: 'search_flights',
      description: 'Search flights by destination',
      inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
      scope: 'generalist',
      handler: async (a: { to: string }) => ({ flights: [{ to: a.to, price: 94 }] }),
    });
    rt.registries.actors.register({ name: 'flights', system: 'You are the flights desk.', tools: ['search_flights'] });
    const s = await rt.createSession({ actor: 'flights' });
    const events: SessionEvent[] = [];
    s.events().subscribe((e) => events.push(e));
    const out = await (await s.send('find flights to Corfu')).settled;
    expect(out.finalizedBy).toBe('complete');

    // part.delta events rebuild the streamed texts
    const deltas = events.filter((e): e is Extract<SessionEvent, { type: 'part.delta' }> => e.type === 'part.delta');
    const texts = new Map<string, string>();
    for (const d of deltas) texts.set(`${d.callId}:${d.index}`, (texts.get(`${d.callId}:${d.index}`) ?? '') + d.text);
    expect([...texts.values()]).toEqual(['Looking up flights to Corfu.', 'Two direct options: EasyJet £94pp, BA £187pp.']);

    // what the SDK sent on the second call
    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]!.body;
    expect(second.tool_choice).toEqual({ type: 'any' });
    expect(second.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(second.tools.at(-1).cache_control).toEqual({ type: 'ephemeral' });
    expect(second.tools.find((t: { name: string }) => t.name === 'respond').eager_input_streaming).toBe(true);
    const msgs = second.messages as Array<{ role: string; content: Array<{ type: string; tool_use_id?: string }> }>;
    for (let i = 1; i < msgs.length; i++) expect(msgs[i]!.role).not.toBe(msgs[i - 1]!.role);
    const asst = msgs.findIndex((m) => m.role === 'assistant' && m.content.some((b) => b.type === 'tool_use'));
    const uses = msgs[asst]!.content.filter((b) => b.type === 'tool_use') as unknown as Array<{ id: string }>;
    const next = msgs[asst + 1]!.content;
    expect(next.slice(0, uses.length).map((b) => [b.type, b.tool_use_id])).toEqual(uses.map((u) => ['tool_result', u.id]));
  });

  it('models:e2e:cut-keeps-applied — a response that fails mid-stream after its ack reached the user leaves that ack in the history, so the next call sees what the user saw (model:history:well-formed)', async () => {
    const R = (text: string, partType: string, turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ metadata: { partType }, text }], turnState } });
    server = await startLoopbackMessagesServer({
      script: [
        { content: [R('Looking into it', 'ack', 'awaiting'), R('the final answer which is long enough', 'response', 'complete')], dropAfterEvents: 30, split: 4 },
        { content: [R('second turn answer', 'response', 'complete')] },
      ],
    });
    const rt = createRuntime({ model: createAnthropicModel({ apiKey: TEST_KEY, baseURL: server.url, retry: { retries: 0 } }) });
    rt.registries.actors.register({ name: 'a', system: 'sys' });
    const s = await rt.createSession({ actor: 'a' });
    const events: SessionEvent[] = [];
    s.events().subscribe((e) => events.push(e));
    const first = await (await s.send('first question')).settled;
    expect(first.finalizedBy).toBe('error');
    // The ack was delivered before the stream broke.
    expect(events.some((e) => e.type === 'part.received' && e.part.text === 'Looking into it')).toBe(true);
    expect((await (await s.send('second question')).settled).finalizedBy).toBe('complete');
    const messages = (server.requests[1]!.body as { messages: { role: string; content: { type: string; text?: string; input?: unknown }[] }[] }).messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(messages[1]!.content)).toContain('Looking into it');
    expect(messages[2]!.content.map((b) => b.type)).toEqual(['tool_result', 'text']);
    await rt.close();
  });

  it('models:e2e:whitespace-text — "text content blocks must contain non-whitespace text": a whitespace-only text block the model wrote (thinking on, tool_choice auto) does not make every later turn of the session fail', async () => {
    const R = (id: string, text: string) => ({ type: 'tool_use' as const, name: 'respond', id, input: { parts: [{ metadata: { partType: 'response' }, text }], turnState: 'complete' } });
    server = await startLoopbackMessagesServer({
      script: [
        { content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig1' }, { type: 'text', text: '\n\n' }, R('toolu_1', 'Hello!')] },
        { content: [{ type: 'thinking', thinking: 'ok', signature: 'sig2' }, R('toolu_2', 'Again!')] },
        { content: [{ type: 'thinking', thinking: 'ok', signature: 'sig3' }, R('toolu_3', 'And again!')] },
      ],
    });
    const rt = createRuntime({ model: createAnthropicModel({ apiKey: TEST_KEY, baseURL: server.url, model: 'claude-test', retry: { retries: 0 } }) });
    rt.registries.actors.register({ name: 'a', system: 'You are helpful.', tools: [], thinking: { budgetTokens: 1024 } });
    const s = await rt.createSession({ actor: 'a' });
    for (const text of ['hi', 'again', 'and again']) {
      const out = await (await s.send(text)).settled;
      expect([text, out.finalizedBy, out.error?.message]).toEqual([text, 'complete', undefined]);
    }
    expect(server.requests).toHaveLength(3);
    expect(server.requests[1]!.body.tool_choice).toEqual({ type: 'auto' });
    await rt.close();
  });
});
