/**
 * Bad input over AAP: every error is JSON `{ error: { code, message, path? } }` naming the
 * problem, and nothing already accepted is lost. Also authentication and tenant isolation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/api.js';
import type { ModelScript } from '../../../src/models/script.js';
import { api, createSession, history, startHarness, textOf, toolCalls, turn, user, type Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ maxBodyBytes: 4096 });
});
afterAll(async () => {
  await h.close();
});

function expectError(r: { status: number; json: any }, status: number, code: string, path?: string): void {
  expect(r.status).toBe(status);
  expect(r.json.error.code).toBe(code);
  expect(typeof r.json.error.message).toBe('string');
  expect(r.json.error.message.length).toBeGreaterThan(10);
  if (path !== undefined) expect(r.json.error.path).toBe(path);
}

describe('unknown sessions', () => {
  it('aap:session:unknown-404 — every session-scoped endpoint answers 404 JSON for an unknown session', async () => {
    const id = 'sess_does_not_exist';
    for (const [method, path, body] of [
      ['GET', `/sessions/${id}`, undefined],
      ['DELETE', `/sessions/${id}`, undefined],
      ['GET', `/sessions/${id}/history?type=full`, undefined],
      ['POST', `/sessions/${id}/turns`, user('hello')],
    ] as const) {
      const r = await api(h.url, path, { method, ...(body ? { body } : {}) });
      expectError(r, 404, 'session.not_found');
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.json.error.message).toContain(id);
    }
  });

  it('aap:session:delete — DELETE answers 204, then the session is gone (404)', async () => {
    const sid = await createSession(h.url);
    await turn(h.url, sid, user('hello'));
    const del = await api(h.url, `/sessions/${sid}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    expect(del.raw).toBe('');
    expectError(await api(h.url, `/sessions/${sid}`), 404, 'session.not_found');
  });
});

describe('malformed and schema-breaking bodies', () => {
  it('aap:request:invalid-json — malformed JSON is a 400 naming the parse error', async () => {
    const sid = await createSession(h.url);
    const r = await api(h.url, `/sessions/${sid}/turns`, { body: '{"messages": [' });
    expectError(r, 400, 'body.invalid_json', '');
    expect(r.json.error.message).toMatch(/not valid JSON/);
  });

  it('aap:request:schema — schema-breaking bodies are 400s carrying the JSON pointer of the field', async () => {
    const sid = await createSession(h.url);
    const cases: [unknown, string][] = [
      [{}, '/messages'],
      [{ messages: [] }, '/messages'],
      [{ messages: 'hello' }, '/messages'],
      [{ messages: [{ role: 'robot', content: 'x' }] }, '/messages/0/role'],
      [{ messages: [{ content: 'x' }] }, '/messages/0/role'],
      [{ messages: [{ role: 'user' }] }, '/messages/0/content'],
      [{ messages: [{ role: 'user', content: 42 }] }, '/messages/0/content'],
      [{ messages: [{ role: 'tool_permission', toolCallId: 'x', granted: 'yes' }] }, '/messages/0/granted'],
      [{ messages: [{ role: 'tool', content: 'x' }] }, '/messages/0/toolCallId'],
      [{ messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'a', description: 'b' }] }, '/tools/0/parameters'],
      [{ messages: [{ role: 'user', content: 'hi' }], agent: { tools: [{ trust: true }] } }, '/agent/tools/0/name'],
      [{ messages: [{ role: 'user', content: 'hi' }], agent: { options: { a: 1 } } }, '/agent/options/a'],
      [[1, 2], ''],
    ];
    for (const [body, path] of cases) {
      const r = await api(h.url, `/sessions/${sid}/turns`, { body });
      expectError(r, 400, 'request.invalid', path);
      if (path !== '') expect(r.json.error.message).toContain(path);
    }
    expect(await history(h.url, sid)).toEqual([]);
  });

  it('aap:request:content-blocks — non-text content blocks are refused naming the block', async () => {
    const sid = await createSession(h.url);
    const r = await turn(h.url, sid, { messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', url: 'https://x/y.png' }] }] });
    expectError(r, 400, 'content.unsupported', '/messages/0/content/1');
  });

  it('aap:request:text-blocks-joined — "the texts of every block, an empty one too, joined by \\n; several user messages are joined by \\n\\n"', async () => {
    const cases: [unknown[], string][] = [
      [[{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }], 'a\nb'],
      [[{ role: 'user', content: [{ type: 'text', text: '' }, { type: 'text', text: 'b' }] }], '\nb'],
      [[{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: '' }] }], 'a\n'],
      [[{ role: 'user', content: [{ type: 'text', text: '' }, { type: 'text', text: '' }, { type: 'text', text: 'c' }] }], '\n\nc'],
      [[{ role: 'user', content: '' }, { role: 'user', content: 'b' }], '\n\nb'],
    ];
    for (const [messages, text] of cases) {
      const sid = await createSession(h.url);
      const r = await turn(h.url, sid, { messages });
      expect(r.status).toBe(200);
      const started = (await h.runtime.history(sid)).filter((e) => e.type === 'turn.started');
      expect(started.map((e) => (e as { input: { text: string } }).input.text)).toEqual([text]);
    }
  });

  it('aap:request:invalid-utf8 — "a body that is not UTF-8 ... nothing is stored with U+FFFD in its place": a 400 body.invalid_json naming the byte, and nothing of it is applied', async () => {
    const sid = await createSession(h.url);
    const before = await h.runtime.history(sid);
    const body = Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0x41, 0xc3, 0x28, 0xff, 0xed, 0xa0, 0x80, 0x5a]), Buffer.from('"}]}')]);
    const res = await fetch(`${h.url}/sessions/${sid}/turns`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const r = { status: res.status, json: await res.json() };
    expectError(r, 400, 'body.invalid_json', '');
    expect(r.json.error.message).toBe('request body is not valid UTF-8: JSON must be UTF-8 (RFC 8259)');
    expect(await h.runtime.history(sid)).toEqual(before);
    expect(h.model.requests.some((q) => JSON.stringify(q.messages).includes('\ufffd'))).toBe(false);
  });

  it('aap:request:missing-body — an empty body is a 400', async () => {
    const sid = await createSession(h.url);
    const r = await api(h.url, `/sessions/${sid}/turns`, { body: '' });
    expectError(r, 400, 'body.missing');
  });

  it('aap:request:content-type — a non-JSON content type is a 415', async () => {
    const sid = await createSession(h.url);
    const r = await api(h.url, `/sessions/${sid}/turns`, { body: 'messages=hi', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectError(r, 415, 'body.unsupported_media_type');
  });

  it('aap:request:too-large — a body over the limit is a 413, and nothing is recorded', async () => {
    const sid = await createSession(h.url);
    const big = 'x'.repeat(5000);
    const r = await api(h.url, `/sessions/${sid}/turns`, { body: user(big) });
    expectError(r, 413, 'body.too_large');
    expect(r.json.error.message).toContain('4096');
    expect(await history(h.url, sid)).toEqual([]);
    // The session still works.
    const ok = await turn(h.url, sid, user('flights to Corfu'));
    expect(ok.status).toBe(200);
  });

  it('aap:request:stream-mode — an unsupported stream mode is a 400 naming /stream', async () => {
    const sid = await createSession(h.url);
    expectError(await api(h.url, `/sessions/${sid}/turns`, { body: user('hi', 'chunk' as never) }), 400, 'stream.unsupported', '/stream');
  });

  it('aap:request:mixed — user messages are never mixed with tool results', async () => {
    const sid = await createSession(h.url);
    const r = await turn(h.url, sid, { messages: [{ role: 'user', content: 'hi' }, { role: 'tool', toolCallId: 'a', content: 'x' }] });
    expectError(r, 400, 'messages.mixed', '/messages');
  });

  it('aap:sessions:create-errors — unknown agent, unknown server tool, unknown option, seed messages', async () => {
    expectError(await api(h.url, '/sessions', { body: {} }), 400, 'request.invalid', '/agent');
    const unknownAgent = await api(h.url, '/sessions', { body: { agent: { name: 'nobody' } } });
    expectError(unknownAgent, 400, 'agent.unknown', '/agent/name');
    expect(unknownAgent.json.error.message).toContain('triage');
    const unknownTool = await api(h.url, '/sessions', { body: { agent: { name: 'triage', tools: [{ name: 'launch_rocket' }] } } });
    expectError(unknownTool, 400, 'tool.unknown', '/agent/tools/0/name');
    expect(unknownTool.json.error.message).toContain('book_flight');
    expectError(await api(h.url, '/sessions', { body: { agent: { name: 'triage', options: { colour: 'red' } } } }), 400, 'option.unknown', '/agent/options/colour');
    expectError(await api(h.url, '/sessions', { body: { agent: { name: 'triage' }, messages: [{ role: 'user', content: 'hi' }] } }), 400, 'request.unsupported', '/messages');
  });

  it('aap:history:type — the history type is required and must be compacted or full', async () => {
    const sid = await createSession(h.url);
    expectError(await api(h.url, `/sessions/${sid}/history`), 400, 'request.invalid', '?type');
    expectError(await api(h.url, `/sessions/${sid}/history?type=everything`), 400, 'request.invalid', '?type');
  });

  it('aap:http:method — a known path with the wrong method is a 405 with Allow; an unknown path is not AAP\'s', async () => {
    const r = await api(h.url, '/meta', { method: 'DELETE' });
    expectError(r, 405, 'method.not_allowed');
    expect(r.headers.get('allow')).toBe('GET');
    const none = await api(h.url, '/nowhere');
    expectError(none, 404, 'route.not_found');
  });
});

describe('tool results and permissions that do not match pending calls', () => {
  async function stopped(): Promise<{ sid: string; callId: string }> {
    const sid = await createSession(h.url);
    const r = await turn(h.url, sid, user('book TS101'));
    expect(r.json.stopReason).toBe('tool_use');
    return { sid, callId: toolCalls(r)[0]!.toolCallId };
  }

  it('aap:resubmit:unknown-id — an id that is not pending is a 400 naming it and the pending ids; nothing is applied', async () => {
    const { sid, callId } = await stopped();
    const r = await turn(h.url, sid, { messages: [{ role: 'tool_permission', toolCallId: callId, granted: true }, { role: 'tool_permission', toolCallId: 'call_bogus', granted: true }] });
    expectError(r, 400, 'tool.not_pending', '/messages/1/toolCallId');
    expect(r.json.error.message).toContain('call_bogus');
    expect(r.json.error.message).toContain(callId);
    // The valid permission in the same request was not applied: still pending.
    const snap = await (await h.runtime.session(sid))!.snapshot();
    expect(snap.pendingApprovals.map((a) => a.callId)).toEqual([callId]);
  });

  it('aap:resubmit:wrong-role — a tool result for a call waiting for permission is a 400 saying which message to send', async () => {
    const { sid, callId } = await stopped();
    const r = await turn(h.url, sid, { messages: [{ role: 'tool', toolCallId: callId, content: 'done' }] });
    expectError(r, 400, 'tool.wrong_role', '/messages/0/role');
    expect(r.json.error.message).toContain('tool_permission');
  });

  it('aap:resubmit:duplicate — the same id twice is a 400', async () => {
    const { sid, callId } = await stopped();
    const m = { role: 'tool_permission', toolCallId: callId, granted: true };
    expectError(await turn(h.url, sid, { messages: [m, m] }), 400, 'tool.duplicate_answer', '/messages/1/toolCallId');
  });

  it('aap:resubmit:missing — every pending call must be answered in the one request', async () => {
    const R = (text: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text }], turnState: 'complete' } });
    const hx = await startHarness({
      script: { rules: [{ when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'a', input: {} }, { type: 'tool_use', name: 'b', input: {} }] } }, { respond: { blocks: [R('ok')] } }] },
      setup: (rt) => rt.registries.actors.register({ name: 'x' }),
    });
    try {
      const tools = ['a', 'b'].map((name) => ({ name, description: `tool ${name}`, parameters: { type: 'object' } }));
      const sid = await createSession(hx.url, { name: 'x' });
      const r = await turn(hx.url, sid, user('go', 'none', { tools }));
      const [a, b] = toolCalls(r);
      const partial = await turn(hx.url, sid, { messages: [{ role: 'tool', toolCallId: a!.toolCallId, content: '1' }] });
      expectError(partial, 400, 'tool.results_missing', '/messages');
      expect(partial.json.error.message).toContain(b!.toolCallId);
      const full = await turn(hx.url, sid, { messages: [{ role: 'tool', toolCallId: a!.toolCallId, content: '1' }, { role: 'tool', toolCallId: b!.toolCallId, content: '2' }] });
      expect(full.json.stopReason).toBe('end_turn');
      expect(textOf(full)).toBe('ok');
    } finally {
      await hx.close();
    }
  });

  it('aap:resubmit:nothing-pending — tool messages for a session with no pending call are a 400', async () => {
    const sid = await createSession(h.url);
    await turn(h.url, sid, user('hello'));
    const r = await turn(h.url, sid, { messages: [{ role: 'tool', toolCallId: 'toolu_x', content: 'x' }] });
    expectError(r, 400, 'tool.not_pending', '/messages/0/toolCallId');
    expect(r.json.error.message).toContain('pending: none');
  });

  it('aap:turn:awaiting-tool-results — a user message while calls are pending is a 409 listing them; the pending call survives', async () => {
    const { sid, callId } = await stopped();
    const r = await turn(h.url, sid, user('actually, hello'));
    expectError(r, 409, 'turn.awaiting_tool_results');
    expect(r.json.error.details.pendingToolCallIds).toEqual([callId]);
    const ok = await turn(h.url, sid, { messages: [{ role: 'tool_permission', toolCallId: callId, granted: true }] });
    expect(ok.json.stopReason).toBe('end_turn');
  });
});

describe('double texting', () => {
  const SLOW: ModelScript = {
    rules: [
      { when: { on: 'user', text: 'slow' }, respond: { blocks: [{ type: 'tool_use', name: 'wait', input: {} }] } },
      { when: { on: 'tool_result' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text: 'slow done' }], turnState: 'complete' } }] } },
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text: 'reply to $user' }], turnState: 'complete' } }] } },
    ],
  };
  let release: () => void = () => {};
  function setup(rt: Runtime): void {
    rt.registries.tools.register({
      name: 'wait',
      description: 'Waits until the test releases it',
      inputSchema: { type: 'object' },
      scope: 'generalist',
      handler: () => new Promise<string>((resolve) => (release = () => resolve('released'))),
    });
    rt.registries.actors.register({ name: 'queueing' , tools: ['wait'] });
    rt.registries.actors.register({ name: 'rejecting', tools: ['wait'] });
  }
  let hx: Harness;
  beforeAll(async () => {
    hx = await startHarness({
      script: SLOW,
      setup,
      agents: [{ name: 'queueing', doubleTexting: 'queue' }, { name: 'rejecting', doubleTexting: 'reject' }],
      limits: { maxQueuedMessages: 1 },
    });
  });
  afterAll(async () => {
    release();
    await hx.close();
  });

  async function waitForRunning(sid: string): Promise<void> {
    const s = (await hx.runtime.session(sid))!;
    for (let i = 0; i < 200; i++) {
      if ((await s.executions()).length > 0 || (await s.snapshot()).state !== 'idle') {
        const events = await hx.runtime.store.readEvents(sid, 0);
        if (events.some((e) => e.type === 'tool.called')) return;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error('the slow turn never started');
  }

  it('aap:double-texting:queue — a turn while one runs is accepted and queued; both complete in order', async () => {
    const sid = await createSession(hx.url, { name: 'queueing' });
    const first = turn(hx.url, sid, user('slow one', 'message'));
    await waitForRunning(sid);
    const second = turn(hx.url, sid, user('second message', 'delta'));
    await new Promise((r) => setTimeout(r, 50));
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(textOf(a)).toBe('slow done');
    expect(textOf(b)).toBe('reply to second message');
    expect(b.events.at(-1)!.data.stopReason).toBe('end_turn');
    const hist = await history(hx.url, sid);
    expect(hist.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['slow one', 'second message']);
  });

  it('aap:double-texting:queue-full — a turn past RuntimeLimits.maxQueuedMessages is a 429 session.queue_full naming the limit; the queued turn still runs', async () => {
    const sid = await createSession(hx.url, { name: 'queueing' });
    const first = turn(hx.url, sid, user('slow one', 'none'));
    await waitForRunning(sid);
    const second = turn(hx.url, sid, user('second message', 'none'));
    const s = (await hx.runtime.session(sid))!;
    for (let i = 0; i < 200 && (await s.snapshot()).queued === 0; i++) await new Promise((r) => setTimeout(r, 5));
    const third = await turn(hx.url, sid, user('third message', 'none'));
    expectError(third, 429, 'session.queue_full');
    expect(third.json.error.message).toMatch(/maxQueuedMessages = 1/);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(textOf(a)).toBe('slow done');
    expect(textOf(b)).toBe('reply to second message');
    const hist = await history(hx.url, sid);
    expect(hist.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['slow one', 'second message']);
  });

  it('aap:double-texting:reject — under the reject policy a turn while one runs is a 409 and the running turn is unaffected', async () => {
    const sid = await createSession(hx.url, { name: 'rejecting' });
    const first = turn(hx.url, sid, user('slow one', 'none'));
    await waitForRunning(sid);
    const second = await turn(hx.url, sid, user('second message', 'none'));
    expectError(second, 409, 'session.busy');
    release();
    const a = await first;
    expect(textOf(a)).toBe('slow done');
    const hist = await history(hx.url, sid);
    expect(hist.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['slow one']);
  });
});

describe('authentication and tenants', () => {
  let ha: Harness;
  const TOKENS: Record<string, { userId: string; tenantId: string }> = {
    'tok-ana': { userId: 'ana', tenantId: 'acme' },
    'tok-bob': { userId: 'bob', tenantId: 'acme' },
    'tok-eve': { userId: 'eve', tenantId: 'globex' },
  };
  beforeAll(async () => {
    ha = await startHarness({
      authenticate: (req) => {
        const auth = req.headers.authorization;
        if (auth === undefined) return { ok: false, status: 401, message: 'missing bearer token' };
        const p = TOKENS[auth.replace(/^Bearer /, '')];
        return p ? { ok: true, principal: p } : { ok: false, status: 403, message: 'unknown token' };
      },
    });
  });
  afterAll(async () => {
    await ha.close();
  });
  const as = (tok: string) => ({ authorization: `Bearer ${tok}` });

  it('aap:auth:401-403 — no credentials is 401 with WWW-Authenticate; bad credentials are 403; both JSON', async () => {
    const none = await api(ha.url, '/sessions');
    expectError(none, 401, 'auth.unauthenticated');
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expectError(await api(ha.url, '/sessions', { headers: as('nope') }), 403, 'auth.forbidden');
    expectError(await api(ha.url, '/meta'), 401, 'auth.unauthenticated');
    expect((await api(ha.url, '/meta', { headers: as('tok-ana') })).status).toBe(200);
  });

  it('aap:auth:tenant-404 — another tenant\'s session is 404 on every endpoint, never 403; the same tenant sees it', async () => {
    const sid = await createSession(ha.url, undefined, as('tok-ana'));
    const r = await turn(ha.url, sid, user('hello', 'none'), as('tok-ana'));
    expect(r.status).toBe(200);
    for (const [method, path, body] of [
      ['GET', `/sessions/${sid}`, undefined],
      ['GET', `/sessions/${sid}/history?type=full`, undefined],
      ['POST', `/sessions/${sid}/turns`, user('hi')],
      ['DELETE', `/sessions/${sid}`, undefined],
    ] as const) {
      const other = await api(ha.url, path, { method, headers: as('tok-eve'), ...(body ? { body } : {}) });
      expectError(other, 404, 'session.not_found');
    }
    // The other tenant's list does not show it; the owner's tenant does.
    const eveList = await api(ha.url, '/sessions', { headers: as('tok-eve') });
    expect(eveList.json.sessions.map((s: any) => s.sessionId)).not.toContain(sid);
    const bobList = await api(ha.url, '/sessions', { headers: as('tok-bob') });
    expect(bobList.json.sessions.map((s: any) => s.sessionId)).toContain(sid);
    // Nothing was lost or changed by the refused requests.
    const hist = await history(ha.url, sid).catch(() => undefined);
    expect(hist).toBeUndefined(); // history() sends no token: 401
    const own = await api(ha.url, `/sessions/${sid}/history?type=full`, { headers: as('tok-bob') });
    expect(own.json.history.full.filter((m: any) => m.role === 'user')).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('aap:auth:approval-principal — a tool_permission is recorded with the authenticated principal', async () => {
    const sid = await createSession(ha.url, undefined, as('tok-ana'));
    const r = await turn(ha.url, sid, user('book TS101'), as('tok-ana'));
    const callId = toolCalls(r)[0]!.toolCallId;
    await turn(ha.url, sid, { messages: [{ role: 'tool_permission', toolCallId: callId, granted: true }] }, as('tok-bob'));
    const rec = (await ha.runtime.store.listApprovals({ sessionId: sid }))[0]!;
    expect(rec.resolution?.by).toMatchObject({ userId: 'bob', tenantId: 'acme' });
    expect(rec.resolution?.via).toBe('aap');
  });
});
