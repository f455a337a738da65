import { afterEach, describe, expect, it } from 'vitest';
import { LLM_CONTEXT_TOOL_NAME, produceLlmContext } from '../../src/envelope/llm-context.js';
import type { Part } from '../../src/types.js';
import { asModelError, rig } from './helpers.js';
import type { Rig } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.server.close();
  r = undefined;
});

const PARTS: Part[] = [
  { text: 'Looking up flights.', metadata: { partType: 'ack' } },
  { text: 'Two direct options. EasyJet £94pp at 06:15; BA £187pp at 08:45.', metadata: { partType: 'response' } },
  { data: { flights: [{ flightNumber: 'EJ4521', pricePerPerson: 94 }, { flightNumber: 'BA2043', pricePerPerson: 187 }] }, metadata: { partType: 'domain-data' } },
];
const PROSE = 'Two direct LGW→CFU flights. EJ4521 at £94pp is half the price of BA2043 (£187pp) but departs at 06:15.';

const input = (signal = new AbortController().signal) => ({
  sessionId: 's1',
  turnId: 't7',
  actor: 'sally',
  parts: PARTS,
  data: [{ route: { origin: 'LGW', destination: 'CFU' } }],
  signal,
});

describe('llm-context translation', () => {
  it('envelope:llm-context:part — the secondary model writes the part through write_llm_context; text is the tool input', async () => {
    r = await rig(
      [
        {
          content: [
            { type: 'text', text: 'free text that must not leak' },
            { type: 'tool_use', name: LLM_CONTEXT_TOOL_NAME, input: { text: PROSE }, id: 'toolu_ctx' },
          ],
          usage: { inputTokens: 300, outputTokens: 60 },
        },
      ],
      { contextModel: 'claude-haiku-test' },
    );
    const out = await produceLlmContext(r.model, input());
    expect(out.part).toEqual({ text: PROSE, metadata: { partType: 'llm-context', actor: 'sally', source: 'translator' } });
    expect(out.usage).toMatchObject({ inputTokens: 300, outputTokens: 60 });
    const body = r.server.requests[0]!.body;
    expect(body.model).toBe('claude-haiku-test');
    expect(body.tool_choice).toEqual({ type: 'any' });
    expect(body.tools.map((t: { name: string }) => t.name)).toEqual([LLM_CONTEXT_TOOL_NAME]);
    const prompt: string = body.messages[0].content[0].text;
    expect(prompt).toContain(PARTS[1]!.text);
    expect(prompt).not.toContain('Looking up flights.');
    expect(prompt).toContain('EJ4521');
    expect(prompt).toContain('"destination": "CFU"');
  });

  it('envelope:llm-context:no-call — a reply without the tool call is a ModelError, not free text', async () => {
    r = await rig([{ content: [{ type: 'text', text: 'Here is some prose.' }] }]);
    const e = asModelError(await produceLlmContext(r.model, input()).catch((x: unknown) => x));
    expect(e.message).toMatch(/did not call write_llm_context/);
  });

  it('envelope:llm-context:truncated — a cut-off call at max_tokens is model.max_tokens', async () => {
    r = await rig([{ content: [{ type: 'tool_use', name: LLM_CONTEXT_TOOL_NAME, rawInput: '{"text":"Two dir', id: 'x' }], stopReason: 'max_tokens' }]);
    const e = asModelError(await produceLlmContext(r.model, input()).catch((x: unknown) => x));
    expect(e.code).toBe('model.max_tokens');
  });

  it('envelope:llm-context:refusal — a refusal is model.refusal', async () => {
    r = await rig([{ content: [], stopReason: 'refusal' }]);
    const e = asModelError(await produceLlmContext(r.model, input()).catch((x: unknown) => x));
    expect(e.code).toBe('model.refusal');
  });

  it('envelope:llm-context:abort — an aborted call rejects with model.aborted', async () => {
    r = await rig([{ content: [{ type: 'tool_use', name: LLM_CONTEXT_TOOL_NAME, input: { text: PROSE } }], delayMs: 2000 }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const e = asModelError(await produceLlmContext(r.model, input(ac.signal)).catch((x: unknown) => x));
    expect(e.code).toBe('model.aborted');
  });
});
