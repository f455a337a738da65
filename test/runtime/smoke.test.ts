import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { SessionEvent } from '../../src/types.js';

describe('smoke', () => {
  it('runs the three-call pattern', async () => {
    const model = createScriptedModel({
      rules: [
        { when: { on: 'user' }, respond: { blocks: [
          { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking up flights.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
          { type: 'tool_use', name: 'search_flights', input: { to: 'Corfu' } },
        ] } },
        { when: { on: 'tool_result', tool: 'search_flights' }, respond: { chunkSize: 7, blocks: [
          { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Two direct options.', metadata: { partType: 'response' } }, { data: { n: 2 }, metadata: { partType: 'domain-data' } }], turnState: 'complete' } },
        ] } },
      ],
    });
    const rt = createRuntime({ model });
    rt.registries.tools.register({ name: 'search_flights', description: 'Search flights by destination', inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] }, scope: 'generalist', handler: async (a: any) => ({ flights: [{ to: a.to, price: 94 }] }) });
    rt.registries.actors.register({ name: 'flights', tools: ['search_flights'] });
    const s = await rt.createSession({ actor: 'flights' });
    const events: SessionEvent[] = [];
    s.events().subscribe((e) => events.push(e));
    const ref = await s.send('find flights to Corfu');
    const out = await ref.settled;
    console.log(events.map((e) => `${e.seq} ${e.type} ${'part' in e ? (e as any).part.metadata.partType : ''}${e.type === 'part.delta' ? JSON.stringify((e as any).text) : ''}`).join('\n'));
    expect(out.finalizedBy).toBe('complete');
    expect(out.envelope?.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data']);
  });
});
