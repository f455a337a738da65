/**
 * The demo page's static files (src/transports/streams/static.ts): "only GET and HEAD of regular
 * files inside the root are served ... a file that a symbolic link places outside it" is refused.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStaticFiles } from '../../src/transports/streams/static.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import { startServer } from '../../src/transports/server.js';

describe('static files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnstate-static-'));
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const root = join(dir, 'web');
    mkdirSync(join(root, 'assets'), { recursive: true });
    writeFileSync(join(dir, 'secret.txt'), 'TOP SECRET outside the root');
    writeFileSync(join(root, 'index.html'), '<!doctype html><title>page</title>');
    writeFileSync(join(root, 'assets', 'app.js'), 'export {};');
    symlinkSync(join(dir, 'secret.txt'), join(root, 'link.txt'));
    symlinkSync(dir, join(root, 'up'));
    // A link that stays inside the root is served.
    symlinkSync(join(root, 'assets', 'app.js'), join(root, 'alias.js'));
    const files = createStaticFiles(root);
    server = createServer((req, res) => {
      void files(req, res, new URL(req.url ?? '/', 'http://x').pathname).then((done) => {
        if (!done) res.writeHead(404).end('fallthrough');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('web:static:symlinks — a symbolic link inside the root that leads outside it is refused with 404 (a file link and a directory link); one that stays inside is served', async () => {
    for (const p of ['/link.txt', '/up/secret.txt']) {
      const r = await fetch(base + p);
      expect(r.status, p).toBe(404);
      expect(await r.text(), p).not.toContain('TOP SECRET');
    }
    const alias = await fetch(base + '/alias.js');
    expect(alias.status).toBe(200);
    expect(alias.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(base + '/')).status).toBe(200);
  });

  it('web:static:not-found — "no such file" has one answer: a missing file, a link leading out of the root, a backslash or a NUL are each 404 route.not_found naming the path, as the server answers a path nothing serves', async () => {
    const runtime = createRuntime({ model: createScriptedModel({ rules: [] }) });
    const served = await startServer({ runtime, port: 0, transports: [createStreamsTransport({ runtime, webRoot: join(dir, 'web') })] });
    try {
      for (const p of ['/missing.html', '/link.txt', '/up/secret.txt', '/a%5Cb', '/a%00b']) {
        for (const method of ['GET', 'HEAD']) {
          const r = await fetch(served.url + p, { method });
          expect(r.status, `${method} ${p}`).toBe(404);
          if (method === 'GET') expect(await r.json(), p).toEqual({ error: { code: 'route.not_found', message: `no route for GET ${p}` } });
        }
      }
    } finally {
      await served.close();
    }
  });
});
