/**
 * Untrusted server tools (approval-gated) and client-side tools over AAP, end to end:
 * tool_use stop, tool_permission granted/denied, answers from another channel, memoryless
 * resumption from history, standing approvals (`trust: true`), and a server restart between
 * the stop and the permission.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../../src/stores/sqlite.js';
import type { ModelScript } from '../../../src/models/script.js';
import type { Runtime } from '../../../src/api.js';
import { checkResponse } from './conformance.js';
import { MODES, api, createSession, history, startHarness, stopReason, textOf, toolCalls, toolResults, turn, user, type Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** Opens a session, searches, asks to book TS101 (EUR 94: needs approval); returns the stopped call. */
async function bookingStopped(url: string, mode: 'delta' | 'message' | 'none' = 'message', agent?: Record<string, unknown>) {
  const sid = await createSession(url, agent);
  await turn(url, sid, user('flights to Corfu', 'none'));
  const r = await turn(url, sid, user('book TS101', mode));
  const facts = checkResponse(r, mode);
  expect(facts.stopReason).toBe('tool_use');
  const call = toolCalls(r).find((c) => c.name === 'book_flight')!;
  expect(call).toBeDefined();
  return { sid, call, stopped: r, prior: facts.calls };
}

/** The tool_result the model received for a call (from the latest model request). */
function toolResultSentToModel(h: Harness, callId: string): string | undefined {
  const req = h.model.requests[h.model.requests.length - 1]!;
  for (const m of req.messages) {
    for (const b of m.content) if (b.type === 'tool_result' && b.tool_use_id === callId) return b.content;
  }
  return undefined;
}

