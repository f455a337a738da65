/**
 * Overrides (`agent.tools`, `agent.options`, `tools`, `consumes`) sent with a re-submission
 * (`tool` / `tool_permission` messages) after a `tool_use` stop: applied only once the answers are
 * taken, and kept for the session like those of a user turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAapTransport } from '../../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../../src/transports/server.js';
import type { Authenticate } from '../../../src/transports/types.js';
import { api, createSession, startHarness, toolCalls, turn, user, type Harness } from './helpers.js';

const TOKENS: Record<string, { userId: string; tenantId: string }> = {
  'tok-ana': { userId: 'ana', tenantId: 'acme' },
  'tok-intern': { userId: 'intern', tenantId: 'acme' },
};
const authenticate: Authenticate = (req) => {
  const p = TOKENS[(req.headers.authorization ?? '').replace(/^Bearer /, '')];
  return p ? { ok: true, principal: p } : { ok: false, status: 401, message: 'missing bearer token' };
};
const as = (tok: string): Record<string, string> => ({ authorization: `Bearer ${tok}` });
const ANA = as('tok-ana');

let h: Harness;
/** A second AAP handler on the same runtime: another instance, or this one after a restart. */
let other: RunningServer;
beforeAll(async () => {
  h = await startHarness({ authenticate, canAnswerApproval: (_a, by) => by.userId !== 'intern' });
  other = await startServer({ runtime: h.runtime, transports: [createAapTransport({ runtime: h.runtime, authenticate, agents: h.desk!.agents })], port: 0, closeRuntime: false });
});
afterAll(async () => {
  await other?.close();
  await h?.close();
});

/** A session stopped on the untrusted book_flight call; returns the session and the call id. */
async function bookingStopped(): Promise<{ sid: string; callId: string }> {
  const sid = await createSession(h.url, undefined, ANA);
  const r = await turn(h.url, sid, user('book TS101'), ANA);
  expect(r.json.stopReason).toBe('tool_use');
  return { sid, callId: toolCalls(r).find((c) => c.name === 'book_flight')!.toolCallId };
}

const sessionTools = async (url: string, sid: string): Promise<unknown> => (await api(url, `/sessions/${sid}`, { headers: ANA })).json.agent.tools;

describe('overrides sent with a re-submission', () => {
  it('aap:resubmit:refused-changes-nothing — "checks run before anything is applied: a 4xx changes nothing": a tool_permission refused with 403 leaves the session\'s overrides as they were', async () => {
    const { sid, callId } = await bookingStopped();
    const before = await sessionTools(h.url, sid);
    const r = await turn(h.url, sid, { agent: { tools: [] }, messages: [{ role: 'tool_permission', toolCallId: callId, granted: true }] }, as('tok-intern'));
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe('approval.forbidden');
    expect(await sessionTools(h.url, sid)).toEqual(before);
    expect(await h.runtime.approvals({ sessionId: sid, status: 'pending' })).toHaveLength(1);
  });

  it('aap:resubmit:overrides-persist — "overrides … persist for the session": overrides sent with a tool_permission hold for the session and are stored, so another handler on the runtime sees them', async () => {
    const { sid, callId } = await bookingStopped();
    const r = await turn(h.url, sid, { agent: { tools: [{ name: 'book_flight' }] }, messages: [{ role: 'tool_permission', toolCallId: callId, granted: true }] }, ANA);
    expect(r.status).toBe(200);
    expect(await sessionTools(h.url, sid)).toEqual([{ name: 'book_flight' }]);
    // A re-submission has no user message to carry them: the next one stores them.
    const next = await turn(h.url, sid, user('thanks'), ANA);
    expect(next.status).toBe(200);
    expect(await sessionTools(other.url, sid)).toEqual([{ name: 'book_flight' }]);
    expect(await sessionTools(h.url, sid)).toEqual([{ name: 'book_flight' }]);
  });
});
