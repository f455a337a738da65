import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRecord, Principal, SessionEvent } from '../../../src/types.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { WsClient } from './clients.js';
import { createStreamsTransport } from '../../../src/transports/streams/index.js';
import { approvalKind } from '../../../src/registries/index.js';

const ACME = 'acme:ann';
const ann: Principal = { tenantId: 'acme', userId: 'ann' };

/** Only principals with the `approver` role answer approvals. */
const approversOnly = (_a: ApprovalRecord, by: Principal): boolean => (by.roles ?? []).includes('approver');

describe('streams: WebSocket over 127.0.0.1 against the real runtime', () => {
  let srv: Served;
  let sessionId: string;
  let recorded: SessionEvent[];
  const clients: WsClient[] = [];
  const connect = async (token = ACME, opts: { protocols?: string[] } = {}): Promise<WsClient> => {
    const c = await WsClient.connect(srv.wsUrl, { token, ...opts });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    srv = await serve(createTravelRuntime({ canAnswerApproval: approversOnly }), { transport: { heartbeatMs: 200, maxFrameBytes: 4096 } });
    const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    sessionId = s.id;
    await (await s.send('find flights to Corfu', { principal: ann })).settled;
    recorded = await srv.runtime.store.readEvents(sessionId, 0);
  });
  afterAll(async () => {
    for (const c of clients) c.ws.terminate();
    await srv?.close();
  });

  it('ws:subprotocol — an upgrade without turnstate.v1 is refused with a 400 naming it', async () => {
    for (const protocols of [['chat.v2'], []]) {
      const err = await WsClient.connect(srv.wsUrl, { token: ACME, protocols }).then(
        () => undefined,
        (e: { status?: number; body?: string }) => e,
      );
      expect(err?.status).toBe(400);
      expect(JSON.parse(err!.body!).error).toEqual({ code: 'subprotocol.required', message: expect.stringContaining('turnstate.v1') });
    }
    const ok = await connect();
    expect(ok.ws.protocol).toBe('turnstate.v1');
  });

  it('ws:auth — the authentication hook refuses an upgrade with its status', async () => {
    const err = await WsClient.connect(srv.wsUrl, {}).then(
      () => undefined,
      (e: { status?: number; body?: string }) => e,
    );
    expect(err?.status).toBe(401);
    expect(JSON.parse(err!.body!).error.code).toBe('auth.unauthenticated');
  });

  it('ws:origin — a browser page of another origin is refused with 403 (cross-site WebSocket hijacking); the server\'s own origin and clients without Origin connect', async () => {
    for (const origin of ['https://evil.example', 'http://127.0.0.1:1', 'null']) {
      const err = await WsClient.connect(srv.wsUrl, { token: ACME, origin }).then(
        () => undefined,
        (e: { status?: number; body?: string }) => e,
      );
      expect(err?.status, origin).toBe(403);
      expect(JSON.parse(err!.body!).error).toEqual({ code: 'origin.forbidden', message: expect.stringContaining(origin) });
    }
    const own = await WsClient.connect(srv.wsUrl, { token: ACME, origin: srv.base });
    clients.push(own);
    expect(own.ws.protocol).toBe('turnstate.v1');
    const noOrigin = await connect();
    expect(noOrigin.ws.protocol).toBe('turnstate.v1');
    // The origin check comes before authentication: a forbidden page learns nothing of the hook.
    const anon = await WsClient.connect(srv.wsUrl, { origin: 'https://evil.example' }).then(
      () => undefined,
      (e: { status?: number }) => e,
    );
    expect(anon?.status).toBe(403);
  });

  it('ws:subscribe — subscribed (with lastSeq) comes first, then every event as {type:event, sessionId, seq, event}', async () => {
    const c = await connect();
    c.send({ type: 'subscribe', sessionId, ref: 'r1' });
    await c.next((f) => f.type === 'event' && f.seq === recorded.at(-1)!.seq);
    expect(c.frames[0]).toMatchObject({ type: 'subscribed', sessionId, lastSeq: recorded.at(-1)!.seq, ref: 'r1' });
    const evFrames = c.frames.filter((f) => f.type === 'event');
    expect(evFrames.every((f) => f.sessionId === sessionId && f.seq === f.event.seq && f.__binary === false)).toBe(true);
    expect(c.events()).toEqual(recorded);
  });

  it('ws:resume:every-seq — resumeFrom k yields exactly the events after k, for every k of a recorded turn', async () => {
    const c = await connect();
    const lastSeq = recorded.at(-1)!.seq;
    for (let k = 0; k <= lastSeq; k++) {
      const from = c.frames.length;
      c.send({ type: 'subscribe', sessionId, resumeFrom: k, ref: k });
      await c.next((f) => f.type === 'subscribed' && f.ref === k, 5_000, from);
      if (k < lastSeq) await c.next((f) => f.type === 'event' && f.seq === lastSeq, 5_000, from);
      c.send({ type: 'unsubscribe', sessionId, ref: `u${k}` });
      await c.next((f) => f.type === 'unsubscribed' && f.ref === `u${k}`, 5_000, from);
      const got = c.frames.slice(from).filter((f) => f.type === 'event').map((f) => f.event as SessionEvent);
      expect(got).toEqual(recorded.filter((e) => e.seq > k));
    }
  });

  it('ws:resume:past-end — resumeFrom past the end of the session\'s log is an error cursor.ahead, not a silent subscription', async () => {
    const c = await connect();
    const lastSeq = recorded.at(-1)!.seq;
    c.send({ type: 'subscribe', sessionId, resumeFrom: lastSeq + 1, ref: 'ahead' });
    const err = await c.next((f) => f.ref === 'ahead');
    expect(err).toMatchObject({ type: 'error', code: 'cursor.ahead', sessionId, message: expect.stringContaining(`resumeFrom ${lastSeq + 1} is past the end`) });
    c.send({ type: 'subscribe', sessionId, resumeFrom: lastSeq, ref: 'at-end' });
    expect(await c.next((f) => f.ref === 'at-end')).toMatchObject({ type: 'subscribed', lastSeq });
  });

  it('ws:send-approve — send starts a turn, approve answers the approval via websocket, the turn completes', async () => {
    const approver = await connect('acme:amy:approver');
    const firstTurnEnd = recorded.at(-1)!.seq;
    approver.send({ type: 'subscribe', sessionId, resumeFrom: firstTurnEnd });
    await approver.next((f) => f.type === 'subscribed');
    approver.send({ type: 'send', sessionId, text: 'book the first one', ref: 's' });
    const sent = await approver.next((f) => f.type === 'sent');
    expect(sent).toMatchObject({ sessionId, ref: 's', queued: false, turnId: expect.any(String) });
    const req = await approver.next((f) => f.type === 'event' && f.event.type === 'approval.requested');
    await approver.next((f) => f.type === 'event' && f.event.type === 'turnState.changed' && f.event.to === 'suspended');

    // Same tenant without the approver role: the runtime's canAnswerApproval refuses.
    const clerk = await connect('acme:carl');
    clerk.send({ type: 'approve', approvalId: req.event.approvalId, ref: 1 });
    expect(await clerk.next((f) => f.type === 'error')).toMatchObject({ code: 'approval.forbidden', ref: 1 });

    // Another tenant: refused exactly like an approval that does not exist.
    const outsider = await connect('globex:gus:approver');
    outsider.send({ type: 'approve', approvalId: req.event.approvalId, ref: 2 });
    outsider.send({ type: 'approve', approvalId: 'appr_missing', ref: 3 });
    const [a, b] = [await outsider.next((f) => f.ref === 2), await outsider.next((f) => f.ref === 3)];
    expect(a.code).toBe('approval.not_found');
    expect({ ...a, message: a.message.replace(req.event.approvalId, 'ID'), ref: 0 }).toEqual({ ...b, message: b.message.replace('appr_missing', 'ID'), ref: 0 });

    approver.send({ type: 'approve', approvalId: req.event.approvalId, reason: 'fine', ref: 'ok' });
    expect(await approver.next((f) => f.type === 'answered')).toMatchObject({ approvalId: req.event.approvalId, decision: 'approved', ref: 'ok' });
    const resolved = await approver.next((f) => f.type === 'event' && f.event.type === 'approval.resolved');
    expect(resolved.event).toMatchObject({ decision: 'approved', via: 'websocket', by: { userId: 'amy' } });
    await approver.next((f) => f.type === 'event' && f.event.type === 'turn.settled');

    approver.send({ type: 'deny', approvalId: req.event.approvalId, ref: 'again' });
    expect(await approver.next((f) => f.type === 'error' && f.ref === 'again')).toMatchObject({ code: 'approval.already_resolved' });
    recorded = await srv.runtime.store.readEvents(sessionId, 0);
    expect(approver.events(sessionId)).toEqual(recorded.filter((e) => e.seq > firstTurnEnd));
  });

  it('ws:action — a surface click (action frame) named deny with a context approvalId answers that approval via websocket; another tenant\'s click is "not found"; any other action becomes a follow-up message', async () => {
    // The clicks come from the approval's surface, which the session shows (a follow-up names a live surface: surfaces:action:live).
    const kind = approvalKind('book_flight');
    if (!srv.runtime.registries.surfaceTemplates.has(kind)) {
      srv.runtime.registries.surfaceTemplates.register({
        kind,
        build: (_data, ctx) => [
          { version: 'v0.9', createSurface: { surfaceId: ctx.surfaceId, catalogId: ctx.catalogId } },
          { version: 'v0.9', updateComponents: { surfaceId: ctx.surfaceId, components: [{ id: 'root', component: 'Text', text: 'Book TS101?' }] } },
        ],
      });
    }
    const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    await (await s.send('find flights to Corfu', { principal: ann })).settled;
    const held = await (await s.send('book the first one', { principal: ann })).settled;
    expect(held.finalizedBy).toBe('suspended');
    const [pending] = await srv.runtime.store.listApprovals({ sessionId: s.id, status: 'pending' });
    const click = (name: string, context: Record<string, unknown>) => ({ name, surfaceId: `approval:book_flight:${pending!.callId}`, sourceComponentId: name, context });

    const outsider = await connect('globex:gus:approver');
    outsider.send({ type: 'action', sessionId: s.id, action: click('approve', { approvalId: pending!.approvalId }), ref: 'o' });
    expect(await outsider.next((f) => f.ref === 'o')).toMatchObject({ type: 'error', code: 'approval.not_found' });

    const approver = await connect('acme:amy:approver');
    approver.send({ type: 'subscribe', sessionId: s.id, resumeFrom: (await srv.runtime.store.lastSeq(s.id)) });
    await approver.next((f) => f.type === 'subscribed');
    approver.send({ type: 'action', sessionId: s.id, action: click('deny', { approvalId: pending!.approvalId, reason: 'too dear' }), ref: 'd' });
    expect(await approver.next((f) => f.ref === 'd')).toMatchObject({ type: 'answered', approvalId: pending!.approvalId, decision: 'denied' });
    const resolved = await approver.next((f) => f.type === 'event' && f.event.type === 'approval.resolved');
    expect(resolved.event).toMatchObject({ decision: 'denied', via: 'websocket', by: { userId: 'amy' }, reason: 'too dear' });
    await approver.next((f) => f.type === 'event' && f.event.type === 'turn.settled');

    approver.send({ type: 'action', sessionId: s.id, action: click('pick', { flightId: 'TS205' }), ref: 'm' });
    expect(await approver.next((f) => f.ref === 'm')).toMatchObject({ type: 'sent', sessionId: s.id, queued: false });
    const started = await approver.next((f) => f.type === 'event' && f.event.type === 'turn.started');
    expect(started.event.input.text).toBe(`[surface action] pick on approval:book_flight:${pending!.callId} (pick)\n{"flightId":"TS205"}`);
  });

  it('ws:tenant — another tenant\'s session is refused exactly like a missing one, for subscribe and send', async () => {
    const c = await connect('globex:gus');
    c.send({ type: 'subscribe', sessionId, ref: 'a' });
    c.send({ type: 'subscribe', sessionId: 'sess_missing', ref: 'b' });
    c.send({ type: 'send', sessionId, text: 'cancel everything', ref: 'c' });
    const [a, b, s] = [await c.next((f) => f.ref === 'a'), await c.next((f) => f.ref === 'b'), await c.next((f) => f.ref === 'c')];
    const norm = (f: Record<string, unknown>, id: string) => ({ ...f, message: String(f.message).replace(id, 'ID'), sessionId: 'ID', ref: 0 });
    expect(a).toMatchObject({ type: 'error', code: 'session.not_found' });
    expect(norm(a, sessionId)).toEqual(norm(b, 'sess_missing'));
    expect(norm(s, sessionId)).toEqual(norm(b, 'sess_missing'));
    await new Promise((r) => setTimeout(r, 50));
    expect(c.frames.filter((f) => f.type === 'event')).toHaveLength(0);
    expect((await srv.runtime.store.readEvents(sessionId, 0)).length).toBe(recorded.length);
  });

  it('ws:frames:invalid — each bad frame gets an error naming the problem and the connection stays up', async () => {
    const c = await connect();
    const bad: [unknown, string, RegExp][] = [
      ['{not json', 'frame.invalid_json', /not valid JSON/],
      ['[1,2]', 'frame.invalid', /must be a JSON object, got an array/],
      ['"text"', 'frame.invalid', /must be a JSON object/],
      [{ sessionId }, 'frame.invalid', /\/type is required/],
      [{ type: 'shout' }, 'frame.unknown_type', /unknown frame type 'shout'/],
      [{ type: 'subscribe' }, 'frame.invalid', /\/sessionId must be a non-empty string/],
      [{ type: 'subscribe', sessionId, resumeFrom: -1 }, 'cursor.invalid', /\/resumeFrom must be a non-negative integer/],
      [{ type: 'subscribe', sessionId, extra: true }, 'frame.invalid', /\/extra is not a field of a 'subscribe' frame/],
      [{ type: 'send', sessionId, text: '' }, 'message.invalid', /\/text must be a non-empty string/],
      [{ type: 'approve' }, 'frame.invalid', /\/approvalId/],
      [{ type: 'ping', ref: { x: 1 } }, 'frame.invalid', /\/ref must be/],
      [JSON.stringify({ type: 'send', sessionId, text: 'x'.repeat(5000) }), 'frame.too_large', /exceeds the limit of 4096 bytes/],
    ];
    for (const [frame, code, message] of bad) {
      const from = c.frames.length;
      c.send(frame);
      const err = await c.next((f) => f.type === 'error', 5_000, from);
      expect(err.code).toBe(code);
      expect(err.message).toMatch(message);
    }
    const from = c.frames.length;
    c.ws.send(Buffer.from('{"type":"ping"}'), { binary: true });
    expect(await c.next((f) => f.type === 'error', 5_000, from)).toMatchObject({ code: 'frame.binary' });
    c.send({ type: 'ping', ref: 7 });
    expect(await c.next((f) => f.type === 'pong')).toMatchObject({ ref: 7 });
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('ws:frames:library-codes — "one mistake, one code on every channel": a frame whose field holds what the session API refuses gets that API\'s code (a negative resumeFrom cursor.invalid as events(-1), a blank text message.invalid as send("   "), a malformed consumes message.invalid_consumes as send(text, { consumes }), an over-long reason approval.invalid as answerApproval), not frame.invalid', async () => {
    const session = (await srv.runtime.session(sessionId))!;
    const libraryCode = async (f: () => unknown): Promise<string> => {
      try {
        await f();
      } catch (e) {
        return (e as { code: string }).code;
      }
      throw new Error('the library accepted it');
    };
    const same: [Record<string, unknown>, () => unknown][] = [
      [{ type: 'subscribe', sessionId, resumeFrom: -1 }, () => session.events(-1)],
      [{ type: 'send', sessionId, text: '   ' }, () => session.send('   ')],
      [{ type: 'send', sessionId, text: 'x', consumes: 'llm-context' }, () => session.send('x', { consumes: 'llm-context' as never })],
      [{ type: 'send', sessionId, text: 'x', consumes: Array.from({ length: 65 }, () => 'response') }, () => session.send('x', { consumes: Array.from({ length: 65 }, () => 'response') })],
      [{ type: 'deny', approvalId: 'appr_x', reason: 'r'.repeat(2001) }, () => session.answerApproval('appr_x', { approved: false, reason: 'r'.repeat(2001) }, ann, 'websocket')],
    ];
    const c = await connect();
    for (const [frame, lib] of same) {
      const from = c.frames.length;
      c.send(frame);
      const err = await c.next((f) => f.type === 'error', 5_000, from);
      const code = await libraryCode(lib);
      expect(code, JSON.stringify(frame).slice(0, 80)).not.toBe('frame.invalid');
      expect(err.code, JSON.stringify(frame).slice(0, 80)).toBe(code);
    }
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('ws:close:1008 — twenty bad frames in a row close the connection with 1008 (policy)', async () => {
    const c = await connect();
    for (let i = 0; i < 20; i++) c.send('nope');
    expect(await c.closed()).toBe(1008);
  });

  it('ws:close:1009 — a frame beyond the hard payload limit closes with 1009 (too big)', async () => {
    const c = await connect();
    c.send(JSON.stringify({ type: 'send', sessionId, text: 'x'.repeat(4096 * 16 + 10) }));
    expect(await c.closed()).toBe(1009);
  });

  it('ws:close:1007 — "a text frame that is not valid UTF-8" closes the connection with 1007 (invalid payload), as the close-code table says', async () => {
    const c = await connect();
    c.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    expect(await c.closed()).toBe(1007);
  });

  it('ws:heartbeat — the server sends app-level heartbeat frames on an idle connection', async () => {
    const c = await connect();
    const hb = await c.next((f) => f.type === 'heartbeat', 2_000);
    expect(Number.isNaN(Date.parse(hb.at))).toBe(false);
  });

  it('ws:fanout:shared — many subscribers of one session share one runtime subscription, and each gets every event', async () => {
    let eventsCalls = 0;
    const runtime = createTravelRuntime();
    const counting = new Proxy(runtime, {
      get(target, prop, receiver) {
        if (prop !== 'session') return Reflect.get(target, prop, receiver);
        return async (id: string) => {
          const h = await target.session(id);
          return (
            h &&
            new Proxy(h, {
              get: (t, p) => (p === 'events' ? (after?: number) => (eventsCalls++, t.events(after)) : Reflect.get(t, p, t)),
            })
          );
        };
      },
    });
    const own = await serve(counting);
    const s = await runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    const subs = await Promise.all(Array.from({ length: 20 }, () => WsClient.connect(own.wsUrl, { token: ACME })));
    for (const c of subs) c.send({ type: 'subscribe', sessionId: s.id });
    await Promise.all(subs.map((c) => c.next((f) => f.type === 'subscribed')));
    await (await s.send('find flights to Corfu', { principal: ann })).settled;
    const log = await runtime.store.readEvents(s.id, 0);
    await Promise.all(subs.map((c) => c.next((f) => f.type === 'event' && f.seq === log.at(-1)!.seq)));
    for (const c of subs) expect(c.events(s.id)).toEqual(log);
    expect(eventsCalls).toBe(1);
    for (const c of subs) c.ws.terminate();
    await own.close();
  });

  it('ws:subscription:limit — one connection follows at most 100 sessions', async () => {
    const c = await connect();
    const ids: string[] = [];
    for (let i = 0; i < 101; i++) ids.push((await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' })).id);
    // In batches: more than 64 frames awaiting an answer is itself a policy violation (1008).
    for (let i = 0; i < ids.length; i += 50) {
      for (let j = i; j < Math.min(i + 50, ids.length); j++) c.send({ type: 'subscribe', sessionId: ids[j], ref: j });
      await c.next((f) => f.ref === Math.min(i + 49, ids.length - 1), 10_000);
    }
    const last = await c.next((f) => f.ref === 100, 10_000);
    expect(last).toMatchObject({ type: 'error', code: 'subscription.limit', sessionId: ids[100] });
    expect(c.frames.filter((f) => f.type === 'subscribed')).toHaveLength(100);
  });

  it('ws:close:1011 — an unexpected failure while handling a frame is answered, then the connection closes with 1011', async () => {
    // The runtime as the transport sees it, with a session whose send() fails with a plain bug.
    const runtime = createTravelRuntime();
    const session = await runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    const broken = new Proxy(runtime, {
      get(target, prop, receiver) {
        if (prop !== 'session') return Reflect.get(target, prop, receiver);
        return async (id: string) => {
          const h = await target.session(id);
          return h && new Proxy(h, { get: (t, p) => (p === 'send' ? () => Promise.reject(new TypeError('boom')) : Reflect.get(t, p, t)) });
        };
      },
    });
    const own = await serve(broken);
    const c = await WsClient.connect(own.wsUrl, { token: ACME });
    c.send({ type: 'send', sessionId: session.id, text: 'hello', ref: 'x' });
    expect(await c.next((f) => f.type === 'error')).toMatchObject({ code: 'internal', message: 'internal error: boom', ref: 'x' });
    expect(await c.closed()).toBe(1011);
    await own.close();
  });

  it('ws:close:1001 — closing the transport closes every WebSocket with 1001 (going away)', async () => {
    const own = await serve(createTravelRuntime());
    const c = await WsClient.connect(own.wsUrl, { token: ACME });
    await own.transport.close();
    expect(await c.closed()).toBe(1001);
    await own.close();
  });
});

describe('streams: WebSocket allowedOrigins', () => {
  it('ws:origin:allowed — allowedOrigins lets listed pages in (and \'*\' any); an entry that is not an origin is refused when the transport is created', async () => {
    const srv = await serve(createTravelRuntime(), { transport: { allowedOrigins: ['https://app.example.com'] } });
    const opened: WsClient[] = [];
    try {
      opened.push(await WsClient.connect(srv.wsUrl, { token: ACME, origin: 'https://app.example.com' }));
      const other = await WsClient.connect(srv.wsUrl, { token: ACME, origin: 'https://app.example.com.evil.example' }).then(
        () => undefined,
        (e: { status?: number }) => e,
      );
      expect(other?.status).toBe(403);
    } finally {
      for (const c of opened) c.ws.terminate();
      await srv.close();
    }
    const any = await serve(createTravelRuntime(), { transport: { allowedOrigins: '*' } });
    try {
      const c = await WsClient.connect(any.wsUrl, { token: ACME, origin: 'https://anywhere.example' });
      expect(c.ws.protocol).toBe('turnstate.v1');
      c.ws.terminate();
    } finally {
      await any.close();
    }
    const runtime = createTravelRuntime();
    try {
      for (const bad of [['https://app.example.com/path'], ['app.example.com'], 'everyone']) {
        expect(() => createStreamsTransport({ runtime, allowedOrigins: bad as never })).toThrow(expect.objectContaining({ code: 'options.invalid', message: expect.stringMatching(/^createStreamsTransport: allowedOrigins/) }));
      }
    } finally {
      await runtime.close();
    }
  });
});
