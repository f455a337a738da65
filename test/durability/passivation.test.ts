/**
 * Passivation: a session with no turn in flight may have its live actor stopped; its state
 * stays in the store and its next use reactivates it with its full history.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDesk } from './fixtures/scenario.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelRequest } from '../../src/machines/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-passivate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Resolves once `cond()` holds, checking on each timer tick (the sweeper runs on timers). */
async function eventually(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('passivation', () => {
  it('passivation:idle-stops-actor — an idle session is passivated after passivateAfterMs; its state stays in the store', async () => {
    const db = join(dir, 'a.db');
    const rt = buildDesk({ db, sideLog: join(dir, 'a.log'), passivateAfterMs: 20 });
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('hi there')).settled;
    await s.idle();
    const lastSeq = (await s.snapshot()).lastSeq;
    expect(rt.liveSessions).toBe(1);
    await eventually(() => rt.liveSessions === 0);
    expect(await rt.store.lastSeq(s.id)).toBe(lastSeq);
    expect((await rt.store.readMailbox(s.id)).length).toBeGreaterThan(0);

    // passivation:reactivate — the next send reactivates it with the full history.
    const s2 = (await rt.session(s.id))!;
    expect(rt.liveSessions).toBe(1);
    // One handle per session: the one held across passivation is the one returned.
    expect(s2).toBe(s);
    const out = await (await s2.send('book Corfu')).settled;
    expect(out.finalizedBy).toBe('suspended');
    const snap = await s2.snapshot();
    expect(snap.lastSeq).toBeGreaterThan(lastSeq);
    // A suspended session holds a turn: it is never passivated.
    expect(rt.passivateIdle()).toBe(0);
    expect(rt.liveSessions).toBe(1);
    const events = await rt.store.readEvents(s.id, 0);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    await rt.close();
  });

  it('passivation:reactivate-history — after passivation the model sees the whole conversation', async () => {
    const model = createScriptedModel({
      rules: [{ when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Noted: $user', metadata: { partType: 'response' } }], turnState: 'complete' } }] } }],
    });
    const { createRuntime } = await import('../../src/runtime.js');
    const { createSqliteStore } = await import('../../src/stores/sqlite.js');
    const rt = createRuntime({ model, store: createSqliteStore({ path: join(dir, 'b.db') }) });
    rt.registries.actors.register({ name: 'notes', tools: [] });
    const s = await rt.createSession({ actor: 'notes' });
    await (await s.send('first')).settled;
    await (await s.send('second')).settled;
    expect(rt.passivateIdle()).toBe(1);
    expect(rt.liveSessions).toBe(0);
    const s2 = (await rt.session(s.id))!;
    const out = await (await s2.send('third')).settled;
    expect(out.parts[0]?.text).toBe('Noted: third');
    const req = model.requests.at(-1) as ModelRequest;
    const texts = req.messages.flatMap((m) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])));
    expect(texts.filter((t) => ['first', 'second', 'third'].includes(t))).toEqual(['first', 'second', 'third']);
    // The assistant's earlier answers are in the history too.
    const earlier = req.messages.filter((m) => m.role === 'assistant');
    expect(earlier.length).toBe(2);
    await rt.close();
  });

  // A handle is a virtual actor's reference: held across passivation, it reactivates the session.
  it('passivation:stale-handle — a handle held across passivation still accepts messages (it reactivates the session)', async () => {
    const db = join(dir, 'c.db');
    const rt = buildDesk({ db, sideLog: join(dir, 'c.log') });
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('hi there')).settled;
    expect(rt.passivateIdle()).toBe(1);
    expect(rt.liveSessions).toBe(0);
    try {
      const out = await (await s.send('hi again')).settled;
      expect(out.finalizedBy).toBe('complete');
      expect(rt.liveSessions).toBe(1);
      expect((await rt.store.readEvents(s.id, 0)).filter((e) => e.type === 'turn.settled')).toHaveLength(2);
    } finally {
      await rt.close();
    }
  });

  it('passivation:stale-observable — an events() observable taken before passivation and subscribed after it replays the stored events and goes on live', async () => {
    const rt = buildDesk({ db: join(dir, 'c2.db'), sideLog: join(dir, 'c2.log') });
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('hi there')).settled;
    const events$ = s.events(0);
    expect(rt.passivateIdle()).toBe(1);
    const seen: number[] = [];
    let completed = false;
    const sub = events$.subscribe({ next: (e) => seen.push(e.seq), complete: () => (completed = true) });
    try {
      await (await s.send('hi again')).settled;
      await s.idle();
      expect(completed).toBe(false);
      expect(seen).toEqual((await rt.history(s.id)).map((e) => e.seq));
      expect(seen.length).toBeGreaterThan(0);
    } finally {
      sub.unsubscribe();
      await rt.close();
    }
  });

  it('passivation:watched-stays — an idle session with a live subscriber is not passivated; once unsubscribed it is', async () => {
    const rt = buildDesk({ db: join(dir, 'd.db'), sideLog: join(dir, 'd.log') });
    const s = await rt.createSession({ actor: 'desk' });
    const seen: number[] = [];
    const sub = s.events(0).subscribe((e) => seen.push(e.seq));
    await (await s.send('hi there')).settled;
    await s.idle();
    expect(rt.passivateIdle()).toBe(0);
    expect(rt.liveSessions).toBe(1);
    sub.unsubscribe();
    expect(rt.passivateIdle()).toBe(1);
    expect(seen).toEqual((await rt.store.readEvents(s.id, 0)).map((e) => e.seq));
    await rt.close();
  });
});
