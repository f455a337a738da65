/**
 * Watch a live session in Stately's inspector through @statelyai/inspect's local server.
 *
 *   npx tsx docs/machines/inspect-live.ts [--port 8080] [--once]
 *
 * Starts the inspector server on 127.0.0.1:<port> (no browser is opened), runs one scripted turn
 * with the inspector attached, and keeps the server running so http://localhost:<port> shows the
 * session actor (the page embeds https://stately.ai/inspect). `--once` stops after the turn.
 */
import { createWebSocketInspector } from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import type { InspectionEvent } from 'xstate';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';

const args = process.argv.slice(2);
const portArg = args.indexOf('--port');
const port = portArg >= 0 ? Number(args[portArg + 1]) : 8080;
if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`--port must be a TCP port number, not "${args[portArg + 1]}"`);
const once = args.includes('--once');

const server = createInspectorServer({ port, autoOpen: false });
// The session machine's config is deeper than the default depth (10); 32 sends it whole.
const inspector = createWebSocketInspector({ url: `ws://localhost:${port}`, serializationDepthLimit: 32 });

const model = createScriptedModel({
  rules: [
    {
      when: { on: 'user' },
      respond: {
        blocks: [
          { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking up flights.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
          { type: 'tool_use', name: 'search_flights', input: { to: 'Corfu' } },
        ],
      },
    },
    {
      when: { on: 'tool_result', tool: 'search_flights' },
      respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'One direct flight.', metadata: { partType: 'response' } }], turnState: 'complete' } }] },
    },
  ],
});

const rt = createRuntime({
  model,
  // inspector.inspect is an observer ({ next }); RuntimeOptions.inspect takes a callback.
  inspect: (e) => inspector.inspect.next?.(e as InspectionEvent),
});
rt.registries.tools.register({
  name: 'search_flights',
  description: 'Search flights by destination',
  inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  scope: 'generalist',
  handler: async (a: { to: string }) => ({ flights: [{ to: a.to, price: 94 }] }),
});
rt.registries.actors.register({ name: 'flights', tools: ['search_flights'] });

const session = await rt.createSession({ actor: 'flights' });
const outcome = await (await session.send('find flights to Corfu')).settled;
console.log(`turn settled in ${outcome.finalizedBy}; inspector at http://localhost:${port}`);

const shutdown = async () => {
  await rt.close();
  inspector.stop();
  server.stop();
};
if (once) {
  // Give the inspector a moment to flush its queued events before closing the socket.
  setTimeout(() => void shutdown(), 200);
} else {
  process.once('SIGINT', () => void shutdown());
}