describe('untrusted server tools (tool_permission)', () => {
  it('aap:tool_permission:granted — the tool runs, its tool_result follows the new turn_start, history holds a tool message', async () => {
    for (const mode of MODES) {
      const { sid, call, prior } = await bookingStopped(h.url, mode);
      const r = await turn(h.url, sid, { stream: mode, messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: true }] });
      const facts = checkResponse(r, mode, prior);
      expect(facts.stopReason).toBe('end_turn');
      const results = toolResults(r);
      expect(results.map((x) => x.toolCallId)).toEqual([call.toolCallId]);
      expect(JSON.parse(results[0]!.content)).toMatchObject({ flightId: 'TS101', status: 'confirmed' });
      if (mode === 'none') {
        // aap:none:granted-follow-up-starts-with-tool
        expect(r.json.messages[0]).toMatchObject({ role: 'tool', toolCallId: call.toolCallId });
        expect(r.json.messages[1].role).toBe('assistant');
      } else {
        expect(r.events[1]!.event).toBe('tool_result');
      }
      expect(textOf(r)).toMatch(/^Booked: your reference is BK\d{4}\.$/);
      const hist = await history(h.url, sid);
      const toolMsg = hist.find((m) => m.role === 'tool' && m.toolCallId === call.toolCallId);
      expect(JSON.parse(toolMsg.content)).toMatchObject({ status: 'confirmed' });
    }
  });

  it('aap:tool_permission:denied — the tool does not run; "Tool call denied: <reason>" goes to the model and history; the agent continues', async () => {
    for (const mode of MODES) {
      const { sid, call, prior } = await bookingStopped(h.url, mode);
      const executionsBefore = (await (await h.runtime.session(sid))!.executions()).filter((e) => e.tool === 'book_flight').length;
      const r = await turn(h.url, sid, { stream: mode, messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: false, reason: 'too expensive' }] });
      const facts = checkResponse(r, mode, prior);
      expect(facts.stopReason).toBe('end_turn');
      expect(toolResultSentToModel(h, call.toolCallId)).toBe('Tool call denied: too expensive');
      expect(textOf(r)).toBe('Understood, I did not go ahead (you said: too expensive).');
      const executionsAfter = (await (await h.runtime.session(sid))!.executions()).filter((e) => e.tool === 'book_flight').length;
      expect(executionsAfter).toBe(executionsBefore);
      const hist = await history(h.url, sid);
      expect(hist.find((m) => m.role === 'tool' && m.toolCallId === call.toolCallId)?.content).toBe('Tool call denied: too expensive');
    }
  });

  it('aap:tool_permission:denied-no-reason — without a reason the text is exactly "Tool call denied"', async () => {
    const { sid, call } = await bookingStopped(h.url, 'none');
    const r = await turn(h.url, sid, { messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: false }] });
    expect(r.json.stopReason).toBe('end_turn');
    expect(toolResultSentToModel(h, call.toolCallId)).toBe('Tool call denied');
    expect(r.json.messages[0]).toEqual({ role: 'tool', toolCallId: call.toolCallId, content: 'Tool call denied' });
    expect(textOf(r)).toBe('Understood, I did not go ahead.');
  });

  it('aap:tool_permission:never-in-history — permission messages appear neither in history nor in a none response', async () => {
    const { sid, call } = await bookingStopped(h.url, 'none');
    const r = await turn(h.url, sid, { messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: true }] });
    expect(r.json.messages.some((m: any) => m.role === 'tool_permission')).toBe(false);
    for (const type of ['full', 'compacted'] as const) {
      const hist = await history(h.url, sid, type);
      expect(hist.some((m) => m.role === 'tool_permission')).toBe(false);
      expect(JSON.stringify(hist)).not.toContain('granted');
    }
  });

  it('aap:history:resume-from-last-assistant — after a tool_use stop the last history message is the assistant holding the unresolved tool_use; a memoryless client resumes from it', async () => {
    const { sid, call } = await bookingStopped(h.url, 'delta');
    const hist = await history(h.url, sid);
    const last = hist[hist.length - 1];
    expect(last.role).toBe('assistant');
    const uses = last.content.filter((b: any) => b.type === 'tool_use');
    expect(uses).toEqual([{ type: 'tool_use', toolCallId: call.toolCallId, name: 'book_flight', input: { flightId: 'TS101', totalCost: 94 } }]);
    // A client that kept nothing: derive the answer from history alone.
    const answered = new Set(hist.filter((m) => m.role === 'tool').map((m) => m.toolCallId));
    const unresolved = uses.filter((u: any) => !answered.has(u.toolCallId));
    const r = await turn(h.url, sid, { stream: 'none', messages: unresolved.map((u: any) => ({ role: 'tool_permission', toolCallId: u.toolCallId, granted: true })) });
    expect(r.json.stopReason).toBe('end_turn');
    expect(textOf(r)).toMatch(/^Booked/);
    // It echoes the user's and the model's text: never sniffed as HTML.
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('aap:none:tool_use-matches-sse — the none-mode tool_use stop holds the blocks SSE modes show as tool_call', async () => {
    const shapes: string[] = [];
    for (const mode of MODES) {
      const { call } = await bookingStopped(h.url, mode);
      shapes.push(`${call.name}:${JSON.stringify(call.input)}`);
    }
    expect(new Set(shapes).size).toBe(1);
  });

  it('aap:tool_permission:answered-elsewhere — an approval answered through the runtime API resumes the turn; a later tool_permission gets 409 naming the id and the first decision', async () => {
    const { sid, call } = await bookingStopped(h.url, 'message');
    const session = (await h.runtime.session(sid))!;
    const snap = await session.snapshot();
    const approval = snap.pendingApprovals.find((a) => a.callId === call.toolCallId)!;
    const answered = await session.answerApproval(approval.approvalId, { approved: false, reason: 'manager said no' }, { userId: 'manager' }, 'api');
    expect(answered.ok).toBe(true);
    await session.idle();
    const hist = await history(h.url, sid);
    expect(hist.at(-1)).toEqual({ role: 'assistant', content: 'Understood, I did not go ahead (you said: manager said no).' });
    const late = await turn(h.url, sid, { stream: 'delta', messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: true }] });
    expect(late.status).toBe(409);
    expect(late.contentType).toMatch(/^application\/json/);
    expect(late.json.error.code).toBe('approval.already_resolved');
    expect(late.json.error.message).toContain(call.toolCallId);
    expect(late.json.error.message).toContain(approval.approvalId);
    expect(late.json.error.message).toContain('denied by manager via api');
    expect(late.json.error.details).toMatchObject({ toolCallId: call.toolCallId, approvalId: approval.approvalId, decision: 'denied', via: 'api' });
    // Nothing changed: the booking did not happen.
    expect((await session.executions()).some((e) => e.tool === 'book_flight')).toBe(false);
  });

  it('aap:tool_permission:same-path — a tool_permission is recorded as the AAP principal\'s answer via "aap"', async () => {
    const { sid, call } = await bookingStopped(h.url, 'none');
    await turn(h.url, sid, { messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: true, reason: 'ok' }] });
    const records = await h.runtime.store.listApprovals({ sessionId: sid });
    const rec = records.find((a) => a.callId === call.toolCallId)!;
    expect(rec.status).toBe('approved');
    expect(rec.resolution).toMatchObject({ decision: 'approved', via: 'aap', reason: 'ok' });
  });
});

