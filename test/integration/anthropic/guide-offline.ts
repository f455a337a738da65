import { createRuntime } from 'turnstate';
import { createAnthropicModel } from 'turnstate/anthropic';
import { startLoopbackMessagesServer } from 'turnstate/loopback';

// A local server that speaks the Messages API and answers from a script: no network, no key.
const server = await startLoopbackMessagesServer({
  script: [
    {
      content: [
        { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Checking the forecast.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
        { type: 'tool_use', name: 'get_forecast', input: { city: 'Corfu' } },
      ],
    },
    {
      content: [
        { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Sunny in Corfu tomorrow, 28 °C.', metadata: { partType: 'response' } }], turnState: 'complete' } },
      ],
      split: 4, // stream the tool input in 4-character chunks
    },
  ],
});

// The real SDK, pointed at the loopback server.
const model = createAnthropicModel({ baseURL: server.url, apiKey: 'sk-ant-loopback-only', model: 'claude-sonnet-4-6' });
const runtime = createRuntime({ model });
runtime.registries.tools.register({
  name: 'get_forecast',
  description: 'Tomorrow\'s forecast for a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  scope: 'generalist',
  handler: async ({ city }: { city: string }) => ({ city, sky: 'sunny', highC: 28 }),
});
runtime.registries.actors.register({ name: 'weather', system: 'You report the weather.', tools: ['get_forecast'] });

const session = await runtime.createSession({ actor: 'weather' });
session.events().subscribe((e) => {
  if (e.type === 'part.received') console.log(`[${e.part.metadata.partType}] ${e.part.text}`);
  if (e.type === 'model.usage') console.log(`model call: ${e.usage.inputTokens} in, ${e.usage.outputTokens} out`);
});
const turn = await session.send('Will it be sunny in Corfu tomorrow?');
const outcome = await turn.settled;
console.log(`settled: ${outcome.finalizedBy}; ${server.requests.length} requests; tool_choice ${JSON.stringify(server.requests[0]?.body.tool_choice)}`);

await runtime.close();
await server.close();
