import { describe, expect, it } from 'vitest';
import { createIdSource } from '../../src/host/clock.js';
import { answer, addTool, harness, part, Recorder, respond, toolUse } from './helpers.js';

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

  it('ids:cheap — an id costs under 2 µs (bytes are drawn from the CSPRNG in batches)', () => {
    const id = createIdSource();
    for (let i = 0; i < 10_000; i++) id('turn');
    const n = 200_000;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) id('turn');
    const perIdNs = Number(process.hrtime.bigint() - t0) / n;
    console.log(`ids:cheap: ${perIdNs.toFixed(0)} ns per id`);
    expect(perIdNs).toBeLessThan(2000);
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