describe('standing approvals and enabled tools (agent.tools)', () => {
  it('aap:agent.tools:trust — trust: true is a standing approval: the gated tool runs inline, no tool_use stop, recorded as the client\'s decision', async () => {
    for (const mode of MODES) {
      const sid = await createSession(h.url, { name: 'triage', tools: [{ name: 'book_flight', trust: true }] });
      const r = await turn(h.url, sid, user('book TS101', mode));
      const facts = checkResponse(r, mode);
      expect(facts.stopReason).toBe('end_turn');
      expect(toolCalls(r).map((c) => c.name)).toEqual(['book_flight']);
      expect(toolResults(r)).toHaveLength(1);
      const rec = (await h.runtime.store.listApprovals({ sessionId: sid })).find((a) => a.tool === 'book_flight');
      expect(rec?.status).toBe('approved');
      expect(rec?.policyResult.source).toBe('standing');
    }
  });

  it('aap:agent.tools:trust-forbidden — /meta says which tools refuse standing approvals; trust: true on one is a 400 naming the field', async () => {
    const meta = await api(h.url, '/meta');
    const tools = Object.fromEntries(meta.json.agents[0].tools.map((t: any) => [t.name, t.trust]));
    expect(tools.cancel_booking).toEqual({ policy: 'always', allowStandingApproval: false });
    expect(tools.book_flight).toEqual({ policy: 'cel', expression: "args.totalCost < 50 && ctx.user.tier == 'trusted'", allowStandingApproval: true });
    const r = await api(h.url, '/sessions', { body: { agent: { name: 'triage', tools: [{ name: 'book_flight' }, { name: 'cancel_booking', trust: true }] } } });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'tool.standing_approval_forbidden', path: '/agent/tools/1/trust' });
    expect(r.json.error.message).toContain('cancel_booking');
    // The same on a turn override.
    const sid = await createSession(h.url);
    const t = await turn(h.url, sid, user('hello', 'none', { agent: { tools: [{ name: 'cancel_booking', trust: true }] } }));
    expect(t.status).toBe(400);
    expect(t.json.error.path).toBe('/agent/tools/0/trust');
  });

  it('aap:agent.tools:off-unless-enabled — an exposed server tool the client did not enable is not available to the agent', async () => {
    const sid = await createSession(h.url, { name: 'triage' });
    const r = await turn(h.url, sid, user('book TS205', 'message'));
    checkResponse(r, 'message');
    expect(stopReason(r)).not.toBe('tool_use');
    expect(toolCalls(r)).toEqual([]);
    const req = h.model.requests[h.model.requests.length - 1]!;
    expect(req.tools.map((t) => t.name)).not.toContain('book_flight');
    // Enabling it on a later turn (persisted for the session) makes it available.
    const r2 = await turn(h.url, sid, user('book TS101', 'none', { agent: { tools: [{ name: 'book_flight' }] } }));
    expect(r2.json.stopReason).toBe('tool_use');
    const session = await api(h.url, `/sessions/${sid}`);
    expect(session.json.agent.tools).toEqual([{ name: 'book_flight' }]);
  });

  it('aap:approval:auto-approve — the CEL policy approves a cheap booking for a trusted principal without a stop', async () => {
    const hx = await startHarness({
      authenticate: (req) =>
        req.headers['x-tier'] === 'trusted'
          ? { ok: true, principal: { userId: 'vip', attributes: { tier: 'trusted' } } }
          : { ok: true, principal: { userId: 'guest', attributes: { tier: 'standard' } } },
    });
    try {
      const sid = await createSession(hx.url, undefined, { 'x-tier': 'trusted' });
      const cheap = await turn(hx.url, sid, user('book TS205', 'message'), { 'x-tier': 'trusted' });
      expect(stopReason(cheap)).toBe('end_turn');
      expect(textOf(cheap)).toMatch(/Booked: your reference is BK/);
      const pricey = await turn(hx.url, sid, user('book TS101', 'message'), { 'x-tier': 'trusted' });
      expect(stopReason(pricey)).toBe('tool_use');
    } finally {
      await hx.close();
    }
  });
});

/* ------------------------------------------------------------------ client-side and parallel calls */

