/**
 * AAP client tools and the runtime's rules for them (transports/aap/agents.ts checkClientTools):
 * "checked when a session is created or a turn sends tools, so a session never keeps tools its
 * turns would refuse". Every client tool `send()` refuses (host/input-checks.ts checkSend, the
 * tool catalog's name checks) is refused by `POST /sessions` and by a turn, naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/api.js';
import type { ModelScript } from '../../../src/models/script.js';
import { api, createSession, history, startHarness, turn, user, type Harness } from './helpers.js';

const SCRIPT: ModelScript = {
  rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text: 'ok' }], turnState: 'complete' } }] } }],
};
function setup(rt: Runtime): void {
  rt.registries.tools.register({ name: 'lookup', description: 'Look something up', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => 'sunny' });
  rt.registries.actors.register({ name: 'assistant', tools: ['lookup'] });
}

const OK = { name: 'ok', description: 'fine', parameters: { type: 'object' } };
const tool = (over: Record<string, unknown>) => ({ ...OK, name: 'pick', ...over });

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ script: SCRIPT, setup, agents: [{ name: 'assistant' }] });
});
afterAll(async () => {
  await h.close();
});

const sessionCount = async () => (await h.runtime.listSessions()).length;

describe('client tool rules at session creation and on a turn', () => {
  it('aap:tools:name-rule — "a session never keeps tools its turns would refuse": a client tool name the runtime refuses (TOOL_NAME: 1-64 letters, digits, "_" or "-") is a 400 request.invalid at /tools/<i>/name when the session is created and on a turn; nothing is kept', async () => {
    for (const name of ['ns.tool', 'a:b', 'a'.repeat(65), '', 'naïve']) {
      const before = await sessionCount();
      const created = await api(h.url, '/sessions', { body: { agent: { name: 'assistant' }, tools: [OK, tool({ name })] } });
      expect(created.status, name).toBe(400);
      expect(created.json.error, name).toMatchObject({ code: 'request.invalid', path: '/tools/1/name', message: expect.stringContaining('1-64 letters, digits, "_" or "-"') });
      expect(await sessionCount()).toBe(before);
      const sid = await createSession(h.url, { name: 'assistant' });
      const r = await turn(h.url, sid, user('hi', 'none', { tools: [OK, tool({ name })] }));
      expect(r.status, name).toBe(400);
      expect(r.json.error, name).toMatchObject({ code: 'request.invalid', path: '/tools/1/name' });
      expect(await history(h.url, sid)).toEqual([]);
    }
    // The longest name the rule allows is kept, and its turns run.
    const longest = 'a'.repeat(64);
    const created = await api(h.url, '/sessions', { body: { agent: { name: 'assistant' }, tools: [tool({ name: longest })] } });
    expect(created.status).toBe(201);
    const r = await turn(h.url, created.json.sessionId, user('hi'));
    expect(r.status).toBe(200);
    expect(r.json.stopReason).toBe('end_turn');
  });

  it('aap:tools:send-rules — "a session never keeps tools its turns would refuse": every client tool send() refuses is refused by POST /sessions and by a turn, with a 400 naming the tool\'s field', async () => {
    const cases: { tools: Record<string, unknown>[]; code: string; path: string }[] = [
      { tools: [tool({ name: 'ns.tool' })], code: 'request.invalid', path: '/tools/0/name' },
      { tools: [tool({ name: 'respond' })], code: 'tool.name_conflict', path: '/tools/0/name' },
      { tools: [tool({ name: 'respond_to_user' })], code: 'tool.name_conflict', path: '/tools/0/name' },
      { tools: [tool({ name: 'mark_work_complete' })], code: 'tool.name_conflict', path: '/tools/0/name' },
      { tools: [tool({ name: 'lookup' })], code: 'tool.name_conflict', path: '/tools/0/name' },
      { tools: [OK, OK], code: 'tool.duplicate', path: '/tools/1/name' },
      { tools: [tool({ description: 7 })], code: 'request.invalid', path: '/tools/0/description' },
      { tools: [tool({ parameters: [] })], code: 'request.invalid', path: '/tools/0/parameters' },
      { tools: [tool({ parameters: { type: 'string' } })], code: 'request.invalid', path: '/tools/0/parameters' },
      { tools: [tool({ parameters: { type: 'object', properties: { a: { type: 'strang' } } } })], code: 'request.invalid', path: '/tools/0/parameters' },
    ];
    for (const { tools, code, path } of cases) {
      const label = JSON.stringify(tools);
      // The library refuses it...
      const session = await h.runtime.createSession({ actor: 'assistant' });
      await expect(session.send('hi', { clientTools: tools as never }), label).rejects.toMatchObject({ code: expect.stringMatching(/^message\.invalid/) });
      // ...so AAP refuses it before a session keeps it, and on a turn.
      const created = await api(h.url, '/sessions', { body: { agent: { name: 'assistant' }, tools } });
      expect(created.status, label).toBe(400);
      expect(created.json.error, label).toMatchObject({ code, path });
      const sid = await createSession(h.url, { name: 'assistant' });
      const r = await turn(h.url, sid, user('hi', 'none', { tools }));
      expect(r.status, label).toBe(400);
      expect(r.json.error, label).toMatchObject({ code, path });
    }
  });
});
