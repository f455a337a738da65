/**
 * docs/stores.md "Write failures": a failed write never ends a session.events() subscription while
 * the session goes on; a session whose very first write failed was never stored and does not go
 * on, so its subscriptions complete instead of waiting for a host that never comes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { connectionOf, fill, free } from './fixtures/full-disk.js';

vi.mock('better-sqlite3', async (original) => (await import('./fixtures/full-disk.js')).recording(original));
const dir = mkdtempSync(join(tmpdir(), 'turnstate-never-stored-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const BIG = 'x'.repeat(64_000);
const R = (text: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState: 'complete' } });

describe('store failures: followers of a session never stored', () => {
  it('store:failure:events-never-stored — "subscriptions end when the session does": a session whose first write fails (the disk is full) was never stored, and its events() subscription completes instead of hanging', async () => {
    const path = join(dir, 'a.db');
    const store = createSqliteStore({ path });
    const db = connectionOf(path);
    const rt = createRuntime({ model: createScriptedModel({ rules: [{ when: { on: 'user' }, respond: { blocks: [R('hi')] } }] }), store });
    rt.registries.actors.register({ name: 'a' });
    fill(db);
    const s = await rt.createSession({ actor: 'a' });
    let ended: string | undefined;
    const seen: number[] = [];
    s.events().subscribe({ next: (e) => seen.push(e.seq), complete: () => (ended = 'complete'), error: (e) => (ended = `error ${(e as { code?: string }).code}`) });
    const sendErr = await s.send(`hello ${BIG}`).catch((e: unknown) => e);
    expect(sendErr).toMatchObject({ code: 'store.write_failed' });
    // Without any later call on the session: the subscription ends by itself.
    await new Promise((r) => setTimeout(r, 100));
    expect(ended).toBe('complete');
    expect(seen).toEqual([]);
    free(db);
    expect(await rt.session(s.id)).toBeUndefined();
    expect(await rt.deleteSession(s.id)).toBe(false);
    await rt.close();
  });
});