const R = (text: string, turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text }], turnState } });
const PARALLEL: ModelScript = {
  rules: [
    {
      when: { on: 'user', text: 'weather' },
      respond: {
        blocks: [
          { type: 'tool_use', name: 'get_location', input: {} },
          { type: 'tool_use', name: 'lookup', input: { q: 'forecast' } },
          { type: 'tool_use', name: 'send_email', input: { to: 'ana@example.com' } },
          { type: 'tool_use', name: 'get_time', input: { tz: 'local' } },
        ],
      },
    },
    { when: { on: 'user', text: 'where' }, respond: { blocks: [{ type: 'tool_use', name: 'get_location', input: {} }] } },
    { when: { on: 'tool_result', tool: 'get_location', text: '(.+)' }, respond: { blocks: [R('You are in $1.', 'complete')] } },
    { when: { on: 'any' }, respond: { blocks: [R('All four calls answered.', 'complete')] } },
  ],
};
function setupParallel(rt: Runtime): void {
  rt.registries.tools.register({ name: 'lookup', description: 'Look something up', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => 'sunny' });
  rt.registries.tools.register({ name: 'send_email', description: 'Send an email', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: async () => 'sent' });
  rt.registries.actors.register({ name: 'assistant', tools: ['lookup', 'send_email'] });
}
const CLIENT_TOOLS = [
  { name: 'get_location', description: 'The device location', parameters: { type: 'object', properties: {} } },
  { name: 'get_time', description: 'The device time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
];

describe('client-side tools and parallel calls', () => {
  let hp: Harness;
  beforeAll(async () => {
    hp = await startHarness({ script: PARALLEL, setup: setupParallel });
  });
  afterAll(async () => {
    await hp.close();
  });

  it('aap:tool:client-no-result — a client tool stops the turn with tool_use, gets no server tool_result, and its tool message resumes the turn', async () => {
    for (const mode of MODES) {
      const sid = await createSession(hp.url, { name: 'assistant' });
      const r = await turn(hp.url, sid, user('where am I', mode, { tools: CLIENT_TOOLS }));
      const facts = checkResponse(r, mode, new Map(), ['get_location', 'get_time']);
      expect(facts.stopReason).toBe('tool_use');
      const [call] = toolCalls(r);
      expect(call).toMatchObject({ name: 'get_location', input: {} });
      expect(toolResults(r)).toEqual([]);
      const resumed = await turn(hp.url, sid, { stream: mode, messages: [{ role: 'tool', toolCallId: call!.toolCallId, content: 'Lisbon' }] });
      const f2 = checkResponse(resumed, mode, facts.calls, ['get_location', 'get_time']);
      expect(f2.stopReason).toBe('end_turn');
      expect(toolResults(resumed)).toEqual([]);
      expect(textOf(resumed)).toBe('You are in Lisbon.');
      // History keeps the client's result as a tool message.
      const hist = await history(hp.url, sid);
      expect(hist.find((m) => m.role === 'tool')).toEqual({ role: 'tool', toolCallId: call!.toolCallId, content: 'Lisbon' });
    }
  });

  it('aap:tool:parallel — several tool_calls before one turn_stop; client results and permissions answered together in one POST', async () => {
    for (const mode of MODES) {
      const sid = await createSession(hp.url, { name: 'assistant', tools: [{ name: 'send_email' }] });
      const r = await turn(hp.url, sid, user('weather report', mode, { tools: CLIENT_TOOLS }));
      const facts = checkResponse(r, mode, new Map(), ['get_location', 'get_time']);
      expect(facts.stopReason).toBe('tool_use');
      const calls = toolCalls(r);
      expect(calls.map((c) => c.name).sort()).toEqual(['get_location', 'get_time', 'lookup', 'send_email']);
      const lookup = calls.find((c) => c.name === 'lookup')!;
      expect(toolResults(r)).toEqual([{ toolCallId: lookup.toolCallId, content: 'sunny' }]);
      expect([...facts.unresolved].sort()).toEqual(calls.filter((c) => c.name !== 'lookup').map((c) => c.toolCallId).sort());
      const hist = await history(hp.url, sid);
      const lastUses = hist.at(-1).content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.name).sort();
      expect(lastUses).toEqual(['get_location', 'get_time', 'send_email']);
      const byName = Object.fromEntries(calls.map((c) => [c.name, c.toolCallId]));
      const resumed = await turn(hp.url, sid, {
        stream: mode,
        messages: [
          { role: 'tool', toolCallId: byName.get_location, content: 'Porto' },
          { role: 'tool_permission', toolCallId: byName.send_email, granted: true },
          { role: 'tool', toolCallId: byName.get_time, content: [{ type: 'text', text: '09:00' }] },
        ],
      });
      const f2 = checkResponse(resumed, mode, facts.calls, ['get_location', 'get_time']);
      expect(f2.stopReason).toBe('end_turn');
      expect(toolResults(resumed)).toEqual([{ toolCallId: byName.send_email, content: 'sent' }]);
    }
  });

  it('aap:tool:names-unique — a client tool may not take the name of one of the agent\'s tools', async () => {
    const sid = await createSession(hp.url, { name: 'assistant' });
    const r = await turn(hp.url, sid, user('hi', 'none', { tools: [{ name: 'lookup', description: 'clash', parameters: { type: 'object' } }] }));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'tool.name_conflict', path: '/tools/0/name' });
    const dup = await turn(hp.url, sid, user('hi', 'none', { tools: [CLIENT_TOOLS[0], CLIENT_TOOLS[0]] }));
    expect(dup.status).toBe(400);
    expect(dup.json.error).toMatchObject({ code: 'tool.duplicate', path: '/tools/1/name' });
  });

  it('aap:tool:parameters — "path is the JSON Pointer of the offending field … a 4xx changes nothing": client tools whose parameters are not an object schema, or not a valid JSON Schema, are a 400 at /tools/<i>/parameters when the session is created and on a turn', async () => {
    const bad = [
      { parameters: { type: 'string' }, message: /the parameters of client tool "pick" must have type: 'object' at its root/ },
      { parameters: { type: 'object', properties: { a: { type: 'strang' } } }, message: /the parameters of client tool "pick" is not a valid JSON Schema/ },
      // Nested deeper than a stack: still a 400 naming the field, never a 500.
      { parameters: JSON.parse(`{"type":"object","properties":{"a":${'{"items":'.repeat(1500)}{}${'}'.repeat(1500)}}}`), message: /the parameters of client tool "pick" (cannot be read as JSON|is not a valid JSON Schema)/ },
      // The same nesting in the root `type`, sent as text (the refusal once showed the whole value: a stack overflow, a 500).
      { parameters: `{"type":${'[{"a":'.repeat(10_000)}1${'}]'.repeat(10_000)}}`, message: /the parameters of client tool "pick" must have type: 'object' at its root .*got an array$/ },
      // A long `type` is shown cut, not echoed whole into the error body.
      { parameters: { type: 'x'.repeat(900_000) }, message: /must have type: 'object' at its root .*got "x{50,60}…$/ },
    ];
    for (const { parameters, message } of bad) {
      const ok = { name: 'ok', description: 'fine', parameters: { type: 'object' } };
      const tools = typeof parameters === 'string'
        ? `[${JSON.stringify(ok)},{"name":"pick","description":"pick one","parameters":${parameters}}]`
        : JSON.stringify([ok, { name: 'pick', description: 'pick one', parameters }]);
      const created = await api(hp.url, '/sessions', { body: `{"agent":{"name":"assistant"},"tools":${tools}}` });
      expect(created.status).toBe(400);
      expect(created.json.error).toMatchObject({ code: 'request.invalid', path: '/tools/1/parameters', message: expect.stringMatching(message) });
      const sid = await createSession(hp.url, { name: 'assistant' });
      const r = await api(hp.url, `/sessions/${sid}/turns`, { body: `{"stream":"none","messages":[{"role":"user","content":"hi"}],"tools":${tools}}` });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'request.invalid', path: '/tools/1/parameters', message: expect.stringMatching(message) });
      expect(await history(hp.url, sid)).toEqual([]);
    }
  });
});

