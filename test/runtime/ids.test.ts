import { describe, expect, it, vi } from 'vitest';
import { createIdSource } from '../../src/host/clock.js';
import { answer, addTool, harness, part, Recorder, respond, toolUse } from './helpers.js';

/** Counts the CSPRNG draws of the id source (the real randomFillSync still fills the bytes). */
const draws = vi.hoisted(() => ({ calls: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return {
    ...crypto,
    randomFillSync: (...args: Parameters<typeof crypto.randomFillSync>) => {
      draws.calls++;
      return crypto.randomFillSync(...args);
    },
  };
});

/** `<prefix>_` + 16 random bytes in base64url. */
const UNGUESSABLE = (prefix: string) => new RegExp(`^${prefix}_[A-Za-z0-9_-]{22}$`);

describe('ids', () => {
  it('ids:unguessable — session, turn and approval ids carry 128 random bits, not a counter', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('gated', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'booked')], 'complete')) },
      ],
    });
    addTool(rt.registries, 'gated', () => ({ ok: 1 }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['gated'] });
    const s1 = await rt.createSession({ actor: 'a' });
    const s2 = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s1);
    const t = await s1.send('book it');
    expect((await t.settled).finalizedBy).toBe('suspended');
    const approvalId = rec.of('approval.requested')[0]!.approvalId;

    expect(s1.id).toMatch(UNGUESSABLE('sess'));
    expect(t.turnId).toMatch(UNGUESSABLE('turn'));
    expect(approvalId).toMatch(UNGUESSABLE('appr'));
    // Consecutive ids share no common prefix beyond what chance gives (no process prefix + counter).
    expect(s1.id.slice(5, 13)).not.toBe(s2.id.slice(5, 13));
  });

  it('ids:unguessable:distinct — 200,000 ids are distinct and every byte value is reachable', () => {
    const id = createIdSource();
    const seen = new Set<string>();
    const bytes = new Uint32Array(256);
    for (let i = 0; i < 200_000; i++) {
      const v = id('turn');
      seen.add(v);
      if (i < 4096) for (const b of Buffer.from(v.slice(5), 'base64url')) bytes[b]!++;
    }
    expect(seen.size).toBe(200_000);
    expect(bytes.every((n) => n > 0)).toBe(true);
  });

  it('ids:cheap — bytes are drawn from the CSPRNG in batches: one randomFillSync call serves 256 ids (its cost: bench/suites/policies-ids.mjs)', () => {
    const id = createIdSource();
    const before = draws.calls;
    const first = new Set<string>();
    for (let i = 0; i < 256; i++) first.add(id('turn'));
    expect(draws.calls - before).toBe(1);
    expect(first.size).toBe(256);
    id('turn');
    expect(draws.calls - before).toBe(2);
    for (let i = 0; i < 255 + 256 * 10; i++) id('turn');
    expect(draws.calls - before).toBe(12);
  });

  it('ids:deterministic — the newId option still decides every id (tests and replay)', async () => {
    let n = 0;
    const { rt } = harness(
      { rules: [{ when: { on: 'user' }, respond: answer(respond([part('response', 'hi')], 'complete')) }] },
      { newId: (prefix) => `${prefix}-${++n}` },
    );
    rt.registries.actors.register({ name: 'a', tools: [] });
    const s = await rt.createSession({ actor: 'a' });
    const t = await s.send('hello');
    await t.settled;
    expect(s.id).toBe('sess-1');
    expect(t.turnId).toBe('turn-2');
  });
});
