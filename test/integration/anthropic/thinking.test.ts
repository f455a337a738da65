import { afterEach, describe, expect, it } from 'vitest';
import { bodies, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

const THOUGHT = 'The user wants direct flights only.\nCheck both airports; prefer "direct" — café-level detail 🙂.';
const SIGNATURE = 'EqQBCkgIARABGAIiQL0sig+/=naturé';

describe('the Claude path: extended thinking', () => {
  it('anthropic:thinking:reasoning-trace — thinking: { budgetTokens } sends tool_choice auto and the thinking param; a thinking block becomes a reasoning-trace part; the next request sends it back unchanged with its signature', async () => {
    r = await rig({
      script: [
        {
          content: [
            { type: 'thinking', thinking: THOUGHT, signature: SIGNATURE },
            { type: 'redacted_thinking', data: 'RkFLRS1SRURBQ1RFRA==' },
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Looking.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'search_flights', id: 'toolu_search', input: { to: 'CFU' } },
          ],
          split: 9,
        },
        {
          content: [
            { type: 'thinking', thinking: 'Two results; answer now.', signature: 'sig-2' },
            { type: 'tool_use', name: 'respond', id: 'toolu_done', input: { parts: [textPart('response', 'Two direct flights.')], turnState: 'complete' } },
          ],
        },
      ],
    });
    r.rt.registries.tools.register({
      name: 'search_flights',
      description: 'Search flights.',
      inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
      scope: 'generalist',
      handler: async () => ({ count: 2 }),
    });
    r.rt.registries.actors.register({ name: 'thinker', system: 'Think first.', tools: ['search_flights'], thinking: { budgetTokens: 2048 }, maxTokens: 1024 });
    const s = await r.rt.createSession({ actor: 'thinker' });
    const rec = record(s);
    const out = await (await s.send('Direct flights to Corfu?')).settled;
    expect(out.finalizedBy).toBe('complete');

    const [first, second] = bodies(r.server);
    expect(r.server.requests).toHaveLength(2);
    for (const b of [first, second]) {
      expect(b.tool_choice).toEqual({ type: 'auto' });
      expect(b.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
      // the budget counts against max_tokens, which must exceed it
      expect(b.max_tokens).toBeGreaterThan(2048);
    }

    // each thinking block became a reasoning-trace part, published when the block stopped
    const traces = rec.of('part.received').filter((e) => e.part.metadata.partType === 'reasoning-trace');
    expect(traces.map((e) => e.part.text)).toEqual([THOUGHT, 'Two results; answer now.']);
    const order = rec.of('part.received').map((e) => e.part.metadata.partType);
    expect(order).toEqual(['reasoning-trace', 'ack', 'reasoning-trace', 'response']);
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(order);

    // the next request: the assistant message opens with the thinking blocks, unchanged
    const asst = second.messages[1];
    expect(asst.role).toBe('assistant');
    expect(asst.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature: SIGNATURE });
    expect(asst.content[1]).toEqual({ type: 'redacted_thinking', data: 'RkFLRS1SRURBQ1RFRA==' });
    expect(asst.content.slice(2).map((b: any) => b.id)).toEqual(['toolu_ack', 'toolu_search']);
    expect(second.messages[2].content.map((b: any) => b.tool_use_id)).toEqual(['toolu_ack', 'toolu_search']);
    rec.stop();
  });

  it('anthropic:thinking:cut-keeps-thinking — "thinking blocks (with signature) must be sent back unchanged in the tool-use loop, or the API returns a 400": a response cut mid-stream after its thinking and ack keeps them, in order, before the applied ack; the next turn completes', async () => {
    const long = 'Two direct flights: ' + 'EasyJet at 06:15, BA at 08:45. '.repeat(30);
    r = await rig({
      script: [
        {
          content: [
            { type: 'thinking', thinking: 'Ack first.', signature: 'sig-cut' },
            { type: 'redacted_thinking', data: 'UkVEQUNURUQ=' },
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Looking.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'respond', id: 'toolu_cut', input: { parts: [textPart('response', long)], turnState: 'complete' } },
          ],
          split: 10,
          streamError: { afterEvents: 60, type: 'overloaded_error' },
        },
        { content: [{ type: 'thinking', thinking: 'Answer now.', signature: 'sig-2' }, { type: 'tool_use', name: 'respond', id: 'toolu_done', input: { parts: [textPart('response', 'Two direct flights.')], turnState: 'complete' } }] },
      ],
    });
    r.rt.registries.actors.register({ name: 'thinker', thinking: { budgetTokens: 2048 } });
    const s = await r.rt.createSession({ actor: 'thinker' });
    const rec = record(s);
    const cut = await (await s.send('Direct flights to Corfu?')).settled;
    expect(cut.error?.code).toBe('model.stream_error');
    expect(rec.of('part.received').map((e) => e.part.metadata.partType)).toEqual(['reasoning-trace', 'ack', 'error']);
    const next = await (await s.send('Try again?')).settled;
    expect(next.finalizedBy).toBe('complete');
    const second = bodies(r.server)[1];
    const asst = second.messages[1];
    expect(asst.role).toBe('assistant');
    expect(asst.content).toEqual([
      { type: 'thinking', thinking: 'Ack first.', signature: 'sig-cut' },
      { type: 'redacted_thinking', data: 'UkVEQUNURUQ=' },
      { type: 'tool_use', id: 'toolu_ack', name: 'respond', input: { parts: [textPart('ack', 'Looking.')], turnState: 'awaiting' } },
    ]);
    rec.stop();
  });
});
