/**
 * docs/concepts/replay.md, "What replay feeds the re-run": approval decisions and client-side tool
 * results are answered as the recording answered them — also when the recording ends waiting with
 * only some of a response's calls answered, and when the answer came from a principal the
 * application's `canAnswerApproval` admitted (the re-run applies the recorded answer: the recording
 * shows it was accepted).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runReplayCommand } from '../../src/cli/replay.js';
import type { SessionStore } from '../../src/machines/ports.js';
import type { ModelScript } from '../../src/models/script.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { Registries } from '../../src/registries/types.js';
import type { RuntimeOptions } from '../../src/api.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { MailboxEntry, SessionEvent } from '../../src/types.js';
import { replaySession } from '../../src/replay/index.js';
import { respond } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-waits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const KINDS = ['memory', 'sqlite'] as const;
type Kind = (typeof KINDS)[number];

/** Records with `script` and `setup` in a store of `kind`; returns the store to replay from (SQLite: the file reopened read-only) and its path. */
async function record(
  kind: Kind,
  script: ModelScript,
  setup: (r: Registries) => void,
  run: (rt: ReturnType<typeof createRuntime>) => Promise<void>,
  options: Partial<RuntimeOptions> = {},
): Promise<{ store: SessionStore; path: string }> {
  const path = join(dir, `${files++}.db`);
  const store = kind === 'memory' ? createMemoryStore() : createSqliteStore({ path });
  const rt = createRuntime({ ...options, model: createScriptedModel(script), store });
  setup(rt.registries);
  await run(rt);
  if (kind === 'memory') return { store, path };
  await rt.close();
  return { store: createSqliteStore({ path, readonly: true }), path };
}

const toolTexts = (m: readonly MailboxEntry[]) => m.flatMap((e) => (e.kind === 'tool_result' ? [[e.callId, e.tool, e.content, e.isError]] : []));
/** The answers as the log has them, in its order. */
const answers = (events: readonly SessionEvent[]) =>
  events.flatMap((e): unknown[][] =>
    e.type === 'approval.resolved' ? [['approval', e.callId, e.decision, e.by, e.via, e.reason]] : e.type === 'tool.result' ? [['result', e.callId, e.tool, e.isError]] : [],
  );

let handlerRuns = 0;
const setup = (r: Registries) => {
  r.tools.register({
    name: 'refund', description: 'Refund an order', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true,
    handler: (a: { order: number }) => (handlerRuns++, { refunded: a.order }),
  });
  r.actors.register({ name: 'a', tools: ['refund'] });
};
const clientTools = [
  { name: 'pick_seat', description: 'Let the user pick a seat', parameters: { type: 'object' } },
  { name: 'pick_meal', description: 'Let the user pick a meal', parameters: { type: 'object' } },
];

/** Replays with the application's setup and inferred; each must reproduce the recording, waits included. */
async function expectSameWait(store: SessionStore, id: string) {
  const events = await store.readEvents(id, 0);
  const mailbox = await store.readMailbox(id);
  for (const options of [{ setup }, {}]) {
    const r = await replaySession(store, id, options);
    expect(r.diff.differences).toEqual([]);
    expect(r.stoppedEarly).toBeUndefined();
    expect(r.unmatchedCalls).toEqual([]);
    expect(r.replayed).toEqual(r.recorded);
    expect(r.replayed.turns.at(-1)!.finalizedBy).toBeNull();
    expect(toolTexts(r.mailbox)).toEqual(toolTexts(mailbox));
    expect(answers(r.events)).toEqual(answers(events));
  }
  expect(handlerRuns).toBe(0);
}

