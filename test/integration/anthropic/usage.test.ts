import { afterEach, describe, expect, it } from 'vitest';
import { LLM_CONTEXT_TOOL_NAME } from '../../../src/envelope/llm-context.js';
import type { LoopbackTurn } from '../../../src/models/loopback-server.js';
import type { Usage } from '../../../src/types.js';
import { record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

function sum(us: Usage[]): Usage {
  const out: Usage = { inputTokens: 0, outputTokens: 0 };
  let cr = 0;
  let cw = 0;
  for (const u of us) {
    out.inputTokens += u.inputTokens;
    out.outputTokens += u.outputTokens;
    cr += u.cacheReadTokens ?? 0;
    cw += u.cacheWriteTokens ?? 0;
  }
  if (cr) out.cacheReadTokens = cr;
  if (cw) out.cacheWriteTokens = cw;
  return out;
}

function script(withContext: boolean): LoopbackTurn[] {
  const turns: LoopbackTurn[] = [
    {
      content: [
        { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'On it.')], turnState: 'awaiting' } },
        { type: 'tool_use', name: 'lookup', id: 'toolu_lookup', input: { q: 'x' } },
      ],
      usage: { inputTokens: 1200, outputTokens: 80, cacheWriteTokens: 1100 },
    },
    {
      content: [{ type: 'tool_use', name: 'respond', id: 'toolu_think', input: { parts: [textPart('thinking', 'Comparing.')], turnState: 'awaiting' } }],
      usage: { inputTokens: 1350, outputTokens: 25, cacheReadTokens: 1100 },
    },
    {
      content: [{ type: 'tool_use', name: 'respond', id: 'toolu_done', input: { parts: [textPart('response', 'Done.')], turnState: 'complete' } }],
      usage: { inputTokens: 1400, outputTokens: 60, cacheReadTokens: 1300, cacheWriteTokens: 50 },
    },
  ];
  if (withContext) {
    turns.push({
      content: [{ type: 'tool_use', name: LLM_CONTEXT_TOOL_NAME, id: 'toolu_ctx', input: { text: 'Dense analysis.' } }],
      usage: { inputTokens: 210, outputTokens: 33 },
    });
  }
  return turns;
}

async function run(withContext: boolean) {
  r = await rig({ script: script(withContext) });
  r.rt.registries.tools.register({
    name: 'lookup',
    description: 'Look something up.',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    scope: 'generalist',
    handler: async () => ({ hits: 3 }),
  });
  r.rt.registries.actors.register({ name: 'counter', tools: ['lookup'] });
  const s = await r.rt.createSession({ actor: 'counter' });
  const rec = record(s);
  const out = await (await s.send('Count my tokens.', withContext ? { consumesLlmContext: true } : {})).settled;
  return { s, rec, out, rig: r };
}

describe('the Claude path: usage', () => {
  it('anthropic:usage:per-call-and-turn — one model.usage per call with the server\'s counts; turn.settled.usage is their sum', async () => {
    const { rec, out, rig } = await run(false);
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(3);
    const perCall = rec.of('model.usage');
    expect(perCall.map((e) => [e.actor, e.stopReason])).toEqual([
      ['counter', 'tool_use'],
      ['counter', 'tool_use'],
      ['counter', 'tool_use'],
    ]);
    // exactly what the server reported (message_start input, cumulative message_delta output, cache counts)
    expect(perCall.map((e) => e.usage)).toEqual([
      { inputTokens: 1200, outputTokens: 80, cacheReadTokens: 0, cacheWriteTokens: 1100 },
      { inputTokens: 1350, outputTokens: 25, cacheReadTokens: 1100, cacheWriteTokens: 0 },
      { inputTokens: 1400, outputTokens: 60, cacheReadTokens: 1300, cacheWriteTokens: 50 },
    ]);
    const settled = rec.of('turn.settled');
    expect(settled).toHaveLength(1);
    expect(settled[0]!.usage).toEqual(sum(perCall.map((e) => e.usage)));
    expect(settled[0]!.usage).toEqual({ inputTokens: 3950, outputTokens: 165, cacheReadTokens: 2400, cacheWriteTokens: 1150 });
    expect(out.usage).toEqual(settled[0]!.usage);
    // each model.usage is published once its call's response has been read, before the next request
    const usageSeqs = perCall.map((e) => e.seq);
    const toolResult = rec.of('tool.result')[0]!;
    expect(usageSeqs[0]).toBeLessThan(toolResult.seq);
  });

  it('anthropic:usage:llm-context-call — the llm-context call is a model call too: it gets its model.usage and the turn total stays their sum', async () => {
    const { rec, out, rig } = await run(true);
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(4);
    const perCall = rec.of('model.usage');
    expect(perCall.map((e) => e.usage.inputTokens)).toEqual([1200, 1350, 1400, 210]);
    expect(rec.of('turn.settled')[0]!.usage).toEqual(sum(perCall.map((e) => e.usage)));
    expect(out.usage.inputTokens).toBe(1200 + 1350 + 1400 + 210);
  });
});
