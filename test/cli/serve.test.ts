/**
 * `npm start` runs `turnstate serve`: spawned as a child process on a free port, driven with
 * plain fetch, stopped with SIGTERM, restarted on the same data directory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import type { TurnstateRuntime } from '../../src/runtime.js';
import { DEFAULT_PASSIVATE_AFTER_MS, serve } from '../../src/cli/serve.js';
import { runReplayCommand } from '../../src/cli/replay.js';
import { listeningUrl, ROOT } from './run-serve.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-serve-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
  /** Every process holding the output pipes has exited. */
  closed: Promise<void>;
}

/** Spawns `npm start -- --port 0 --data-dir <dir>` in its own process group; resolves on the listening line. */
async function npmStart(dataDir: string): Promise<Started> {
  const env = { ...process.env };
  delete env['ANTHROPIC_API_KEY'];
  delete env['TURNSTATE_API_KEYS'];
  const child = spawn('npm', ['start', '--silent', '--', '--port', '0', '--data-dir', dataDir], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  const url = await listeningUrl(child.stdout, () => out, exited, 60_000);
  return { child, url, output: () => out, exited, closed };
}

/** SIGTERM to the server process itself (its pid is on the progress output); npm exits with it. */
async function stop(s: Started): Promise<number | null> {
  const pid = Number(/pid: +(\d+)/.exec(s.output())![1]);
  process.kill(pid, 'SIGTERM');
  return s.exited;
}

async function post(url: string, path: string, body: unknown): Promise<any> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

describe('npm start', () => {
  it('cli:serve:npm-start — starts the travel desk, answers a turn over AAP, shuts down on SIGTERM, and resumes after a restart', async () => {
    const dataDir = tempDir();
    const first = await npmStart(dataDir);
    try {
      const log = first.output();
      expect(log).toContain('model:          scripted (travel desk demo script');
      expect(log).toContain(`data directory: ${dataDir}`);
      const meta = await (await fetch(`${first.url}/meta`)).json();
      expect(meta.version).toBe(3);
      expect(meta.agents.map((a: any) => a.name)).toEqual(['triage']);
      // Artifacts live under the data directory and are served at /artifacts/{id} (an unknown id is a 404).
      expect(existsSync(join(dataDir, 'artifacts'))).toBe(true);
      const missing = await fetch(`${first.url}/artifacts/art_AAAAAAAAAAAAAAAAAAAAAA`);
      expect(missing.status).toBe(404);
      expect((await missing.json()).error.code).toBe('artifact.not_found');
      // npm start built the page's A2UI renderer first (prestart: npm run build:web).
      const bundle = await fetch(`${first.url}/dist/surfaces.js`);
      expect(bundle.status).toBe(200);
      expect(bundle.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      const created = await post(first.url, '/sessions', { agent: { name: 'triage', tools: [{ name: 'book_flight' }] } });
      expect(created.status).toBe(201);
      const sid = created.json.sessionId;
      const search = await post(first.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'flights to Corfu' }] });
      expect(search.json.stopReason).toBe('end_turn');
      expect(search.json.messages.at(-1)).toEqual({
        role: 'assistant',
        content: 'I found 2 direct flights to Corfu: TS205 at EUR 42 and TS101 at EUR 94. Say "book TS205" or "book TS101".',
      });
      const book = await post(first.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'book TS101' }] });
      expect(book.json.stopReason).toBe('tool_use');
      const callId = book.json.messages.at(-1).content.find((b: any) => b.type === 'tool_use').toolCallId;

      expect(await stop(first)).toBe(0);
      expect(first.output()).toContain('SIGTERM received, shutting down');
      expect(first.output()).toContain('stopped; everything accepted is stored');

      const second = await npmStart(dataDir);
      try {
        expect(second.output()).toMatch(/resumed: +1 unfinished turn\(s\): /);
        const granted = await post(second.url, `/sessions/${sid}/turns`, { messages: [{ role: 'tool_permission', toolCallId: callId, granted: true }] });
        expect(granted.status).toBe(200);
        expect(granted.json.stopReason).toBe('end_turn');
        expect(granted.json.messages[0]).toMatchObject({ role: 'tool', toolCallId: callId });
        expect(granted.json.messages.at(-1).content).toMatch(/^Booked: your reference is BK\d{4}\.$/);
        const hist = await (await fetch(`${second.url}/sessions/${sid}/history?type=full`)).json();
        expect(hist.history.full.filter((m: any) => m.role === 'user').map((m: any) => m.content)).toEqual(['flights to Corfu', 'book TS101']);
      } finally {
        // Ctrl-C in a terminal: SIGINT to the whole process group (npm, tsx and the server).
        process.kill(-second.child.pid!, 'SIGINT');
        await second.closed;
        expect(second.output()).toContain('SIGINT received, shutting down');
        expect(second.output()).toContain('stopped; everything accepted is stored');
        expect(second.output()).not.toContain('exiting now');
      }
    } finally {
      if (first.child.exitCode === null) process.kill(-first.child.pid!, 'SIGKILL');
    }
  }, 120_000);
});

