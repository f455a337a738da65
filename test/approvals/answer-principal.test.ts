/**
 * Who answers an approval is a principal object the record keeps (docs/concepts/approvals.md,
 * `approvals:answer:invalid`: an answer "from a principal object … is refused with
 * approval.invalid naming the field"; `approvals:answer:principal-json`). Only its type was checked:
 * `{ userId, n: 1n }` or a cycle threw a raw TypeError on SQLite (JSON.stringify) and was taken on
 * the memory store; an array was taken as a principal.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { addTool, answer, harness, part, respond, toolUse } from '../runtime/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-answer-principal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores: [string, () => SessionStore][] = [
  ['memory', () => createMemoryStore()],
  ['sqlite', () => createSqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.db`) })],
];

function bookingDesk(store: SessionStore) {
  const { rt } = harness(
    {
      rules: [
        { when: { on: 'user' as const }, respond: answer(respond([part('ack', 'booking needs a yes')], 'awaiting'), toolUse('book', { q: 'x' }, 'toolu_1')) },
        { respond: answer(respond([part('response', 'done')], 'complete')) },
      ],
    },
    { store },
  );
  let ran = 0;
  addTool(rt.registries, 'book', () => (ran++, { booked: true }), { requiresApproval: true });
  rt.registries.actors.register({ name: 'desk', tools: ['book'] });
  return { rt, ran: () => ran };
}

class Account {
  userId = 'u';
}

describe.each(stores)('answering principals on the %s store', (_name, makeStore) => {
  it('approvals:answer:principal-json — a principal that is not a plain object of JSON values is refused with approval.invalid naming the field, on every store alike; the record keeps a copy of the one taken', async () => {
    const { rt, ran } = bookingDesk(makeStore());
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('book it')).settled;
    const [appr] = await rt.approvals({ sessionId: s.id, status: 'pending' });
    const cycle: Record<string, unknown> = { userId: 'u' };
    cycle.self = cycle;
    const throwing = { userId: 'u' };
    Object.defineProperty(throwing, 'tier', { enumerable: true, get: () => { throw new Error('no tier'); } });
    const bad: [string, unknown, RegExp][] = [
      ['bigint', { userId: 'u', n: 1n }, /by\.n is a BigInt/],
      ['cycle', cycle, /by\.self refers back/],
      ['array', [], /principal must be an object.*not an array/],
      ['class instance', new Account(), /by is a Account/],
      ['date inside', { userId: 'u', attributes: { since: new Date(0) } }, /by\.attributes\.since is a Date/],
      ['function inside', { userId: 'u', attributes: { f: () => 1 } }, /by\.attributes\.f is a function/],
      ['throwing getter', throwing, /no tier/],
      ['userId not a string', { userId: 42 }, /by\.userId must be a string, got number/],
      ['roles not strings', { userId: 'u', roles: 'approver' }, /by\.roles must be an array of strings/],
      ['too large', { userId: 'u', attributes: { blob: 'x'.repeat(10_000) } }, /by is \d+ characters as JSON; at most 8192/],
    ];
    for (const [label, by, msg] of bad) {
      for (const answerIt of [rt.answerApproval.bind(rt), s.answerApproval.bind(s)]) {
        await expect(answerIt(appr!.approvalId, { approved: true }, by as never, 'api'), label).rejects.toMatchObject({ code: 'approval.invalid', message: expect.stringMatching(msg) });
      }
    }
    expect((await rt.approval(appr!.approvalId))?.status).toBe('pending');
    expect(ran()).toBe(0);

    // A plain JSON principal is taken; the record keeps a copy the caller's later changes do not reach.
    const by = { userId: 'ana', tenantId: undefined, roles: ['approver'], attributes: { tier: 'trusted', seats: [1, 2] } };
    expect(await s.answerApproval(appr!.approvalId, { approved: true }, by, 'api')).toMatchObject({ ok: true });
    by.attributes.tier = 'changed';
    by.roles.push('admin');
    await s.idle();
    expect(ran()).toBe(1);
    const expected = { userId: 'ana', roles: ['approver'], attributes: { tier: 'trusted', seats: [1, 2] } };
    expect((await rt.approval(appr!.approvalId))?.resolution?.by).toEqual(expected);
    const resolved = (await rt.history(s.id)).find((e) => e.type === 'approval.resolved') as unknown as { by: unknown };
    expect(resolved.by).toEqual(expected);
    await rt.close();
  });
});
