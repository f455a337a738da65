/**
 * docs/machines/inspect-live.ts: "Starts the inspector relay on 127.0.0.1:<port> (only this
 * machine can connect)". The relay carries every session event (and relays frames to the
 * inspector page), so another host must not reach it, and a web page the user visits (any
 * Origin but the relay's own page) must not open its WebSocket.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** A port free right now (the script is given a concrete port, as its docs show). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Opens a WebSocket: the types of the messages it gets until one of type `until` arrives, or how it was refused. */
function connect(url: string, opts: { origin?: string; headers?: Record<string, string> }, until: string): Promise<{ refused?: string; messages: string[] }> {
  return new Promise((done) => {
    const messages: string[] = [];
    const ws = new WebSocket(url, opts);
    ws.on('unexpected-response', (_req, res) => done({ refused: `HTTP ${res.statusCode}`, messages }));
    ws.on('error', (e: NodeJS.ErrnoException) => done({ refused: e.code ?? e.message, messages }));
    ws.on('message', (m) => {
      const msg = JSON.parse(m.toString()) as { type: string };
      messages.push(msg.type);
      if (msg.type === until) {
        ws.close();
        done({ messages });
      }
    });
  });
}

/** The first non-loopback IPv4 address of this machine, if it has one. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;

let child: ChildProcess;
let port: number;
let output = '';
beforeAll(async () => {
  port = await freePort();
  child = spawn(process.execPath, ['--import', 'tsx', 'docs/machines/inspect-live.ts', '--port', String(port)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (output += b.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => {
      if (output.includes('turn settled in complete')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`inspect-live.ts exited (${code}):\n${output}`)));
  });
});
afterAll(async () => {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGINT');
    await exited;
  }
});

describe('docs/machines/inspect-live.ts', () => {
  it('machines:inspect-live:own-page-only — "refuses a WebSocket upgrade whose Origin is not its own page\'s": another site\'s page (or a DNS-rebound name) gets 403; the Node inspector and the relay\'s own page get the session events', async () => {
    const url = `ws://127.0.0.1:${port}`;
    expect(await connect(url, { origin: 'https://evil.example' }, '@xstate.actor')).toEqual({ refused: 'HTTP 403', messages: [] });
    expect(await connect(url, { headers: { host: `evil.example:${port}` } }, '@xstate.actor')).toEqual({ refused: 'HTTP 403', messages: [] });
    // The relay replays what it holds to a client it accepts: the session actor and its events.
    for (const origin of [undefined, `http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      const got = await connect(`ws://localhost:${port}`, origin === undefined ? {} : { origin }, '@xstate.actor');
      expect(got.refused, String(origin)).toBeUndefined();
      expect(got.messages, String(origin)).toContain('@xstate.actor');
    }
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(await page.text()).toContain('https://stately.ai/inspect');
  });

  it.runIf(lanAddress !== undefined)('machines:inspect-live:loopback — "Starts the inspector relay on 127.0.0.1:<port> (only this machine can connect)": the port is closed on the machine\'s network address', async () => {
    expect(await connect(`ws://${lanAddress}:${port}`, {}, '@xstate.actor')).toEqual({ refused: 'ECONNREFUSED', messages: [] });
  });
});
