/**
 * Requests a network attacker sends (found by a security review): none may end the server
 * process, and a cross-site page may not write without a JSON content type.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import { healthTransport, startServer, type RunningServer } from '../../src/transports/server.js';

let srv: RunningServer | undefined;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

async function serve(): Promise<RunningServer> {
  const runtime = createRuntime({ model: createScriptedModel({ rules: [] }) });
  runtime.registries.actors.register({ name: 'assistant' });
  srv = await startServer({ runtime, transports: [healthTransport(), createAapTransport({ runtime }), createStreamsTransport({ runtime })], port: 0 });
  return srv;
}

/** Writes raw bytes, then reads what comes back until the server closes the connection (or `resetAfterWrite`). */
function raw(port: number, bytes: string, resetAfterWrite = false): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(bytes);
      if (resetAfterWrite) s.resetAndDestroy();
    });
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('error', () => resolve(got));
    s.on('close', () => resolve(got));
  });
}

const portOf = (s: RunningServer) => Number(new URL(s.url).port);
const alive = async (s: RunningServer) => (await fetch(`${s.url}/healthz`)).status;

describe('hostile requests', () => {
  it('server:upgrade:invalid-target — "else the socket is refused with 404": an upgrade to // (which new URL(target, base) cannot parse) is refused (a path no endpoint serves: 404) and the server stays up; a plain GET // is a 404 too, not a 500', async () => {
    const s = await serve();
    for (const target of ['//', '//:99999/x', '//[/x']) {
      const answer = await raw(portOf(s), `GET ${target} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
      expect(answer, target).toMatch(/^HTTP\/1\.1 40[04] /);
      expect(await alive(s), target).toBe(200);
      const plain = await raw(portOf(s), `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      expect(plain, target).toMatch(/^HTTP\/1\.1 40[04] /);
    }
  });

  it('server:upgrade:reset — a client that resets the connection while its upgrade is refused (no subprotocol, unknown path, foreign Host) does not end the server', async () => {
    const s = await serve();
    // In-process, an unhandled socket 'error' surfaces as an uncaught exception (a server process would exit).
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    const refused = [
      'GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
      'GET /nowhere HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
      'GET /ws HTTP/1.1\r\nHost: evil.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    ];
    for (let round = 0; round < 5; round++) {
      for (const r of refused) await raw(portOf(s), r, true);
    }
    await new Promise((r) => setTimeout(r, 50));
    process.off('uncaughtException', onUncaught);
    expect(uncaught).toEqual([]);
    expect(await alive(s)).toBe(200);
  });

  it('server:target:absolute-form — "a server MUST accept the absolute-form in requests" (RFC 9112 §3.2.2): POST http://host/sessions is routed by its path', async () => {
    const s = await serve();
    const body = JSON.stringify({ agent: { name: 'assistant' } });
    const answer = await raw(portOf(s), `POST ${s.url}/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
  });

  it('server:json:nosniff — JSON answers, which echo what a client sent, carry x-content-type-options: nosniff', async () => {
    const s = await serve();
    const r = await fetch(`${s.url}/sessions/%3Cscript%3E`);
    expect(r.status).toBe(404);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('server:body:content-type — a non-empty body without a content type is refused (415), as a cross-site page with no preflight sends it; nothing is created', async () => {
    const s = await serve();
    const body = JSON.stringify({ agent: { name: 'assistant' } });
    const answer = await raw(portOf(s), `POST /sessions HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    expect(answer).toMatch(/^HTTP\/1\.1 415 /);
    expect(answer).toContain('content-type: application/json');
    const list = await (await fetch(`${s.url}/sessions`)).json();
    expect(list.sessions).toEqual([]);
    // With the content type, the same request is taken.
    const ok = await fetch(`${s.url}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(ok.status).toBe(201);
  });
});