describe('npm start across restarts', () => {
  // The ScriptedModel's tool_use ids carry a random per-process prefix, so they stay unique across restarts.
  it('aap:tool_call:unique-ids-across-restarts — toolCallIds stay unique within a session across a server restart', async () => {
    const dataDir = tempDir();
    const first = await npmStart(dataDir);
    let sid: string;
    try {
      sid = (await post(first.url, '/sessions', { agent: { name: 'triage' } })).json.sessionId;
      await post(first.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'flights to Corfu' }] });
    } finally {
      await stop(first);
    }
    const second = await npmStart(dataDir);
    try {
      await post(second.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'flights to Oslo' }] });
      const hist = await (await fetch(`${second.url}/sessions/${sid}/history?type=full`)).json();
      const ids = hist.history.full.flatMap((m: any) => (typeof m.content === 'string' ? [] : m.content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.toolCallId)));
      expect(ids).toHaveLength(2);
      expect(new Set(ids).size).toBe(2);
    } finally {
      await stop(second);
    }
  }, 120_000);
});

describe('serve()', () => {
  it('cli:serve:script — --script plays the given ScriptedModel script; a broken script file is a clear error', async () => {
    const dir = tempDir();
    const script = join(dir, 'hello.json');
    writeFileSync(
      script,
      JSON.stringify({ rules: [{ when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text: 'Scripted hello.' }], turnState: 'complete' } }] } }] }),
    );
    const lines: string[] = [];
    const h = await serve({ port: 0, host: '127.0.0.1', dataDir: join(dir, 'data'), script, env: {}, log: (l) => lines.push(l) });
    try {
      expect(lines.join('\n')).toContain(`scripted (${script})`);
      const sid = (await post(h.url, '/sessions', { agent: { name: 'triage' } })).json.sessionId;
      const r = await post(h.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'hi' }] });
      expect(r.json).toEqual({ stopReason: 'end_turn', messages: [{ role: 'assistant', content: 'Scripted hello.' }] });
    } finally {
      await h.close();
    }
    writeFileSync(script, '{ nope');
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir: join(dir, 'data2'), script, env: {}, log: () => {} })).rejects.toThrow(/--script .*not valid JSON/);
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir: join(dir, 'data3'), script: join(dir, 'missing.json'), env: {}, log: () => {} })).rejects.toThrow(/cannot read it \(ENOENT\)/);
    // A script whose rules cannot work is refused naming the file and the rule (cli:serve:script-rules).
    const rule = (when: unknown) => JSON.stringify({ rules: [{ when, respond: { blocks: [] } }] });
    for (const [body, why] of [
      [rule({ text: '(unclosed' }), /--script .*hello\.json: ModelScript: rules\[0\]: when\.text is not a regular expression/],
      [rule({ on: 'usr' }), /--script .*hello\.json: ModelScript: rules\[0\]: when\.on "usr" is not one of "user"/],
      [JSON.stringify({ rules: [{ when: { on: 'user' } }] }), /--script .*hello\.json: ModelScript: rules\[0\] needs respond\.blocks/],
    ] as const) {
      writeFileSync(script, body);
      await expect(serve({ port: 0, host: '127.0.0.1', dataDir: join(dir, 'data4'), script, env: {}, log: () => {} })).rejects.toThrow(why);
    }
  });

  it('cli:serve:passivates — "With passivateAfterMs the whole host goes too": serve drops idle sessions from memory (default 5 minutes, --passivate-after), and one woken by its next message answers with its history', async () => {
    expect(parseArgs(['serve', '--passivate-after', '60000'], {})).toMatchObject({ args: { passivateAfterMs: 60000 } });
    expect(parseArgs(['serve'], { TURNSTATE_PASSIVATE_AFTER_MS: '0' })).toMatchObject({ args: { passivateAfterMs: 0 } });
    expect(() => parseArgs(['serve', '--passivate-after', '5m'], {})).toThrow(/--passivate-after must be a whole number of milliseconds/);
    expect(DEFAULT_PASSIVATE_AFTER_MS).toBe(300_000);
    const dir = tempDir();
    const h = await serve({ port: 0, host: '127.0.0.1', dataDir: join(dir, 'data'), env: {}, log: () => {}, passivateAfterMs: 30 });
    try {
      const sids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const sid = (await post(h.url, '/sessions', { agent: { name: 'triage' } })).json.sessionId;
        expect((await post(h.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'hello' }] })).status).toBe(200);
        sids.push(sid);
      }
      const runtime = h.runtime as TurnstateRuntime;
      const deadline = Date.now() + 5000;
      while (runtime.liveSessions > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(runtime.liveSessions).toBe(0);
      const again = await post(h.url, `/sessions/${sids[0]}/turns`, { messages: [{ role: 'user', content: 'hello again' }] });
      expect(again.json.stopReason).toBe('end_turn');
      expect((await h.runtime.history(sids[0]!)).filter((e) => e.type === 'turn.started')).toHaveLength(2);
    } finally {
      await h.close();
    }
  });

  it('cli:serve:one-per-data-dir — "One process owns a file for writing at a time": a second serve on the same data directory is refused naming the owner; after the first closes, or when the lock\'s process is gone, it starts', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const first = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    try {
      await expect(serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} })).rejects.toThrow(new RegExp(`data directory .* is in use by another turnstate serve \\(pid ${process.pid}`));
    } finally {
      await first.close();
    }
    const second = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    await second.close();
    // A lock left by a process that is gone (a crash) is taken over.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    writeFileSync(join(dataDir, 'turnstate.lock'), `${gone}\n`);
    const third = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    await third.close();
    expect(existsSync(join(dataDir, 'turnstate.lock'))).toBe(false);
  });

  it('replay:script:surfaces — "tool results and approval decisions are matched to the new calls by tool and arguments within the turn": replaying the travel desk with the script that produced it reproduces its template surfaces too (new call ids)', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const h = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
    let sid: string;
    try {
      sid = (await post(h.url, '/sessions', { agent: { name: 'triage' } })).json.sessionId;
      await post(h.url, `/sessions/${sid}/turns`, { messages: [{ role: 'user', content: 'flights to Corfu' }] });
      const events = await h.runtime.history(sid);
      expect(events.some((e) => e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface')).toBe(true);
    } finally {
      await h.close();
    }
    let out = '';
    const code = await runReplayCommand([join(dataDir, 'turnstate.db'), sid, '--script', join(ROOT, 'examples', 'travel-desk', 'script.json')], (t) => (out += t), (t) => (out += t));
    expect(out).toContain('identical');
    expect(code).toBe(0);
  });
});