describe('replay: a recording that ends waiting with some of its calls answered', () => {
  it.each(KINDS)(
    'replay:exact:pending-at-end — "a recording that ends waiting for an approval replays to the same wait", its answered approvals "answered with the recorded decision … in the order the recording answered them" (%s)',
    async (kind) => {
      const script: ModelScript = {
        rules: [
          { when: { on: 'user' }, respond: { blocks: [1, 2, 3].map((order) => ({ type: 'tool_use', name: 'refund', input: { order } })) } },
          { respond: { blocks: [respond([{ text: 'Done.', partType: 'response' }], 'complete')] } },
        ],
      };
      const { store } = await record(kind, script, setup, async (rt) => {
        const s = await rt.createSession({ id: 'p', actor: 'a' });
        expect((await (await s.send('refund all three')).settled).finalizedBy).toBe('suspended');
        const pending = (await s.snapshot()).pendingApprovals;
        const byOrder = (n: number) => pending.find((p) => (p.args as { order: number }).order === n)!.approvalId;
        // Answered out of the order asked: the third approved, the first denied; the second never.
        expect((await s.answerApproval(byOrder(3), { approved: true }, { userId: 'ops' }, 'web')).ok).toBe(true);
        expect((await s.answerApproval(byOrder(1), { approved: false, reason: 'already refunded' }, { userId: 'lead' }, 'email')).ok).toBe(true);
        const after = await s.snapshot();
        expect(after.pendingApprovals).toHaveLength(1);
        expect(after.held).toBeDefined();
      });
      handlerRuns = 0;
      const recorded = (await replaySession(store, 'p', { setup })).recorded;
      expect(recorded.turns[0]!.steps[0]!.approvals).toEqual(['refund:requested', 'refund:requested', 'refund:requested', 'refund:approved', 'refund:denied']);
      expect(recorded.turns[0]!.steps[0]!.results).toEqual(['refund:error', 'refund:ok']);
      await expectSameWait(store, 'p');
      if (kind === 'sqlite') (store as ReturnType<typeof createSqliteStore>).close();
    },
  );

  it.each(KINDS)(
    'replay:exact:pending-at-end — client-side tool results are "injected, in the order the recording took them (with approval decisions: by the seq …)" also when the recording ends waiting for another call (%s)',
    async (kind) => {
      const script: ModelScript = {
        rules: [
          {
            when: { on: 'user' },
            respond: {
              blocks: [
                { type: 'tool_use', name: 'pick_seat', input: { flight: 'CFU1' } },
                { type: 'tool_use', name: 'refund', input: { order: 7 } },
                { type: 'tool_use', name: 'pick_meal', input: { flight: 'CFU1' } },
              ],
            },
          },
          { respond: { blocks: [respond([{ text: 'Done.', partType: 'response' }], 'complete')] } },
        ],
      };
      const { store } = await record(kind, script, setup, async (rt) => {
        const s = await rt.createSession({ id: 'c', actor: 'a' });
        expect((await (await s.send('seat, meal and a refund', { clientTools })).settled).finalizedBy).toBe('suspended');
        const snap = await s.snapshot();
        const meal = snap.pendingClientCalls.find((c) => c.tool === 'pick_meal')!.callId;
        // The meal first, then the approval; the seat is never picked.
        await s.inject({ kind: 'client-tool-result', callId: meal, content: '{"meal":"vegetarian"}' });
        expect((await s.answerApproval(snap.pendingApprovals[0]!.approvalId, { approved: true }, { userId: 'ops' }, 'web')).ok).toBe(true);
        const after = await s.snapshot();
        expect(after.pendingClientCalls.map((c) => c.tool)).toEqual(['pick_seat']);
        expect(after.pendingApprovals).toEqual([]);
      });
      handlerRuns = 0;
      const recorded = (await replaySession(store, 'c', { setup })).recorded;
      expect(recorded.turns[0]!.steps[0]!.results).toEqual(['refund:ok', 'pick_meal:ok']);
      await expectSameWait(store, 'c');
      if (kind === 'sqlite') (store as ReturnType<typeof createSqliteStore>).close();
    },
  );
});

describe('replay: an approver the application admitted', () => {
  it.each(KINDS)(
    'replay:exact:approver — approval decisions are "answered with the recorded decision, principal, channel and reason": one the application\'s canAnswerApproval let a role answer (not the session\'s tenant) replays identically (%s)',
    async (kind) => {
      const script: ModelScript = {
        rules: [
          { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'refund', input: { order: 40 } }] } },
          { respond: { blocks: [respond([{ text: 'Refunded.', partType: 'response' }], 'complete')] } },
        ],
      };
      const by = { userId: 'ops-lead', roles: ['approver'] };
      const { store, path } = await record(
        kind,
        script,
        setup,
        async (rt) => {
          const s = await rt.createSession({ id: 'r', actor: 'a', tenantId: 'acme' });
          await (await s.send('refund me', { principal: { userId: 'cust', tenantId: 'acme' } })).settled;
          const p = (await s.snapshot()).pendingApprovals[0]!;
          expect((await s.answerApproval(p.approvalId, { approved: true, reason: 'goodwill' }, by, 'console')).ok).toBe(true);
          await s.idle();
        },
        { canAnswerApproval: (_a, who) => who.roles?.includes('approver') === true },
      );
      handlerRuns = 0;
      for (const options of [{ setup }, {}]) {
        const r = await replaySession(store, 'r', options);
        expect(r.stoppedEarly).toBeUndefined();
        expect(r.diff.differences).toEqual([]);
        expect(r.replayed).toEqual(r.recorded);
        expect(r.replayed.turns[0]!.finalizedBy).toBe('complete');
        expect(r.events.find((e) => e.type === 'approval.resolved')).toMatchObject({ decision: 'approved', by, via: 'console', reason: 'goodwill' });
      }
      expect(handlerRuns).toBe(0);
      if (kind === 'sqlite') {
        (store as ReturnType<typeof createSqliteStore>).close();
        let stderr = '';
        expect(await runReplayCommand([path, 'r'], () => {}, (s) => (stderr += s))).toBe(0);
        expect(stderr).toBe('');
      }
    },
  );
});
