/**
 * `turnstate serve` as an operator meets it: the signals that stop it, what it says about a data
 * directory it cannot write or a store file that is not a database, and its `resumed:` line.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serve } from '../../src/cli/serve.js';
import { runServe } from './run-serve.js';
import { startServeChild } from './serve-child.js';

const dirs: string[] = [];
const cleanups: (() => unknown)[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-ops-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  for (const d of dirs) {
    chmodSync(d, 0o700);
    rmSync(d, { recursive: true, force: true });
  }
});

/** A fake Anthropic API that starts every answer and never finishes it: a turn that keeps running. */
async function stuckModelApi(): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'fake', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
      res.write(`event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message })}\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('serve: signals', () => {
  it('cli:serve:sighup — "SIGINT, SIGTERM or SIGHUP stops it gracefully": SIGHUP (a closed terminal, a supervisor) drains and stops as SIGTERM does, exit 0', async () => {
    const s = await startServeChild(['--data-dir', join(tempDir(), 'data')]);
    cleanups.push(() => s.child.exitCode === null && s.child.kill('SIGKILL'));
    s.child.kill('SIGHUP');
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.stdout()).toContain('(SIGINT, SIGTERM or SIGHUP stops it gracefully)');
    expect(s.stdout()).toContain('turnstate: SIGHUP received, shutting down (finishing in-flight requests)');
    expect(s.stdout()).toContain('turnstate: stopped; everything accepted is stored');
  }, 60_000);

  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`cli:serve:second-signal-code — "a second signal a second or more later exits at once, with 128 + the signal's number": a second ${signal} during a drain exits ${code}`, async () => {
      const s = await startServeChild(['--data-dir', join(tempDir(), 'data')], { ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: await stuckModelApi() });
      cleanups.push(() => s.child.exitCode === null && s.child.kill('SIGKILL'));
      const created = await (await fetch(`${s.url}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent: { name: 'triage' } }) })).json();
      // A turn that keeps running: the drain waits for it (up to its grace period).
      const turn = fetch(`${s.url}/sessions/${created.sessionId}/turns`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ stream: 'delta', messages: [{ role: 'user', content: 'hi' }] }),
      })
        .then((r) => r.text())
        .catch(() => '');
      await new Promise((r) => setTimeout(r, 300));
      s.child.kill(signal);
      await new Promise((r) => setTimeout(r, 1300));
      s.child.kill(signal);
      expect(await s.exited).toEqual({ code, signal: null });
      expect(s.stderr()).toContain(`turnstate: ${signal} again, exiting now`);
      await turn;
    }, 60_000);
  }
});

describe('serve: the data directory', () => {
  // Root may write anywhere: the server runs as nobody then, as the operator's service user would.
  const asRoot = process.getuid?.() === 0;
  const as = asRoot ? { uid: 65534, gid: 65534 } : undefined;
  /** A directory this test's server may enter but not write: root's (mode 755) when run as root, else mode 555. */
  function unwritableDir(): string {
    const d = tempDir();
    chmodSync(d, asRoot ? 0o755 : 0o555);
    return d;
  }

  it.runIf(process.platform !== 'win32')(
    'cli:serve:data-dir-unwritable — "a data directory the server may not write stops it at startup naming the directory, the option and the fix" (not a bare "unable to open database file")',
    async () => {
      const dir = unwritableDir();
      const { code, out } = await runServe({ args: ['--data-dir', dir], as });
      expect(out).not.toContain('listening');
      expect(code).toBe(1);
      expect(out).toContain(`turnstate: --data-dir ${dir} (env TURNSTATE_DATA_DIR): this process (uid `);
      expect(out).toContain('may not create or write files in it (cannot take the lock');
      expect(out).toContain('make it writable by the user serve runs as (chown or chmod it), or choose another --data-dir');
      expect(out).not.toMatch(/^turnstate: unable to open database file$/m);
    },
  );

  it.runIf(process.platform !== 'win32')(
    'cli:serve:data-dir-uncreatable — "created when missing": a missing data directory under a parent the server may not write is named with the option and the fix, not a bare EACCES from mkdir',
    async () => {
      const parent = unwritableDir();
      const dir = join(parent, 'data');
      const { code, out } = await runServe({ args: ['--data-dir', dir], as });
      expect(code).toBe(1);
      expect(out).toContain(`turnstate: --data-dir ${dir} (env TURNSTATE_DATA_DIR): this process (uid `);
      expect(out).toContain(`may not create it (EACCES: permission denied, mkdir '${dir}'); create it writable by the user serve runs as (or make its parent writable), or choose another --data-dir`);
      expect(out).not.toMatch(/^turnstate: EACCES/m);
    },
  );

  it('cli:serve:not-a-database — "cannot open SQLite store …: file is not a database" says what to do: restore a backup, or move the file aside to start empty', async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir);
    const db = join(dataDir, 'turnstate.db');
    writeFileSync(db, 'x'.repeat(4096));
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} })).rejects.toThrow(
      `cannot open SQLite store ${db}: file is not a database (restore a backup, or move the file aside to start empty)`,
    );
  });
});

describe('serve: the resumed line', () => {
  it('cli:serve:resumed-capped — "the resumed: line gives the count and at most the first 5 session ids, and N more"', async () => {
    const dataDir = join(tempDir(), 'data');
    const first = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    const ids: string[] = [];
    try {
      for (let i = 0; i < 7; i++) {
        const post = async (path: string, body: unknown): Promise<any> =>
          (await fetch(first.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
        const { sessionId } = await post('/sessions', { agent: { name: 'triage', tools: [{ name: 'book_flight' }] } });
        expect((await post(`/sessions/${sessionId}/turns`, { messages: [{ role: 'user', content: 'book TS205' }] })).stopReason).toBe('tool_use');
        ids.push(sessionId);
      }
    } finally {
      await first.close();
    }
    const lines: string[] = [];
    const second = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: (l) => lines.push(l) });
    await second.close();
    const resumed = lines.filter((l) => l.includes('resumed:'));
    expect(resumed).toHaveLength(1);
    const m = /^ {2}resumed: {8}7 unfinished turn\(s\): ((?:sess_\S+, ){4}sess_\S+) and 2 more$/.exec(resumed[0]!);
    expect(m, resumed[0]).not.toBeNull();
    for (const id of m![1]!.split(', ')) expect(ids).toContain(id);
  });
});
