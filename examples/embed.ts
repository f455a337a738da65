import { createRuntime, createScriptedModel, annotate } from 'turnstate';

// A model that needs no network: one rule per model call (use turnstate/anthropic for Claude).
const model = createScriptedModel({
  rules: [
    { when: { on: 'user', text: 'flights to (\\w+)' }, respond: { blocks: [
      { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking up flights to $1.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
      { type: 'tool_use', name: 'search_flights', input: { to: '$1' } },
    ] } },
    { when: { on: 'tool_result', tool: 'search_flights' }, respond: { blocks: [
      { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Two direct flights found.', metadata: { partType: 'response' } }], turnState: 'complete' } },
    ] } },
  ],
});

const runtime = createRuntime({ model });
runtime.registries.tools.register({
  name: 'search_flights',
  description: 'Search direct flights from London to a destination.',
  inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  scope: 'generalist',
  handler: async ({ to }: { to: string }) =>
    annotate({ to, flights: [{ flight: 'EJ4521', price: 94 }, { flight: 'BA2043', price: 187 }], margin: 12 },
      { fields: { '/margin': ['audit'] } }),
});
runtime.registries.actors.register({ name: 'flights', system: 'You find flights.', tools: ['search_flights'] });

const session = await runtime.createSession({ actor: 'flights' });
session.events().subscribe((e) => { if (e.type === 'part.received') console.log(`${e.part.metadata.partType}: ${e.part.text ?? JSON.stringify(e.part.data)}`); });
const outcome = await (await session.send('find flights to Corfu')).settled;
console.log(`settled: ${outcome.finalizedBy}; envelope parts: ${outcome.envelope?.parts.map((p) => p.metadata.partType).join(', ')}`);
await runtime.close();
