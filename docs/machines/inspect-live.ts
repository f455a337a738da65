/**
 * Watch a live session in Stately's inspector through a local relay.
 *
 *   npx tsx docs/machines/inspect-live.ts [--port 8080] [--once]
 *
 * Starts the inspector relay on 127.0.0.1:<port> (only this machine can connect; `--port 0`
 * picks a free port), runs one scripted turn with the inspector attached, and keeps the relay
 * running so http://localhost:<port> shows the session actor (the page embeds
 * https://stately.ai/inspect). `--once` stops after the turn.
 *
 * The relay does what `createInspectorServer` from `@statelyai/inspect/server` does (serve the
 * bridge page; relay every WebSocket message to the other clients; replay the last 200 to a new
 * one), but that server listens on every interface and takes any page's WebSocket: a web page
 * the user visits, or another host on the network, could read the session events (the user's
 * messages included) and inject frames into the inspector page. This one is bound to 127.0.0.1
 * and refuses, with 403, a WebSocket upgrade whose Origin is not its own page's (a Node client,
 * such as the inspector below, sends none) or whose Host is not a loopback name (DNS rebinding).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createWebSocketInspector } from '@statelyai/inspect';
import { WebSocket, WebSocketServer } from 'ws';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';

const args = process.argv.slice(2);
const portArg = args.indexOf('--port');
const requestedPort = portArg >= 0 ? Number(args[portArg + 1]) : 8080;
if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65535) throw new Error(`--port must be a TCP port number, not "${args[portArg + 1]}"`);
const once = args.includes('--once');

const INSPECTOR_URL = 'https://stately.ai/inspect';
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
const MAX_BUFFERED = 200;

/** The page: Stately's inspector in an iframe, fed from the relay over a WebSocket to the page's own host. */
const bridgePage = `<!DOCTYPE html>
<html>
<head>
  <title>Stately Inspector</title>
  <style>* { margin: 0; padding: 0; } html, body { height: 100%; } iframe { width: 100%; height: 100%; border: none; }</style>
</head>
<body>
  <iframe id="inspector" src="${INSPECTOR_URL}"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.origin === ${JSON.stringify(new URL(INSPECTOR_URL).origin)} && e.data && e.data.type === '@statelyai.connected') {
        connected = true;
        for (const event of buffer) iframe.contentWindow.postMessage(event, '*');
        buffer.length = 0;
      }
    });
    const ws = new WebSocket('ws://' + location.host);
    ws.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (connected) iframe.contentWindow.postMessage(data, '*');
      else buffer.push(data);
    };
  </script>
</body>
</html>`;

/** The host name of a Host header (`localhost:8080` -> `localhost`, `[::1]:8080` -> `[::1]`). */
function hostName(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(host.trim().toLowerCase());
  return m?.[1];
}

/** Why an upgrade is refused (undefined: accepted). */
function refusal(req: IncomingMessage, port: number): string | undefined {
  if (!LOOPBACK_NAMES.has(hostName(req.headers.host) ?? '')) return `Host ${JSON.stringify(req.headers.host)} is not this machine's loopback name`;
  const origin = req.headers.origin;
  // No Origin: not a browser page (the Node inspector). A page may connect only from this relay's own.
  if (origin !== undefined && ![...LOOPBACK_NAMES].some((name) => origin.toLowerCase() === `http://${name}:${port}`)) return `Origin ${origin} is not the inspector page's`;
  return undefined;
}

const http = createServer((req, res) => {
  if (!LOOPBACK_NAMES.has(hostName(req.headers.host) ?? '')) {
    res.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden host\n');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(bridgePage);
});
const wss = new WebSocketServer({ noServer: true });
const buffered: string[] = [];
wss.on('connection', (ws) => {
  for (const msg of buffered) ws.send(msg);
  ws.on('message', (data) => {
    const msg = data.toString();
    buffered.push(msg);
    if (buffered.length > MAX_BUFFERED) buffered.shift();
    for (const client of wss.clients) if (client !== ws && client.readyState === WebSocket.OPEN) client.send(msg);
  });
});
http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
  socket.on('error', () => socket.destroy());
  const why = refusal(req, port);
  if (why !== undefined) {
    socket.end(`HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(why) + 1}\r\n\r\n${why}\n`);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
});
await new Promise<void>((resolve, reject) => {
  http.once('error', reject);
  http.listen(requestedPort, '127.0.0.1', () => resolve());
});
const port = (http.address() as AddressInfo).port;
console.log(`inspector relay on ws://127.0.0.1:${port} (loopback only)`);

// The session machine's config is deeper than the default depth (10); 32 sends it whole.
const inspector = createWebSocketInspector({ url: `ws://127.0.0.1:${port}`, serializationDepthLimit: 32 });

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
  // An observer ({ next }) of XState's inspection events, which RuntimeOptions.inspect takes as it is.
  inspect: inspector.inspect,
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
  for (const client of wss.clients) client.terminate();
  wss.close();
  http.close();
};
if (once) {
  // Give the inspector a moment to flush its queued events before closing the socket.
  setTimeout(() => void shutdown(), 200);
} else {
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
}
