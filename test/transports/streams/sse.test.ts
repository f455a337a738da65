import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TurnstateError } from '../../../src/errors.js';
import { MAX_TIMER_MS } from '../../../src/limits.js';
import { createStreamsTransport } from '../../../src/transports/streams/index.js';
import type { SessionEvent } from '../../../src/types.js';
import { createTravelRuntime, serve, type Served } from './app.js';
import { eventsOf, readSse } from './clients.js';

const ACME = 'acme:ann';
const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('streams: SSE over 127.0.0.1 against the real runtime', () => {
  let srv: Served;
  let sessionId: string;
  let recorded: SessionEvent[];

  let gate: Promise<void> | undefined;
  beforeAll(async () => {
    srv = await serve(createTravelRuntime({ searchGate: () => gate ?? Promise.resolve() }), { transport: { heartbeatMs: 100, retryMs: 234 } });
    const s = await srv.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    sessionId = s.id;
    const principal = { tenantId: 'acme', userId: 'ann' };
    await (await s.send('find flights to Corfu', { principal })).settled;
    await (await s.send('book the first one', { principal })).settled;
    const approval = (await s.snapshot()).pendingApprovals[0]!;
    await s.answerApproval(approval.approvalId, { approved: true }, principal, 'api');
    await s.idle();
    recorded = await srv.runtime.store.readEvents(sessionId, 0);
  });
  afterAll(async () => srv?.close());

  const url = (q = ''): string => `${srv.base}/sessions/${sessionId}/events${q}`;
  const last = (): number => recorded.at(-1)!.seq;

  it('sse:frame — each event is id: <seq>, event: <type>, data: <json>; retry once; proxy-safe headers', async () => {
    const r = await readSse(url(), { headers: auth(ACME), until: (m) => m.length >= recorded.length });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(r.headers.get('cache-control')).toContain('no-cache');
    // A stream opened with ?token= carries no Authorization header to keep a shared cache off it.
    expect(r.headers.get('cache-control')).toContain('no-store');
    expect(r.headers.get('x-accel-buffering')).toBe('no');
    expect(r.headers.get('connection')).toBe('keep-alive');
    expect(r.headers.get('content-encoding')).toBeNull();
    expect(r.retry).toBe(234);
    expect(r.messages.map((m) => m.id)).toEqual(recorded.map((e) => String(e.seq)));
    expect(r.messages.map((m) => m.event)).toEqual(recorded.map((e) => e.type));
    expect(eventsOf(r.messages)).toEqual(recorded);
    const types = new Set(recorded.map((e) => e.type));
    for (const t of ['part.delta', 'part.received', 'turnState.changed', 'tool.called', 'tool.result', 'approval.requested', 'approval.resolved', 'turn.settled']) {
      expect(types.has(t as SessionEvent['type'])).toBe(true);
    }
  });

  it('sse:resume:every-seq — Last-Event-ID k yields exactly the events after k, for every k of the recorded turns', async () => {
    for (let k = 0; k <= last(); k++) {
      const expected = recorded.filter((e) => e.seq > k);
      const r = await readSse(url(), {
        headers: { ...auth(ACME), 'last-event-id': String(k) },
        until: (m) => m.length >= expected.length,
        timeoutMs: expected.length === 0 ? 300 : 5_000,
      });
      expect(r.status).toBe(200);
      expect(eventsOf(r.messages)).toEqual(expected);
    }
  });

  it('sse:resume:query — ?after=k resumes like Last-Event-ID, and the header wins over the query', async () => {
    const k = 17;
    const expected = recorded.filter((e) => e.seq > k);
    const q = await readSse(url(`?after=${k}`), { headers: auth(ACME), until: (m) => m.length >= expected.length });
    expect(eventsOf(q.messages)).toEqual(expected);
    const both = await readSse(url(`?after=3`), { headers: { ...auth(ACME), 'last-event-id': String(k) }, until: (m) => m.length >= expected.length });
    expect(eventsOf(both.messages)).toEqual(expected);
  });

  it('sse:resume:invalid — a cursor that is not a seq is a 400 naming it', async () => {
    const r = await readSse(url(), { headers: { ...auth(ACME), 'last-event-id': 'abc' } });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body!)).toEqual({ error: { code: 'cursor.invalid', message: expect.stringContaining('Last-Event-ID') } });
  });

  it('sse:resume:past-end — a Last-Event-ID or ?after past the end of the session\'s log is a 400 cursor.ahead naming the last seq', async () => {
    const r = await readSse(url(), { headers: { ...auth(ACME), 'last-event-id': String(last() + 1) } });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body!)).toEqual({
      error: { code: 'cursor.ahead', message: expect.stringContaining(`Last-Event-ID ${last() + 1} is past the end`), details: { lastSeq: last() } },
    });
    const q = await readSse(url(`?after=${last() + 50}`), { headers: auth(ACME) });
    expect(q.status).toBe(400);
    expect(JSON.parse(q.body!).error.message).toContain('?after');
    // The last seq itself is a valid cursor (nothing new yet).
    const atEnd = await readSse(url(), { headers: { ...auth(ACME), 'last-event-id': String(last()) }, timeoutMs: 300 });
    expect(atEnd.status).toBe(200);
  });

  it('sse:tenant — another tenant\'s session is refused exactly like a missing one', async () => {
    const other = await readSse(url(), { headers: auth('globex:gus') });
    const missing = await readSse(`${srv.base}/sessions/sess_missing/events`, { headers: auth('globex:gus') });
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    const a = JSON.parse(other.body!);
    const b = JSON.parse(missing.body!);
    expect(a.error.code).toBe('session.not_found');
    expect(a.error.message.replace(sessionId, 'ID')).toBe(b.error.message.replace('sess_missing', 'ID'));
    expect(Object.keys(a.error)).toEqual(Object.keys(b.error));
    expect(other.messages).toHaveLength(0);
  });

  it('sse:auth — no credentials is 401; EventSource authenticates with ?token= read by the hook', async () => {
    const none = await readSse(url());
    expect(none.status).toBe(401);
    const es = new EventSource(url(`?token=${encodeURIComponent(ACME)}`));
    const got: string[] = [];
    await new Promise<void>((resolve, reject) => {
      es.addEventListener('turn.settled', (m) => {
        got.push(m.lastEventId);
        if (got.length === 2) resolve();
      });
      es.onerror = () => reject(new Error('EventSource failed'));
    });
    es.close();
    expect(got).toEqual(recorded.filter((e) => e.type === 'turn.settled').map((e) => String(e.seq)));
  });

  it('sse:heartbeat — a ":" comment arrives every heartbeat interval on an idle stream', async () => {
    const r = await readSse(url(`?after=${last()}`), { headers: auth(ACME), until: (_m, c) => c.length >= 2 });
    expect(r.comments.length).toBeGreaterThanOrEqual(2);
    expect(r.comments[0]?.trim()).toBe('heartbeat');
    expect(r.messages).toHaveLength(0);
  });

  it('sse:follows-session — one stream carries a new turn started after it opened', async () => {
    const s = (await srv.runtime.session(sessionId))!;
    const before = last();
    const reading = readSse(url(`?after=${before}`), { headers: auth(ACME), until: (m) => m.some((x) => x.event === 'turn.settled') });
    await new Promise((r) => setTimeout(r, 50));
    await (await s.send('hello there', { principal: { tenantId: 'acme', userId: 'ann' } })).settled;
    const r = await reading;
    const evs = eventsOf(r.messages);
    expect(evs[0]?.type).toBe('turn.started');
    expect(evs.at(-1)?.type).toBe('turn.settled');
    expect(evs).toEqual(await srv.runtime.store.readEvents(sessionId, before));
    recorded = await srv.runtime.store.readEvents(sessionId, 0);
  });

  it('sse:shutdown — closing the transport ends open streams', async () => {
    const own = await serve(createTravelRuntime());
    const s = await own.runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    const reading = readSse(`${own.base}/sessions/${s.id}/events`, { headers: auth(ACME), timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 100));
    expect(own.transport.stats().sse).toBe(1);
    await own.transport.close();
    const r = await reading;
    expect(r.status).toBe(200);
    expect(r.ended).toBe(true);
    await own.close();
  });

  it('sse:eventsource:reconnect — a real EventSource whose connection is killed resumes with Last-Event-ID, nothing lost or repeated', async () => {
    const s = (await srv.runtime.session(sessionId))!;
    const start = last();
    const es = new EventSource(url(`?token=${encodeURIComponent(ACME)}&after=${start}`));
    const seen: SessionEvent[] = [];
    let opens = 0;
    es.addEventListener('open', () => opens++);
    const done = new Promise<void>((resolve) => {
      const on = (m: MessageEvent): void => {
        seen.push(JSON.parse(m.data as string) as SessionEvent);
        if (seen.at(-1)!.type === 'turn.settled') resolve();
      };
      for (const t of ['turn.started', 'part.delta', 'part.received', 'turnState.changed', 'model.usage', 'tool.called', 'tool.result', 'envelope.settled', 'turn.settled']) {
        es.addEventListener(t, on);
      }
    });
    while (opens === 0) await new Promise((r) => setTimeout(r, 5));
    let open!: () => void;
    gate = new Promise<void>((r) => (open = r));
    const ref = await s.send('find flights to Corfu', { principal: { tenantId: 'acme', userId: 'ann' } });
    // Kill every connection mid-turn (the search tool is held); EventSource reconnects after `retry`.
    while (!seen.some((e) => e.type === 'tool.called')) await new Promise((r) => setTimeout(r, 5));
    for (const sock of srv.sockets) sock.destroy();
    open();
    gate = undefined;
    await ref.settled;
    await done;
    es.close();
    const expected = await srv.runtime.store.readEvents(sessionId, start);
    expect(seen.map((e) => e.seq)).toEqual(expected.map((e) => e.seq));
    expect(seen).toEqual(expected);
    expect(opens).toBeGreaterThanOrEqual(2);
    recorded = await srv.runtime.store.readEvents(sessionId, 0);
  }, 15_000);
});

