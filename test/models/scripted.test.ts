// docs/concepts/scripted-model.md: "give the call a small `chunkSize`; each chunk yields to the
// event loop and checks the abort signal".
import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/errors.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelEvent } from '../../src/machines/ports.js';

describe('ScriptedModel chunked calls', () => {
  it('scripted:chunks:yield — each chunk yields to the event loop: an abort scheduled as a macrotask (setImmediate) lands mid-call', async () => {
    const text = 'x'.repeat(2000);
    const model = createScriptedModel({
      rules: [{ respond: { chunkSize: 5, blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState: 'complete' } }] } }],
    });
    const ac = new AbortController();
    setImmediate(() => ac.abort());
    let deltas = 0;
    let error: unknown;
    try {
      for await (const ev of model.stream({ system: '', messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }], tools: [] } as never, ac.signal) as AsyncIterable<ModelEvent>) {
        if (ev.type === 'input.delta') deltas++;
      }
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe('model.aborted');
    expect(deltas).toBeGreaterThan(0);
    expect(deltas).toBeLessThan(Math.ceil(JSON.stringify({ parts: [{ text, metadata: { partType: 'response' } }], turnState: 'complete' }).length / 5));
  });
});

describe('ScriptedModel tool-use ids', () => {
  const script = { rules: [{ respond: { blocks: [{ type: 'tool_use' as const, name: 'a', input: {} }, { type: 'tool_use' as const, name: 'b', input: {} }] } }] };
  /** The ids of the tool_use blocks of one call. */
  async function ids(model: ReturnType<typeof createScriptedModel>): Promise<string[]> {
    const out: string[] = [];
    for await (const ev of model.stream({ actor: 'x', system: '', messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }], tools: [] } as never, new AbortController().signal) as AsyncIterable<ModelEvent>) {
      if (ev.type === 'block.stop' && ev.block.type === 'tool_use') out.push(ev.block.id);
    }
    return out;
  }

  it('scripted:ids:default — "`toolu_` + 8 random base-36 characters drawn when the model is made + a counter of that model\'s own": each model counts from 1, and two models never share an id', async () => {
    const a = createScriptedModel(script);
    const b = createScriptedModel(script);
    const [a1, b1, a2] = [await ids(a), await ids(b), await ids(a)];
    expect(a1).toEqual([expect.stringMatching(/^toolu_[a-z0-9]{8}1$/), expect.stringMatching(/^toolu_[a-z0-9]{8}2$/)]);
    expect(b1).toEqual([expect.stringMatching(/^toolu_[a-z0-9]{8}1$/), expect.stringMatching(/^toolu_[a-z0-9]{8}2$/)]);
    expect(a2[0]).toBe(`${a1[0]!.slice(0, 14)}3`);
    expect(a1[0]!.slice(0, 14)).not.toBe(b1[0]!.slice(0, 14));
    expect(new Set([...a1, ...b1, ...a2]).size).toBe(6);
  });

  it('scripted:ids:injected — "`createScriptedModel(script, { newId })` calls `newId(\'toolu\')` for each such block": two models with the same counter give the same ids; a block\'s own `id` is kept; a bad `newId` is refused', async () => {
    const counter = () => {
      let n = 0;
      return (prefix: string) => `${prefix}_${++n}`;
    };
    const a = createScriptedModel(script, { newId: counter() });
    const b = createScriptedModel(script, { newId: counter() });
    expect([await ids(a), await ids(a)]).toEqual([['toolu_1', 'toolu_2'], ['toolu_3', 'toolu_4']]);
    expect(await ids(b)).toEqual(['toolu_1', 'toolu_2']);
    const fixed = createScriptedModel({ rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'a', input: {}, id: 'toolu_mine' }] } }] }, { newId: counter() });
    expect(await ids(fixed)).toEqual(['toolu_mine']);
    expect(() => createScriptedModel(script, { newId: 'toolu_x' as never })).toThrow(
      expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: 'ScriptedModel: newId must be a function (prefix) => id, got string' }),
    );
    await expect(ids(createScriptedModel(script, { newId: () => '' }))).rejects.toThrow(
      expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: 'ScriptedModel: newId(\'toolu\') must return a non-empty string, got ""' }),
    );
  });
});
