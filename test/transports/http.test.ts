/**
 * Shared HTTP helpers (src/transports/http.ts) over a real loopback node:http server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TurnstateError } from '../../src/errors.js';
import {
  HttpError,
  Router,
  formatSse,
  formatSseComment,
  readJsonBody,
  sendError,
  sendJson,
  toHttpError,
} from '../../src/transports/http.js';
import { sameTenant } from '../../src/types.js';
import { authenticateRequest } from '../../src/transports/access.js';

let server: Server;
let url: string;
let handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>;

beforeAll(async () => {
  server = createServer((req, res) => {
    handler(req, res).catch((e) => sendError(res, e));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

describe('readJsonBody', () => {
  it('http:body:json — parses a JSON body', async () => {
    handler = async (req, res) => sendJson(res, 200, { got: await readJsonBody(req) });
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":[1,2]}' });
    expect(await r.json()).toEqual({ got: { a: [1, 2] } });
  });

  it('http:body:413 — over the limit (declared or streamed) is a 413 body.too_large naming the limit', async () => {
    handler = async (req, res) => sendJson(res, 200, { got: await readJsonBody(req, { maxBytes: 10 }) });
    const declared = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ s: 'x'.repeat(100) }) });
    expect(declared.status).toBe(413);
    expect((await declared.json()).error).toMatchObject({ code: 'body.too_large', details: { limit: 10 } });
    // Chunked (no content-length): counted while reading.
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"s":"'));
        c.enqueue(new TextEncoder().encode('y'.repeat(50)));
        c.enqueue(new TextEncoder().encode('"}'));
        c.close();
      },
    });
    const chunked = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it('http:body:400 — malformed JSON is a 400 body.invalid_json with the parser message; a required empty body is body.missing', async () => {
    handler = async (req, res) => sendJson(res, 200, { got: await readJsonBody(req, { required: true }) });
    const bad = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(bad.status).toBe(400);
    const e = (await bad.json()).error;
    expect(e.code).toBe('body.invalid_json');
    expect(e.message).toMatch(/JSON/);
    const empty = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
    expect((await empty.json()).error.code).toBe('body.missing');
  });

  it('http:body:400-well-formed — body.invalid_json carries "the parser\'s message (any unpaired surrogate in it replaced by U+FFFD)"', async () => {
    handler = async (req, res) => sendJson(res, 200, { got: await readJsonBody(req, { required: true }) });
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '😀' });
    expect(r.status).toBe(400);
    const e = (await r.json()).error;
    expect(e.code).toBe('body.invalid_json');
    expect(e.message).toBe('request body is not valid JSON: Unexpected token \'\ufffd\', "😀" is not valid JSON');
  });

  it('http:body:400-utf8 — "a body that is not UTF-8 (RFC 8259 §8.1 ...): nothing is stored with U+FFFD in its place"; a leading BOM stays malformed JSON', async () => {
    const got: unknown[] = [];
    handler = async (req, res) => {
      const body = await readJsonBody(req, { required: true });
      got.push(body);
      sendJson(res, 200, { got: body });
    };
    const bytes = Buffer.concat([Buffer.from('{"t":"'), Buffer.from([0x41, 0xc3, 0x28, 0xff, 0xed, 0xa0, 0x80, 0x5a]), Buffer.from('"}')]);
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toEqual({
      code: 'body.invalid_json',
      message: 'request body is not valid UTF-8: JSON must be UTF-8 (RFC 8259)',
      path: '',
    });
    // A surrogate encoded in UTF-8 (CESU) alone is refused too.
    const cesu = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat([Buffer.from('["'), Buffer.from([0xed, 0xa0, 0xbd]), Buffer.from('"]')]) });
    expect(cesu.status).toBe(400);
    expect((await cesu.json()).error.message).toBe('request body is not valid UTF-8: JSON must be UTF-8 (RFC 8259)');
    expect(got).toEqual([]);
    // As before: a byte order mark is not skipped.
    const bom = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]) });
    expect(bom.status).toBe(400);
    expect((await bom.json()).error.code).toBe('body.invalid_json');
    // Well-formed multibyte text passes untouched.
    const ok = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"t":"é😀"}' });
    expect(await ok.json()).toEqual({ got: { t: 'é😀' } });
  });

  it('http:body:415 — a declared non-JSON content type is a 415', async () => {
    handler = async (req, res) => sendJson(res, 200, { got: await readJsonBody(req) });
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(r.status).toBe(415);
    const ok = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/merge-patch+json' }, body: '{}' });
    expect(ok.status).toBe(200);
  });
});

describe('errors', () => {
  it('http:error:map — HttpError keeps status/code/path; TurnstateError codes map; anything else is a 500 internal', () => {
    expect(new HttpError(400, 'x.y', 'bad', { path: '/a' }).toBody()).toEqual({ error: { code: 'x.y', message: 'bad', path: '/a' } });
    expect(toHttpError(new TurnstateError('session.not_found', 'gone')).status).toBe(404);
    expect(toHttpError(new TurnstateError('session.busy', 'busy')).status).toBe(409);
    expect(toHttpError(new TurnstateError('session.queue_full', 'full')).status).toBe(429);
    expect(toHttpError(new TurnstateError('approval.already_resolved', 'done')).status).toBe(409);
    const unknown = toHttpError(new Error('kaput'));
    expect(unknown.status).toBe(500);
    expect(unknown.code).toBe('internal');
  });
});

describe('Router', () => {
  it('http:router — params are captured and decoded, a wrong method is reported with the allowed ones, unknown paths are none', () => {
    const r = new Router<string>('/api').add('GET', '/sessions/:id', () => {}).add('DELETE', '/sessions/:id', () => {});
    const found = r.match('GET', '/api/sessions/a%20b');
    expect(found.kind).toBe('found');
    if (found.kind === 'found') expect(found.params).toEqual({ id: 'a b' });
    expect(r.match('HEAD', '/api/sessions/x').kind).toBe('found');
    expect(r.match('POST', '/api/sessions/x')).toEqual({ kind: 'method-not-allowed', allow: ['GET', 'DELETE'] });
    expect(r.match('GET', '/sessions/x').kind).toBe('none');
    expect(r.match('GET', '/api/sessions/x/y').kind).toBe('none');
    expect(r.match('GET', '/api/sessions/%E0%A4%A').kind).toBe('none');
  });
});

describe('authentication', () => {
  it('http:auth — no hook is anonymous; 401 carries WWW-Authenticate; 403 does not; a throwing hook is a 500', async () => {
    let hook: Parameters<typeof authenticateRequest>[2];
    handler = async (req, res) => {
      const p = await authenticateRequest(req, res, hook);
      if (p) sendJson(res, 200, p);
    };
    hook = undefined;
    expect(await (await fetch(url)).json()).toEqual({ userId: 'anonymous' });
    hook = () => ({ ok: false, status: 401, message: 'who are you' });
    const u = await fetch(url);
    expect(u.status).toBe(401);
    expect(u.headers.get('www-authenticate')).toBe('Bearer');
    expect((await u.json()).error).toEqual({ code: 'auth.unauthenticated', message: 'who are you' });
    hook = () => ({ ok: false, status: 403, message: 'not you' });
    const f = await fetch(url);
    expect(f.status).toBe(403);
    expect(f.headers.get('www-authenticate')).toBeNull();
    hook = () => {
      throw new Error('db down');
    };
    expect((await fetch(url)).status).toBe(500);
    expect(sameTenant({ tenantId: 'a' }, 'a')).toBe(true);
    expect(sameTenant({ tenantId: 'a' }, 'b')).toBe(false);
    expect(sameTenant({}, undefined)).toBe(true);
    expect(sameTenant({}, 'a')).toBe(false);
  });
});

describe('SSE framing', () => {
  it('http:sse:frame — one event: line, data split per line, optional id; comments are ignored by parsers', () => {
    expect(formatSse('turn_stop', { stopReason: 'end_turn' })).toBe('event: turn_stop\ndata: {"stopReason":"end_turn"}\n\n');
    expect(formatSse('x', 'a\nb', 7)).toBe('id: 7\nevent: x\ndata: a\ndata: b\n\n');
    const seen: { event?: string; data: string; id?: string }[] = [];
    const p = createParser({ onEvent: (e) => seen.push({ data: e.data, ...(e.event ? { event: e.event } : {}), ...(e.id ? { id: e.id } : {}) }) });
    p.feed(formatSseComment('keep\nalive') + formatSse('x', 'a\nb', 7) + formatSse('y', { k: 'v' }));
    expect(seen).toEqual([
      { event: 'x', data: 'a\nb', id: '7' },
      { event: 'y', data: '{"k":"v"}' },
    ]);
  });
});

describe('authenticateRequest', () => {
  it('http:auth:refused-closes — "a refused request\'s body is not read": a client with no key that trickles a body in gets its 401 with connection: close and loses the socket, instead of holding it until Node\'s 300 s request limit', async () => {
    handler = async (req, res) => {
      const principal = await authenticateRequest(req, res, async () => ({ ok: false, status: 401, message: 'no key' }));
      if (principal !== undefined) sendJson(res, 200, {});
    };
    const { port } = server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
    socket.write('POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{');
    const drip = setInterval(() => socket.writable && socket.write(' '), 200);
    const t0 = Date.now();
    try {
      const at = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 3_000))]);
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
      expect(answer.toLowerCase()).toContain('connection: close');
      expect(at, 'the server closed the socket').toBeGreaterThan(0);
      expect(at - t0).toBeLessThan(3_000);
    } finally {
      clearInterval(drip);
      socket.destroy();
    }
  });
});
