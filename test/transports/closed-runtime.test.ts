/**
 * Transports in front of a runtime that was closed while they still listen (startServer with
 * `closeRuntime: false`, or a handler mounted in an embedder's own server): a session the closed
 * runtime no longer hands out is not missing. docs/concepts/errors.md: "`runtime.closed` | the
 * runtime is closed | 503 | no: another instance", where `session.not_found` (404) says there is
 * no such session: a client told 404 on DELETE takes a session that still exists for gone.
 */
import { describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { createArtifactsTransport } from '../../src/transports/artifacts.js';
import { startServer } from '../../src/transports/server.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import { WsClient } from './streams/clients.js';

const ANSWER = {
  rules: [
    {
      respond: {
        blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'ok', metadata: { partType: 'response' } }], turnState: 'complete' } }],
      },
    },
  ],
} as const;

async function closedRuntimeBehindServer() {
  const runtime = createRuntime({ model: createScriptedModel(ANSWER as never) });
  runtime.registries.actors.register({ name: 'desk' });
  const transports = [createAapTransport({ runtime }), createStreamsTransport({ runtime }), createArtifactsTransport({ runtime, artifacts: runtime.artifacts })];
  const server = await startServer({ runtime, transports, port: 0, closeRuntime: false });
  const session = await runtime.createSession({ actor: 'desk' });
  await (await session.send('hello')).settled;
  const artifact = await runtime.artifacts.put({ sessionId: session.id, data: new TextEncoder().encode('fares'), mimeType: 'text/plain' });
  await runtime.close();
  return { runtime, server, id: session.id, artifactId: artifact.artifactId };
}

describe('a closed runtime behind listening transports', () => {
  it('transports:closed — "runtime.closed | the runtime is closed | 503": every session-scoped AAP route and the SSE stream answer 503 runtime.closed once the runtime is closed, never 404 session.not_found for a session that exists', async () => {
    const { runtime, server, id } = await closedRuntimeBehindServer();
    try {
      expect(runtime.closed).toBe(true);
      const base = server.url;
      const calls: [string, string, unknown?][] = [
        ['GET', `/sessions/${id}`],
        ['GET', `/sessions/${id}/history?type=full`],
        ['POST', `/sessions/${id}/turns`, { messages: [{ role: 'user', content: 'again' }], stream: 'none' }],
        ['DELETE', `/sessions/${id}`],
        ['GET', `/sessions/${id}/events`],
      ];
      for (const [method, path, body] of calls) {
        const res = await fetch(base + path, {
          method,
          ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
        });
        const json = (await res.json()) as { error?: { code?: string } };
        expect({ call: `${method} ${path}`, status: res.status, code: json.error?.code }).toEqual({ call: `${method} ${path}`, status: 503, code: 'runtime.closed' });
      }
      // A session that never existed is no different once closed: nothing can be looked up.
      const unknown = await fetch(`${base}/sessions/sess_never`);
      expect(unknown.status).toBe(503);
    } finally {
      await server.close();
    }
  });

  it('transports:closed:ws — a WebSocket subscribe or send to a session of a closed runtime is refused with code runtime.closed, not session.not_found', async () => {
    const { server, id } = await closedRuntimeBehindServer();
    const ws = await WsClient.connect(server.url.replace('http', 'ws') + '/ws');
    try {
      ws.send({ type: 'subscribe', sessionId: id, ref: 's1' });
      expect(await ws.next((f) => f.ref === 's1')).toMatchObject({ type: 'error', code: 'runtime.closed' });
      ws.send({ type: 'send', sessionId: id, text: 'again', ref: 's2' });
      expect(await ws.next((f) => f.ref === 's2')).toMatchObject({ type: 'error', code: 'runtime.closed' });
    } finally {
      ws.ws.close();
      await server.close();
    }
  });

  it('transports:closed:artifacts — an artifact of a closed runtime is refused with 503 runtime.closed, not 404 artifact.not_found', async () => {
    const { server, artifactId } = await closedRuntimeBehindServer();
    try {
      const res = await fetch(`${server.url}/artifacts/${artifactId}`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('runtime.closed');
    } finally {
      await server.close();
    }
  });
});