describe('streams: createStreamsTransport refuses options it cannot use', () => {
  const runtime = createTravelRuntime();
  afterAll(async () => runtime.close());
  const refused = (opts: Record<string, unknown>, message: string): void => {
    expect(() => createStreamsTransport({ runtime, ...opts }), message).toThrow(expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: `createStreamsTransport: ${message}` }));
  };
  const range = (min: number): string => `an integer from ${min} to ${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;

  it(`streams:options:heartbeat-range — "heartbeatMs is an integer from 100 to ${MAX_TIMER_MS}": past a timer's range it would fire every millisecond (every WebSocket terminated, SSE flooded), below 100 it is a flood, not a keep-alive; refused naming the value received`, async () => {
    for (const [v, shown] of [
      [MAX_TIMER_MS + 1, String(MAX_TIMER_MS + 1)],
      [1e300, '1e+300'],
      [0.001, '0.001'],
      [1.5, '1.5'],
      [99, '99'],
      [0, '0'],
      [-0, '-0'],
      [-1, '-1'],
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
      ['1000', '"1000"'],
    ] as const) {
      refused({ heartbeatMs: v }, `heartbeatMs must be ${range(100)}, got ${shown}`);
    }
    for (const heartbeatMs of [100, MAX_TIMER_MS]) await createStreamsTransport({ runtime, heartbeatMs }).close();
  });

  it('streams:options:retry-integer — "retryMs is an integer from 1 ms": the SSE retry: field takes digits only, so 1.5 would be ignored by the browser; the byte limits are integers of at least 1', async () => {
    for (const [v, shown] of [[1.5, '1.5'], [0, '0'], [MAX_TIMER_MS + 1, String(MAX_TIMER_MS + 1)], ['2000', '"2000"'], [Number.NaN, 'NaN']] as const) {
      refused({ retryMs: v }, `retryMs must be ${range(1)}, got ${shown}`);
    }
    refused({ maxBufferedBytes: 1.5 }, 'maxBufferedBytes must be an integer of at least 1, got 1.5');
    refused({ maxFrameBytes: '4096' }, 'maxFrameBytes must be an integer of at least 1, got "4096"');
    refused({ maxFrameBytes: -0 }, 'maxFrameBytes must be an integer of at least 1, got -0');
    await createStreamsTransport({ runtime, retryMs: 1, maxBufferedBytes: 1, maxFrameBytes: 1 }).close();
  });

  it('streams:options:unknown — "a misspelt option is refused naming it and the option it resembles, never ignored": heartbeatMS did not set the heartbeat, silently', () => {
    refused({ heartbeatMS: 1000 }, '`heartbeatMS` is not an option (did you mean `heartbeatMs`?); the options are runtime, authenticate, webRoot, maxBufferedBytes, heartbeatMs, retryMs, maxFrameBytes, maxStreamsPerPrincipal, allowedOrigins');
    expect(() => createStreamsTransport({ runtime, cors: '*' } as never)).toThrow(
      expect.objectContaining({ code: 'options.invalid', message: expect.stringMatching(/^createStreamsTransport: `cors` is not an option; the options are /) }),
    );
  });

  it('streams:options:code — "one code for a factory given an option it cannot use": every refusal of createStreamsTransport (allowedOrigins and a missing runtime included) is TurnstateError options.invalid, not a bare TypeError, its message starting createStreamsTransport: and naming the option', () => {
    const cases: [unknown, RegExp][] = [
      [{ runtime, retryMS: 10 }, /^createStreamsTransport: `retryMS` is not an option \(did you mean `retryMs`\?\)/],
      [{ runtime, heartbeatMs: '1000' }, /^createStreamsTransport: heartbeatMs must be an integer from 100 to \d+ .*, got "1000"$/],
      [{ runtime, maxBufferedBytes: Number.NaN }, /^createStreamsTransport: maxBufferedBytes must be an integer of at least 1, got NaN$/],
      [{ runtime, allowedOrigins: 'everyone' }, /^createStreamsTransport: allowedOrigins must be an array of origins or '\*', got "everyone"$/],
      [{ runtime, allowedOrigins: ['https://app.example.com/path'] }, /^createStreamsTransport: allowedOrigins: "https:\/\/app\.example\.com\/path" is not an origin/],
      [{}, /^createStreamsTransport: needs a `runtime` \(createRuntime\(\)\)$/],
      [{ runtime: null }, /^createStreamsTransport: needs a `runtime` \(createRuntime\(\)\)$/],
      [undefined, /^createStreamsTransport: options must be an object \{ runtime, \.\.\. \}, got undefined$/],
    ];
    for (const [opts, message] of cases) {
      let thrown: unknown;
      try {
        createStreamsTransport(opts as never);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, String(message)).toBeInstanceOf(TurnstateError);
      expect(thrown, String(message)).toMatchObject({ code: 'options.invalid', message: expect.stringMatching(message) });
    }
  });
});
