/**
 * `turnstate serve` logs what an operator must see, to stderr, one line per event, never a
 * secret: each 5xx it answers and each failed model call; nothing for a request that succeeds.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { serve } from '../../src/cli/serve.js';
import { startServeChild } from './serve-child.js';

const dirs: string[] = [];
const cleanups: (() => unknown)[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-oplog-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const USER_KEY = 'tsk-ana-0123456789-secret';
const MODEL_KEY = 'sk-ant-api03-model-secret-4567';

/** A fake Anthropic API refusing every key with 401, echoing the key it was sent (the worst case for a log). */
async function refusingModelApi(): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls++;
      res.writeHead(401, { 'content-type': 'application/json', 'request-id': 'req_fake' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key ${String(req.headers['x-api-key'])}` } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: () => calls };
}

describe('serve: the operational log', () => {
  it('cli:serve:log-5xx — "every 5xx answered by the server is logged to stderr, one line (method, path without query string, status, code, message), never a secret": a 500 gives exactly one line naming internal; the API key in the query and in the message is not in it', async () => {
    const lines: string[] = [];
    const h = await serve({
      port: 0,
      host: '127.0.0.1',
      dataDir: join(tempDir(), 'data'),
      env: { TURNSTATE_API_KEYS: JSON.stringify({ [USER_KEY]: { userId: 'ana' } }) },
      log: () => {},
      errorLog: (l) => lines.push(l),
    });
    try {
      const auth = { authorization: `Bearer ${USER_KEY}` };
      // Succeeding requests log nothing.
      expect((await fetch(`${h.url}/sessions`, { headers: auth })).status).toBe(200);
      expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
      expect(lines).toEqual([]);
      vi.spyOn(h.runtime, 'listSessions').mockRejectedValueOnce(new Error(`the disk is on fire\nnear ${USER_KEY}`));
      const r = await fetch(`${h.url}/sessions?token=${USER_KEY}&x=1`);
      expect(r.status).toBe(500);
      expect((await r.json()).error.code).toBe('internal');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^turnstate: \d{4}-\d\d-\d\dT[\d:.]+Z GET \/sessions answered 500 internal: internal error: the disk is on fire near \[redacted\]$/);
      expect(lines.join('\n')).not.toContain(USER_KEY);
    } finally {
      await h.close();
    }
  });

  it('cli:serve:log-model-failure — "every failed model call is logged (code and message), never a secret": with a wrong Anthropic key the real CLI writes exactly one stderr line naming model.authentication per failed turn, and neither key appears', async () => {
    const api = await refusingModelApi();
    const s = await startServeChild(['--data-dir', join(tempDir(), 'data')], {
      ANTHROPIC_API_KEY: MODEL_KEY,
      ANTHROPIC_BASE_URL: api.url,
      TURNSTATE_API_KEYS: JSON.stringify({ [USER_KEY]: { userId: 'ana' } }),
    });
    cleanups.push(() => s.child.exitCode === null && s.child.kill('SIGKILL'));
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${USER_KEY}` };
    const created = await fetch(`${s.url}/sessions`, { method: 'POST', headers, body: JSON.stringify({ agent: { name: 'triage' } }) });
    expect(created.status).toBe(201);
    const { sessionId } = await created.json();
    const turn = await fetch(`${s.url}/sessions/${sessionId}/turns`, { method: 'POST', headers, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) });
    expect(turn.status).toBe(200);
    expect(turn.headers.get('turnstate-error-code')).toBe('model.authentication');
    expect(api.calls()).toBe(1);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    const lines = s.stderr().split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^turnstate: \S+Z model call failed \(anthropic\S*\): model\.authentication: /);
    expect(lines[0]).toContain('invalid x-api-key');
    const all = s.stdout() + s.stderr();
    expect(all).not.toContain(MODEL_KEY);
    expect(all).not.toContain(USER_KEY);
  }, 60_000);
});
