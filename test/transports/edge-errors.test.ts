/**
 * The server's edge errors over real sockets: an oversized body's 413 reaches the client, a
 * request Node's parser refuses gets a JSON 400, oversized headers get a JSON 431.
 */
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { healthTransport, startServer, type RunningServer } from '../../src/transports/server.js';

let srv: RunningServer;

beforeAll(async () => {
  const runtime = createRuntime({ model: createScriptedModel({ rules: [] }) });
  runtime.registries.actors.register({ name: 'a', tools: [] });
  srv = await startServer({ runtime, transports: [healthTransport(), createAapTransport({ runtime })], port: 0 });
});
afterAll(async () => {
  await srv.close();
});

/** Sends raw bytes, returns everything the server wrote until it closed the connection. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (got += d));
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
    socket.write(bytes, 'latin1');
  });
}

function jsonBodyOf(response: string): { error: { code: string; message: string } } {
  return JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } };
}

const TEN_MB = Buffer.alloc(10 * 1024 * 1024, 'x');

describe('edge errors', () => {
  it('http:body:413-delivered — a 10 MB body with Content-Length is answered 413 body.too_large, 20 of 20 with fetch', async () => {
    let answered = 0;
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`${srv.url}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: TEN_MB });
      expect(r.status).toBe(413);
      expect((await r.json()).error.code).toBe('body.too_large');
      answered++;
    }
    expect(answered).toBe(20);
  }, 60_000);

  it('http:body:413-delivered — the same with curl, 20 of 20 (curl sends Expect: 100-continue for large bodies too)', async () => {
    const codes: string[] = [];
    for (let i = 0; i < 20; i++) {
      const out = await new Promise<string>((resolve, reject) => {
        const child = execFile(
          'curl',
          ['-sS', '-o', '-', '-w', '\n%{http_code}', '-X', 'POST', '-H', 'content-type: application/json', '--data-binary', '@-', `${srv.url}/sessions`],
          { maxBuffer: 1 << 20 },
          (err, stdout, stderr) => (err ? reject(new Error(`curl failed: ${err.message} ${stderr}`)) : resolve(stdout)),
        );
        child.stdin!.end(TEN_MB);
      });
      const lines = out.split('\n');
      codes.push(lines.at(-1)!);
      expect(JSON.parse(lines.slice(0, -1).join('\n')).error.code).toBe('body.too_large');
    }
    expect(codes).toEqual(Array(20).fill('413'));
  }, 60_000);

  it('http:body:413-delivered — a client that reads only after sending the whole 10 MB body still reads the 413 (no reset mid-upload)', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await new Promise<string>((resolve, reject) => {
        const socket = connect(srv.port, '127.0.0.1');
        let got = '';
        socket.setEncoding('latin1');
        socket.pause();
        socket.on('error', (e) => reject(new Error(`after ${got.length} bytes read: ${e.message}`)));
        socket.write(`POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${TEN_MB.length}\r\n\r\n`);
        socket.write(TEN_MB, () => {
          socket.on('data', (d: string) => (got += d));
          socket.on('end', () => resolve(got));
          socket.resume();
          socket.end();
        });
      });
      expect(res).toMatch(/^HTTP\/1\.1 413 /);
      expect(jsonBodyOf(res).error.code).toBe('body.too_large');
    }
  }, 60_000);

  it('http:client-error:400 — a request line Node cannot parse gets 400 with a JSON error body', async () => {
    const res = await raw(srv.port, 'GARBAGE\r\n\r\n');
    expect(res).toMatch(/^HTTP\/1\.1 400 /);
    expect(res).toMatch(/content-type: application\/json/i);
    expect(jsonBodyOf(res).error.code).toBe('request.malformed');
    const badHeader = await raw(srv.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n');
    expect(badHeader).toMatch(/^HTTP\/1\.1 400 /);
    expect(jsonBodyOf(badHeader).error.message).toMatch(/malformed/);
  });

  it('http:client-error:431 — headers over the limit get 431 with a JSON error body', async () => {
    const res = await raw(srv.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    expect(res).toMatch(/^HTTP\/1\.1 431 /);
    const body = jsonBodyOf(res);
    expect(body.error.code).toBe('request.headers_too_large');
    expect(body.error.message).toMatch(/header/);
  });

  it('http:client-error — the server keeps serving after refusing malformed requests', async () => {
    await raw(srv.port, 'GARBAGE\r\n\r\n');
    expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);
  });
});
