/**
 * startServer: transports composed on one node:http server, WebSocket upgrade delegation,
 * graceful close.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { TurnstateError } from '../../src/errors.js';
import { MAX_TIMER_MS } from '../../src/limits.js';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS, healthTransport, startServer } from '../../src/transports/server.js';
import { requestUrl, sendJson } from '../../src/transports/http.js';
import type { HttpTransport } from '../../src/transports/types.js';

function runtime() {
  return createRuntime({ model: createScriptedModel({ rules: [] }) });
}

function pathTransport(name: string, path: string, onClose: () => void = () => {}): HttpTransport {
  return {
    name,
    async handle(req, res) {
      if (requestUrl(req).pathname !== path) return false;
      sendJson(res, 200, { by: name });
      return true;
    },
    async close() {
      onClose();
    },
  };
}

describe('startServer', () => {
  it('server:request-timeouts — "a request is read within 20 s for its headers and 60 s in all" (Node would wait 60 s and 300 s): a client trickling a request in cannot hold a socket for minutes; a streamed response is not limited (a turn streams for as long as it runs)', async () => {
    const rt = runtime();
    const streaming: HttpTransport = {
      name: 'slow-stream',
      async handle(req, res) {
        if (requestUrl(req).pathname !== '/stream') return false;
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('a');
        setTimeout(() => res.end('b'), 300);
        return true;
      },
      async close() {},
    };
    const srv = await startServer({ runtime: rt, transports: [streaming], port: 0 });
    try {
      expect({ headersTimeout: srv.server.headersTimeout, requestTimeout: srv.server.requestTimeout }).toEqual({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS });
      expect([HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS]).toEqual([20_000, 60_000]);
      expect(await (await fetch(`${srv.url}/stream`)).text()).toBe('ab');
    } finally {
      await srv.close();
    }
  });

  it('server:compose — each request goes to the first transport that takes it; nobody taking it is a 404 JSON', async () => {
    const rt = runtime();
    const srv = await startServer({ runtime: rt, transports: [healthTransport(), pathTransport('a', '/a'), pathTransport('b', '/b')], port: 0 });
    try {
      expect(await (await fetch(`${srv.url}/a`)).json()).toEqual({ by: 'a' });
      expect(await (await fetch(`${srv.url}/b`)).json()).toEqual({ by: 'b' });
      expect(await (await fetch(`${srv.url}/healthz`)).json()).toEqual({ ok: true });
      const miss = await fetch(`${srv.url}/c`);
      expect(miss.status).toBe(404);
      expect((await miss.json()).error.code).toBe('route.not_found');
    } finally {
      await srv.close();
    }
  });

  it('server:upgrade — a WebSocket upgrade goes to the transport whose upgrade accepts the path; others are refused with 404', async () => {
    const rt = runtime();
    const wss = new WebSocketServer({ noServer: true });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo:${m.toString()}`)));
    const wsTransport: HttpTransport = {
      name: 'ws',
      handle: async () => false,
      upgrade(req, socket, head) {
        if (requestUrl(req).pathname !== '/ws') return false;
        wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
        return true;
      },
      async close() {
        for (const c of wss.clients) c.close(1001);
        wss.close();
      },
    };
    const srv = await startServer({ runtime: rt, transports: [pathTransport('a', '/a'), wsTransport], port: 0 });
    try {
      const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/ws`);
      const reply = await new Promise<string>((resolve, reject) => {
        ws.on('open', () => ws.send('hi'));
        ws.on('message', (m) => resolve(m.toString()));
        ws.on('error', reject);
      });
      expect(reply).toBe('echo:hi');
      ws.close();
      const refused = new WebSocket(`${srv.url.replace('http', 'ws')}/nope`);
      const status = await new Promise<number>((resolve) => refused.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)));
      expect(status).toBe(404);
    } finally {
      await srv.close();
    }
  });

  it('server:host — "a request or upgrade whose Host names a host the server does not answer to is refused with 403 host.forbidden" (DNS rebinding): bound to loopback, only loopback names and allowedHosts pass', async () => {
    const rt = runtime();
    const wss = new WebSocketServer({ noServer: true });
    const wsTransport: HttpTransport = {
      name: 'ws',
      handle: async () => false,
      upgrade(req, socket, head) {
        wss.handleUpgrade(req, socket, head, (ws) => ws.close(1000));
        return true;
      },
      async close() {
        wss.close();
      },
    };
    let reached = 0;
    const counting: HttpTransport = { ...pathTransport('a', '/a'), handle: async (req, res) => (reached++, pathTransport('a', '/a').handle(req, res)) };
    const srv = await startServer({ runtime: rt, transports: [counting, wsTransport], port: 0, allowedHosts: ['agents.internal'] });
    const get = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const r = request({ host: '127.0.0.1', port: srv.port, path: '/a', headers: { host } }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        r.on('error', reject);
        r.end();
      });
    const upgrade = (host: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${srv.port}/ws`, { headers: { host } });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => resolve(101));
        ws.on('error', () => undefined);
      });
    try {
      for (const ok of [`127.0.0.1:${srv.port}`, `localhost:${srv.port}`, `[::1]:${srv.port}`, `app.localhost:${srv.port}`, `Agents.Internal:${srv.port}`]) {
        expect((await get(ok)).status, ok).toBe(200);
      }
      const before = reached;
      const refused = await get(`attacker.example:${srv.port}`);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).error).toMatchObject({ code: 'host.forbidden', message: expect.stringContaining('"attacker.example:') });
      expect(reached).toBe(before);
      expect(await upgrade(`attacker.example:${srv.port}`)).toBe(403);
      expect(await upgrade(`localhost:${srv.port}`)).toBe(101);
    } finally {
      await srv.close();
    }
  });

  it(`server:close-timeout — "closeTimeoutMs is an integer from 0 to ${MAX_TIMER_MS}": NaN or a value past a timer's range would destroy in-flight requests after 1 ms; refused before the server listens, naming the value received`, async () => {
    const rt = runtime();
    try {
      for (const [v, shown] of [[Number.NaN, 'NaN'], [2 ** 31, '2147483648'], [-1, '-1'], [1.5, '1.5'], ['5000', '"5000"'], [Number.POSITIVE_INFINITY, 'Infinity']] as const) {
        await expect(startServer({ runtime: rt, transports: [], port: 0, closeTimeoutMs: v as number }), String(v)).rejects.toThrow(
          expect.objectContaining({
            name: 'TurnstateError',
            code: 'options.invalid',
            message: `startServer: closeTimeoutMs must be an integer from 0 to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days), got ${shown}`,
          }),
        );
      }
      for (const closeTimeoutMs of [0, MAX_TIMER_MS]) await (await startServer({ runtime: rt, transports: [], port: 0, closeRuntime: false, closeTimeoutMs })).close();
    } finally {
      await rt.close();
    }
  });

  it('server:options:unknown — "a misspelt option is refused naming it and the option it resembles, never ignored", as createRuntime, createAapHandler and createStreamsTransport do: closeTimeoutMS: 10 left the grace period at 5 s, silently; refused (options.invalid) before the server listens', async () => {
    const rt = runtime();
    const names = 'runtime, transports, port, host, allowedHosts, closeRuntime, closeTimeoutMs, onError';
    try {
      for (const [opts, message] of [
        [{ closeTimeoutMS: 10 }, `startServer: \`closeTimeoutMS\` is not an option (did you mean \`closeTimeoutMs\`?); the options are ${names}`],
        [{ allowedHost: ['box.lan'] }, `startServer: \`allowedHost\` is not an option (did you mean \`allowedHosts\`?); the options are ${names}`],
        [{ tls: true }, `startServer: \`tls\` is not an option; the options are ${names}`],
      ] as const) {
        await expect(startServer({ runtime: rt, transports: [], port: 0, closeRuntime: false, ...opts } as never), message).rejects.toThrow(
          expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message }),
        );
      }
    } finally {
      await rt.close();
    }
  });

  it('server:options:code — "one code for a factory given an option it cannot use": every refusal of startServer is TurnstateError options.invalid naming the option, before anything listens', async () => {
    const rt = runtime();
    try {
      for (const [opts, message] of [
        [{ runtime: rt, transports: {}, port: 0 }, /^startServer: `transports` must be an array of HttpTransports \(each with a handle\(\) method\), got \{\}$/],
        [{ runtime: rt, transports: [null], port: 0 }, /^startServer: `transports` must be an array of HttpTransports/],
        [{ runtime: rt, transports: [], port: 70000 }, /^startServer: `port` must be an integer from 0 to 65535 \(0: a free port\), got 70000$/],
        [{ runtime: rt, transports: [], port: '8787' }, /^startServer: `port` must be an integer .*, got "8787"$/],
        [{ runtime: rt, transports: [], allowedHosts: 'box.lan', port: 0 }, /^startServer: `allowedHosts` must be an array of host names or '\*', got "box\.lan"$/],
        [{ runtime: rt, transports: [], closeRuntime: 'no', port: 0 }, /^startServer: `closeRuntime` must be a boolean, got "no"$/],
        [{ runtime: rt, transports: [], closeTimeoutMs: -1, port: 0 }, /^startServer: closeTimeoutMs must be an integer from 0 to \d+ .*, got -1$/],
        [{ transports: [], port: 0 }, /^startServer: needs a `runtime` \(createRuntime\(\)\)$/],
        [null, /^startServer: options must be an object \{ runtime, transports, \.\.\. \}, got null$/],
      ] as const) {
        const thrown = await startServer(opts as never).then(
          async (s) => {
            await s.close();
            return undefined;
          },
          (e: unknown) => e,
        );
        expect(thrown, String(message)).toBeInstanceOf(TurnstateError);
        expect(thrown, String(message)).toMatchObject({ code: 'options.invalid', message: expect.stringMatching(message) });
      }
    } finally {
      await rt.close();
    }
  });

  it('server:close — close lets an in-flight request finish, closes every transport and the runtime, then refuses connections', async () => {
    const rt = runtime();
    let closedTransports = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: HttpTransport = {
      name: 'slow',
      async handle(req, res) {
        if (requestUrl(req).pathname !== '/slow') return false;
        await gate;
        sendJson(res, 200, { finished: true });
        return true;
      },
      async close() {
        closedTransports++;
      },
    };
    const srv = await startServer({ runtime: rt, transports: [slow, pathTransport('a', '/a', () => closedTransports++)], port: 0 });
    const inflight = fetch(`${srv.url}/slow`).then((r) => r.json());
    await new Promise((r) => setTimeout(r, 30));
    const closing = srv.close();
    setTimeout(release, 30);
    expect(await inflight).toEqual({ finished: true });
    await closing;
    expect(closedTransports).toBe(2);
    await expect(rt.createSession({ actor: 'x' })).rejects.toThrow(/closed/);
    await expect(fetch(`${srv.url}/a`)).rejects.toThrow();
    // Idempotent.
    await srv.close();
  });
});
