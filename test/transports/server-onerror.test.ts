/**
 * startServer's `onError`: one call per 5xx response, a transport's or the server's own, with
 * the method, the path without its query string, the status and the error body's code and message.
 */
import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { healthTransport, startServer, type ServerErrorEvent } from '../../src/transports/server.js';
import { HttpError, requestUrl, sendError, sendJson } from '../../src/transports/http.js';
import type { HttpTransport } from '../../src/transports/types.js';

const failing: HttpTransport = {
  name: 'failing',
  async handle(req, res) {
    const path = requestUrl(req).pathname;
    if (path === '/throws') throw new Error('the disk is on fire');
    if (path === '/unavailable') {
      sendError(res, new HttpError(503, 'store.unavailable', 'the store is away'));
      return true;
    }
    if (path === '/bad') {
      sendError(res, new HttpError(400, 'request.invalid', 'no'));
      return true;
    }
    if (path === '/ok') {
      sendJson(res, 200, { ok: true });
      return true;
    }
    return false;
  },
  async close() {},
};

describe('startServer: onError', () => {
  it('server:on-error — "onError is called once for every response the server answers with a 5xx status … the path without its query string"; nothing for other responses; a hook that throws is ignored', async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [] }) });
    const seen: ServerErrorEvent[] = [];
    const srv = await startServer({ runtime: rt, transports: [healthTransport(), failing], port: 0, onError: (e) => seen.push(e) });
    try {
      expect((await fetch(`${srv.url}/ok`)).status).toBe(200);
      expect((await fetch(`${srv.url}/bad`)).status).toBe(400);
      expect((await fetch(`${srv.url}/nowhere`)).status).toBe(404);
      expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);
      expect(seen).toEqual([]);
      expect((await fetch(`${srv.url}/throws?token=secret-key`, { method: 'POST', body: '{}' })).status).toBe(500);
      expect((await fetch(`${srv.url}/unavailable`)).status).toBe(503);
      expect(seen).toEqual([
        { method: 'POST', path: '/throws', status: 500, code: 'internal', message: 'internal error: the disk is on fire' },
        { method: 'GET', path: '/unavailable', status: 503, code: 'store.unavailable', message: 'the store is away' },
      ]);
    } finally {
      await srv.close();
    }
    const rt2 = createRuntime({ model: createScriptedModel({ rules: [] }) });
    const throwing = await startServer({ runtime: rt2, transports: [failing], port: 0, onError: () => { throw new Error('hook'); } });
    try {
      const r = await fetch(`${throwing.url}/throws`);
      expect(r.status).toBe(500);
      expect((await r.json()).error.code).toBe('internal');
    } finally {
      await throwing.close();
    }
    await expect(startServer({ runtime: rt2, transports: [], port: 0, onError: 'log' as never })).rejects.toThrow('startServer: `onError` must be a function, got "log"');
  });
});
