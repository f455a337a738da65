/**
 * The travel desk over AAP: a server tool the client did not enable gets a reply that says how to
 * enable it, and enabling it makes the demo's own hint ("book TS205") work.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type ServeHandle } from '../../src/cli/serve.js';

let dir: string;
let h: ServeHandle;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'turnstate-serve-tools-'));
  h = await serve({ port: 0, host: '127.0.0.1', dataDir: join(dir, 'data'), env: {}, log: () => {} });
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: unknown): Promise<any> {
  const r = await fetch(h.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}
const say = (text: string) => ({ messages: [{ role: 'user', content: text }] });

describe('travel desk over AAP: tools the client enables', () => {
  it('aap:tools:not-enabled-says-how — "book TS205" without book_flight enabled answers how to enable it (agent.tools), not "no scripted answer"', async () => {
    const { sessionId } = await post('/sessions', { agent: { name: 'triage' } });
    const r = await post(`/sessions/${sessionId}/turns`, say('book TS205'));
    const text = r.messages.map((m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
    expect(text).not.toMatch(/no scripted answer/);
    expect(r.stopReason).toBe('end_turn');
    expect(text).toContain('the book_flight tool is switched off for this session');
    expect(text).toContain('agent.tools');
    expect(text).toContain('{\\"agent\\":{\\"name\\":\\"triage\\",\\"tools\\":[{\\"name\\":\\"book_flight\\"}]}}');
  });

  it('aap:tools:enabled — with book_flight in agent.tools, "book TS205" reaches the booking (it asks for permission)', async () => {
    const { sessionId } = await post('/sessions', { agent: { name: 'triage', tools: [{ name: 'book_flight' }] } });
    const r = await post(`/sessions/${sessionId}/turns`, say('book TS205'));
    expect(r.stopReason).toBe('tool_use');
    const calls = r.messages.flatMap((m: { content: unknown }) => (Array.isArray(m.content) ? m.content : [])).filter((b: { type: string }) => b.type === 'tool_use');
    expect(calls.map((c: { name: string }) => c.name)).toContain('book_flight');
  });
});
