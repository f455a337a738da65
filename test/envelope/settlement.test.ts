/**
 * Settlement through the runtime: citations checked against the turn's domain-data, and the
 * reasoningTraces option (docs/concepts/envelope.md).
 */
import { describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime } from '../../src/runtime.js';
import type { RuntimeOptions } from '../../src/api.js';
import type { SessionEvent } from '../../src/types.js';

const SECRET_THOUGHT = 'The user seems price-sensitive; lead with the cheapest.';

const script: ModelScript = {
  rules: [
    {
      when: { on: 'user' },
      respond: {
        blocks: [
          { type: 'thinking', thinking: SECRET_THOUGHT },
          { type: 'tool_use', name: 'search_flights', input: {} },
        ],
      },
    },
    {
      when: { on: 'tool_result' },
      respond: {
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: {
              parts: [
                { text: 'TS205 is cheapest.', metadata: { partType: 'response' } },
                { data: { path: '/search_flights/flights/0', title: 'Fares' }, metadata: { partType: 'citation' } },
                { data: { path: '/search_flights/hotels', title: 'Hotels' }, metadata: { partType: 'citation' } },
              ],
              turnState: 'complete',
            },
          },
        ],
      },
    },
  ],
};

async function run(extra: Partial<RuntimeOptions> = {}) {
  const rt = createRuntime({ model: createScriptedModel(script), ...extra });
  rt.registries.tools.register({
    name: 'search_flights',
    description: 'Search flights.',
    inputSchema: { type: 'object', properties: {} },
    scope: 'generalist',
    handler: () => ({ flights: [{ id: 'TS205', price: 42 }] }),
  });
  rt.registries.actors.register({ name: 'desk', tools: ['search_flights'] });
  const s = await rt.createSession({ actor: 'desk' });
  const out = await (await s.send('cheapest flight to Corfu')).settled;
  const log = await rt.store.readEvents(s.id, 0);
  await rt.close();
  return { out, log };
}

const received = (log: SessionEvent[], partType: string) =>
  log.flatMap((e) => (e.type === 'part.received' && e.part.metadata.partType === partType ? [e.part] : []));

describe('settlement: citations', () => {
  it('envelope:citation:settled-warning — an unbound citation does not fail the turn: it settles complete, the envelope leaves it out and records the warning in the log', async () => {
    const { out, log } = await run();
    expect(out.finalizedBy).toBe('complete');
    // Streaming consumers saw both citations as they arrived.
    expect(received(log, 'citation')).toHaveLength(2);
    const settled = log.find((e) => e.type === 'envelope.settled');
    if (settled?.type !== 'envelope.settled') throw new Error('no envelope');
    const cites = settled.envelope.parts.filter((p) => p.metadata.partType === 'citation');
    expect(cites.map((c) => c.data!.title)).toEqual(['Fares']);
    expect(settled.envelope.meta.warnings).toEqual([
      expect.objectContaining({ code: 'citation.unbound', message: expect.stringContaining('"/search_flights/hotels"') }),
    ]);
    expect(out.envelope).toEqual(settled.envelope);
  });
});

describe('settlement: reasoningTraces option', () => {
  it('envelope:reasoning:keep — by default each thinking block is a reasoning-trace part with its text, in the log and the envelope', async () => {
    const { out, log } = await run();
    expect(received(log, 'reasoning-trace')).toEqual([{ text: SECRET_THOUGHT, metadata: { partType: 'reasoning-trace' } }]);
    expect(out.envelope!.parts.some((p) => p.metadata.partType === 'reasoning-trace' && p.text === SECRET_THOUGHT)).toBe(true);
  });

  it('envelope:reasoning:redact — the part says the model reasoned (redacted: true) and its text is nowhere in the log or the envelope', async () => {
    const { out, log } = await run({ reasoningTraces: 'redact' });
    expect(received(log, 'reasoning-trace')).toEqual([{ text: '', metadata: { partType: 'reasoning-trace', redacted: true } }]);
    expect(JSON.stringify(log)).not.toContain(SECRET_THOUGHT);
    expect(JSON.stringify(out.envelope)).not.toContain(SECRET_THOUGHT);
  });

  it('envelope:reasoning:drop — no reasoning-trace part at all; the turn is otherwise the same', async () => {
    const { out, log } = await run({ reasoningTraces: 'drop' });
    expect(received(log, 'reasoning-trace')).toEqual([]);
    expect(JSON.stringify(log)).not.toContain(SECRET_THOUGHT);
    expect(out.finalizedBy).toBe('complete');
    expect(out.envelope!.parts.map((p) => p.metadata.partType)).toEqual(['response', 'citation', 'domain-data']);
  });

  it('envelope:reasoning:invalid — an unknown mode is refused at createRuntime, naming the option and the modes', () => {
    expect(() => createRuntime({ model: createScriptedModel(script), reasoningTraces: 'hide' as never })).toThrow(/reasoningTraces must be "keep", "redact", "drop", not "hide"/);
  });
});
