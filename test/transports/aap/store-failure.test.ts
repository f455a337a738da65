/**
 * docs/transports/aap.md "Stop reasons" and "Errors" when the store fails: a turn whose write
 * fails mid-way ends with stopReason `error` and says what failed (`error: { code, message }`
 * beside it, the code and message of the turn's outcome); a `tool_permission` the store could not
 * record is a 500 `store.write_failed` naming its cause, never `internal`. The disk fills for real
 * (test/durability/fixtures/full-disk.ts); a lock is another connection's `BEGIN IMMEDIATE`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { ModelScript } from '../../../src/models/script.js';
import { createSqliteStore } from '../../../src/stores/sqlite.js';
import { connectionOf, fill, free } from '../../durability/fixtures/full-disk.js';
import { checkResponse } from './conformance.js';
import { api, createSession, MODES, startHarness, stopReason, toolCalls, turn, user, type TurnResult } from './helpers.js';

vi.mock('better-sqlite3', async (original) => (await import('../../durability/fixtures/full-disk.js')).recording(original));

const dir = mkdtempSync(join(tmpdir(), 'turnstate-aap-store-failure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const R = (text: string, turnState: string, partType = 'response') => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType } }], turnState } });
const SCRIPT: ModelScript = {
  rules: [
    { when: { on: 'user', text: '^export' }, respond: { blocks: [R('Exporting.', 'awaiting', 'ack'), { type: 'tool_use', name: 'export', input: {} }] } },
    { when: { on: 'user', text: '^book' }, respond: { blocks: [R('Booking.', 'awaiting', 'ack'), { type: 'tool_use', name: 'book', input: { what: 'a room' } }] } },
    { when: { on: 'tool_result' }, respond: { blocks: [R('Done.', 'complete')] } },
    { when: { on: 'user' }, respond: { blocks: [R('Hello.', 'complete')] } },
  ],
};

async function harness(opts: { busyTimeoutMs?: number; during?: () => void } = {}) {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.db`);
  const store = createSqliteStore({ path, ...(opts.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: opts.busyTimeoutMs }) });
  const db = connectionOf(path);
  const hooks: { during?: () => void } = {};
  const h = await startHarness({
    store,
    script: SCRIPT,
    setup: (rt) => {
      // export: runs inline; its (large) result is what the full disk cannot take.
      rt.registries.tools.register({ name: 'export', description: 'Export.', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => (hooks.during?.(), { blob: 'x'.repeat(64_000) }) });
      rt.registries.tools.register({ name: 'book', description: 'Book.', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: () => ({ ref: 'BK1' }) });
      rt.registries.actors.register({ name: 'a', tools: ['export', 'book'] });
    },
  });
  return { h, db, path, hooks };
}

/** What an errored turn says failed: turn_stop's `error`; the `none` body stays exactly { stopReason, messages } and names the code in a header. */
const errorOf = (r: TurnResult) => (r.events.length > 0 ? r.events.at(-1)!.data.error : { code: r.headers.get('turnstate-error-code') });

describe('AAP when the store fails', () => {
  it('aap:stopReason:error-says-why — "an errored turn says what failed: turn_stop carries error { code, message } beside stopReason, the none body (exactly stopReason and messages) its code in turnstate-error-code": a turn whose write fails mid-way (the disk fills while its tool runs) answers 200 with stopReason error and the store\'s error, in every mode', async () => {
    const { h, db, hooks } = await harness();
    try {
      for (const mode of MODES) {
        const sid = await createSession(h.url, { name: 'a' });
        hooks.during = () => fill(db);
        const r = await turn(h.url, sid, user('export it', mode));
        hooks.during = undefined;
        free(db);
        checkResponse(r, mode);
        expect(stopReason(r)).toBe('error');
        expect(errorOf(r)).toEqual(mode === 'none' ? { code: 'store.write_failed' } : { code: 'store.write_failed', message: expect.stringContaining('database or disk is full (SQLITE_FULL)') });
        // The session goes on from what the store holds.
        expect(stopReason(await turn(h.url, sid, user('hello', mode)))).toBe('end_turn');
      }
    } finally {
      await h.close();
    }
  });

  it('aap:stopReason:error-says-why — "an errored turn says what failed": a model failure carries the model\'s code and message too', async () => {
    const hx = await startHarness({
      script: { rules: [{ when: { on: 'user' }, respond: { blocks: [], fail: { code: 'model.invalid_request', message: 'scripted failure' } } }] },
      setup: (rt) => rt.registries.actors.register({ name: 'a' }),
    });
    try {
      for (const mode of MODES) {
        const r = await turn(hx.url, await createSession(hx.url, { name: 'a' }), user('hi', mode));
        checkResponse(r, mode);
        expect(errorOf(r)).toEqual(mode === 'none' ? { code: 'model.invalid_request' } : { code: 'model.invalid_request', message: expect.stringContaining('scripted failure') });
      }
    } finally {
      await hx.close();
    }
  });

  it('store:failure:write-failed-named — "every store write failure surfaces as store.write_failed naming the store and its cause": a tool_permission while another connection holds the write lock is a 500 store.write_failed, not internal; sent again once the lock is gone, it runs the tool', async () => {
    const { h, path } = await harness({ busyTimeoutMs: 0 });
    try {
      const sid = await createSession(h.url, { name: 'a', tools: [{ name: 'book' }] });
      const asked = await turn(h.url, sid, user('book it'));
      expect(stopReason(asked)).toBe('tool_use');
      const [call] = toolCalls(asked);
      const permission = { messages: [{ role: 'tool_permission', toolCallId: call!.toolCallId, granted: true }] };
      const other = new (await import('better-sqlite3')).default(path);
      other.exec('BEGIN IMMEDIATE');
      let refused;
      try {
        refused = await api(h.url, `/sessions/${sid}/turns`, { body: permission });
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect(refused.status).toBe(500);
      expect(refused.json.error).toMatchObject({ code: 'store.write_failed', message: expect.stringContaining('database is locked (SQLITE_BUSY); the approval is as it was') });
      const granted = await turn(h.url, sid, permission);
      expect(stopReason(granted)).toBe('end_turn');
    } finally {
      await h.close();
    }
  });
});