describe('restart between the tool_use stop and the tool_permission', () => {
  it('aap:restart:nothing-lost — a new runtime on the same SQLite file accepts the permission and finishes the turn', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-aap-'));
    try {
      const path = join(dir, 'turnstate.db');
      const first = await startHarness({ store: createSqliteStore({ path }) });
      const { sid, call } = await bookingStopped(first.url, 'delta');
      const before = await history(first.url, sid);
      await first.close();

      const second = await startHarness({ store: createSqliteStore({ path }) });
      try {
        const { resumed } = await second.runtime.recover();
        expect(resumed).toContain(sid);
        expect(await history(second.url, sid)).toEqual(before);
        const r = await turn(second.url, sid, { stream: 'delta', messages: [{ role: 'tool_permission', toolCallId: call.toolCallId, granted: true }] });
        checkResponse(r, 'delta', new Map([[call.toolCallId, call.name]]));
        expect(stopReason(r)).toBe('end_turn');
        expect(toolResults(r).map((x) => x.toolCallId)).toEqual([call.toolCallId]);
        expect(textOf(r)).toMatch(/^Booked: your reference is BK\d{4}\.$/);
        const after = await history(second.url, sid);
        expect(after.slice(0, before.length - 1)).toEqual(before.slice(0, -1));
        expect(after.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['flights to Corfu', 'book TS101']);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('aap: permissions a principal may not give', () => {
  const TOKENS: Record<string, { userId: string; tenantId: string; roles?: string[] }> = {
    'tok-ana': { userId: 'ana', tenantId: 'acme', roles: ['admin'] },
    'tok-intern': { userId: 'intern', tenantId: 'acme' },
  };
  const H = (t: string) => ({ authorization: `Bearer ${t}` });
  const respondText = (text: string, turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState } });
  let h: Harness;
  const ran: string[] = [];
  beforeAll(async () => {
    h = await startHarness({
      authenticate: (req) => {
        const p = TOKENS[(req.headers.authorization ?? '').replace(/^Bearer /, '')];
        return p ? { ok: true, principal: p } : { ok: false, status: 401, message: 'no key' };
      },
      // Interns may approve emails, not payments.
      canAnswerApproval: (a, by) => a.tenantId === by.tenantId && (a.tool !== 'pay' || (by.roles ?? []).includes('admin')),
      script: {
        rules: [
          { when: { on: 'user', text: '^both' }, respond: { blocks: [{ type: 'tool_use', name: 'email', input: { to: 'x' } }, { type: 'tool_use', name: 'pay', input: { amount: 5 } }] } },
          { when: { on: 'user', text: '^pay' }, respond: { blocks: [{ type: 'tool_use', name: 'pay', input: { amount: 7 } }] } },
          { when: { on: 'tool_result' }, respond: { blocks: [respondText('done', 'complete')] } },
        ],
      },
      setup: (rt) => {
        for (const name of ['email', 'pay']) {
          rt.registries.tools.register({ name, description: name, inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: () => (ran.push(name), { ok: name }) });
        }
        rt.registries.actors.register({ name: 'agent', tools: ['email', 'pay'] });
      },
      agents: [{ name: 'agent' }],
    });
  });
  afterAll(async () => h?.close());

  it('aap:permission:forbidden — "Checks run before anything is applied: a 4xx changes nothing": a request granting two calls, one of which the principal may not answer, is 403 approval.forbidden and neither call runs; an admin then grants both', async () => {
    const sid = await createSession(h.url, { name: 'agent', tools: [{ name: 'email' }, { name: 'pay' }] }, H('tok-ana'));
    const calls = toolCalls(await turn(h.url, sid, user('both'), H('tok-ana')));
    expect(calls.map((c) => c.name)).toEqual(['email', 'pay']);
    const grant = { stream: 'none', messages: calls.map((c) => ({ role: 'tool_permission', toolCallId: c.toolCallId, granted: true })) };
    const refused = await turn(h.url, sid, grant, H('tok-intern'));
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: 'approval.forbidden', message: expect.stringContaining('nothing of this request was applied') });
    expect(ran).toEqual([]);
    expect((await h.runtime.approvals({ sessionId: sid })).map((a) => a.status)).toEqual(['pending', 'pending']);
    const granted = await turn(h.url, sid, grant, H('tok-ana'));
    expect(granted.status).toBe(200);
    expect(ran.sort()).toEqual(['email', 'pay']);
  });

  it('aap:permission:forbidden-resolved — a principal that may not answer an approval gets 403 after it was resolved too, never the 409 with who answered and why', async () => {
    const sid = await createSession(h.url, { name: 'agent', tools: [{ name: 'pay' }] }, H('tok-ana'));
    const [call] = toolCalls(await turn(h.url, sid, user('pay'), H('tok-ana')));
    const deny = { stream: 'none', messages: [{ role: 'tool_permission', toolCallId: call!.toolCallId, granted: false, reason: 'budget of team X exhausted' }] };
    expect((await turn(h.url, sid, deny, H('tok-ana'))).status).toBe(200);
    const late = await turn(h.url, sid, deny, H('tok-intern'));
    expect(late.status).toBe(403);
    expect(late.raw).not.toContain('budget of team X');
    expect(late.raw).not.toContain('ana');
    // The admin who may answer it still learns who did (409).
    expect((await turn(h.url, sid, deny, H('tok-ana'))).status).toBe(409);
  });
});
