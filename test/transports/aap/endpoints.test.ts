/**
 * AAP's other endpoints: GET /meta, GET|POST /sessions, GET /sessions/{id}, history kinds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk } from '../../../examples/travel-desk/app.js';
import { api, createSession, history, startHarness, turn, user, type Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    setup: (rt) => void createTravelDesk(rt),
    agents: [
      {
        name: 'triage',
        title: 'Travel desk',
        version: '2.1.0',
        options: [
          { name: 'language', type: 'text', default: 'English' },
          { name: 'tone', type: 'select', options: ['formal', 'casual'], default: 'casual' },
          { name: 'apiKey', type: 'secret', default: '' },
        ],
      },
    ],
  });
});
afterAll(async () => {
  await h.close();
});

describe('GET /meta', () => {
  it('aap:meta — protocol version 3, the agents with capabilities (stream modes, history kinds, application tools), options and exposed tools', async () => {
    const r = await api(h.url, '/meta');
    expect(r.status).toBe(200);
    expect(r.json.version).toBe(3);
    const [agent] = r.json.agents;
    expect(agent).toMatchObject({ name: 'triage', title: 'Travel desk', version: '2.1.0' });
    expect(agent.capabilities).toEqual({
      history: { compacted: {}, full: {} },
      stream: { delta: {}, message: {}, none: {} },
      application: { tools: {} },
    });
    expect(agent.options.map((o: any) => o.name)).toEqual(['language', 'tone', 'apiKey']);
    // Exposed: the approval-gated tools the agent reaches through its hand-offs, with `parameters`.
    expect(agent.tools.map((t: any) => t.name)).toEqual(['book_flight', 'cancel_booking']);
    expect(agent.tools[0].parameters.required).toEqual(['flightId', 'totalCost']);
  });
});

describe('sessions', () => {
  it('aap:sessions:create-get-list — POST answers 201 {sessionId}; GET returns agent and client tools; the list holds it; secret options are redacted', async () => {
    const tools = [{ name: 'get_location', description: 'Device location', parameters: { type: 'object' } }];
    const created = await api(h.url, '/sessions', {
      body: { agent: { name: 'triage', tools: [{ name: 'book_flight', trust: true }], options: { tone: 'formal', apiKey: 'sk-secret' } }, tools },
    });
    expect(created.status).toBe(201);
    const sid = created.json.sessionId;
    expect(typeof sid).toBe('string');
    const got = await api(h.url, `/sessions/${sid}`);
    expect(got.json).toEqual({
      sessionId: sid,
      agent: { name: 'triage', tools: [{ name: 'book_flight', trust: true }], options: { tone: 'formal', apiKey: '***' } },
      tools,
    });
    const list = await api(h.url, '/sessions');
    expect(list.json.sessions.find((s: any) => s.sessionId === sid)).toEqual(got.json);
    expect(list.json.next).toBeUndefined();
  });

  it('aap:sessions:overrides — turn-level agent.options merge by key and tools replace; both persist for the session', async () => {
    const sid = await createSession(h.url, { name: 'triage', options: { language: 'Greek', tone: 'formal' } });
    const r = await turn(h.url, sid, user('hello', 'none', { agent: { options: { tone: 'casual' } }, tools: [{ name: 'get_time', description: 'Time', parameters: { type: 'object' } }] }));
    expect(r.status).toBe(200);
    const got = await api(h.url, `/sessions/${sid}`);
    expect(got.json.agent.options).toEqual({ language: 'Greek', tone: 'casual' });
    expect(got.json.tools.map((t: any) => t.name)).toEqual(['get_time']);
    const bad = await turn(h.url, sid, user('hello', 'none', { agent: { options: { tone: 'angry' } } }));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'option.invalid', path: '/agent/options/tone' });
  });

  it('aap:sessions:pagination — a bad cursor is a 400 naming ?after', async () => {
    const r = await api(h.url, '/sessions?after=%%%');
    expect(r.status).toBe(400);
    expect(r.json.error.path).toBe('?after');
  });

  it('aap:request:empty-text — a user message without text is a 400 naming the content', async () => {
    const sid = await createSession(h.url);
    const r = await turn(h.url, sid, user('   '));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'content.empty', path: '/messages/0/content' });
  });
});

describe('createAapHandler in a user\'s own server', () => {
  it('aap:handler:embed — mounted under a base path in a plain node:http server; other paths fall through to the host', async () => {
    const { createServer } = await import('node:http');
    const { createAapHandler } = await import('../../../src/transports/aap/index.js');
    const aap = createAapHandler({ runtime: h.runtime, basePath: '/v1/aap', publicMeta: true });
    const server = createServer(async (req, res) => {
      if (await aap(req, res)) return;
      res.writeHead(418, { 'content-type': 'text/plain' });
      res.end('host app');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
    try {
      const meta = await api(base, '/v1/aap/meta');
      expect(meta.json.version).toBe(3);
      const sid = await createSession(`${base}/v1/aap`);
      const r = await turn(`${base}/v1/aap`, sid, user('flights to Corfu', 'message'));
      expect(r.events.at(-1)!.data).toEqual({ stopReason: 'end_turn' });
      const other = await fetch(`${base}/meta`);
      expect(other.status).toBe(418);
      expect(await other.text()).toBe('host app');
    } finally {
      await aap.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('history', () => {
  it('aap:history:kinds — full keeps thinking; compacted leaves it out; both are Message[] in order', async () => {
    const sid = await createSession(h.url);
    await turn(h.url, sid, user('flights to Corfu', 'delta'));
    const full = await history(h.url, sid, 'full');
    const compacted = await history(h.url, sid, 'compacted');
    expect(full.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(JSON.stringify(full)).toContain('"type":"thinking"');
    expect(JSON.stringify(compacted)).not.toContain('"type":"thinking"');
    expect(compacted.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(full[0]).toEqual({ role: 'user', content: 'flights to Corfu' });
  });
});
