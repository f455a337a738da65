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
