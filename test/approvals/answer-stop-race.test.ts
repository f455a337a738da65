/**
 * An approval answer racing the runtime's close() or the session's delete, at every microtask
 * between the answer and the approved handler's start, on a real SQLite file, with a restart.
 * docs/concepts/approvals.md, approvals:property: "an approved call's handler runs exactly once",
 * under restarts too; errors.md: after close() the runtime's calls reject with `runtime.closed`,
 * never the store's `store.closed`; an error says what is true (store:failure:approval-answer-truthful).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';

const SCRIPT: ModelScript = {
  rules: [
    {
      when: { on: 'user' },
      respond: {
        blocks: [
          { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'paying', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
          { type: 'tool_use', name: 'pay', input: { q: 'x' } },
        ],
      },
    },
    { respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'done', metadata: { partType: 'response' } }], turnState: 'complete' } }] } },
  ],
};

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The store with every method answering a promise and no group commit: a store whose writes are asynchronous. */
function asynchronous<T extends object>(store: T): T {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'groupCommit') return false;
      const v = Reflect.get(target, key) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const r = (v as (...a: unknown[]) => unknown).apply(target, args);
        return key === 'close' ? r : Promise.resolve().then(() => r);
      };
    },
  });
}

/** A runtime on `path` whose `pay` tool needs approval; `runs` counts its handler's runs. */
function open(path: string, runs: string[], writes: 'at once' | 'asynchronous' = 'at once'): TurnstateRuntime {
  const sqlite = createSqliteStore({ path });
  const runtime = createRuntime({ model: createScriptedModel(SCRIPT), store: writes === 'at once' ? sqlite : asynchronous(sqlite) });
  runtime.registries.tools.register({
    name: 'pay',
    description: 'pay',
    scope: 'generalist',
    requiresApproval: true,
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false },
    handler: (_a, ctx) => {
      runs.push(ctx.callId);
      return { paid: true };
    },
  });
  runtime.registries.actors.register({ name: 'desk', tools: ['pay'] });
  return runtime;
}

async function suspended(runtime: TurnstateRuntime) {
  const s = await runtime.createSession({ actor: 'desk' });
  await (await s.send('pay it')).settled;
  const [a] = await runtime.approvals({ sessionId: s.id, status: 'pending' });
  return { s, approvalId: a!.approvalId };
}

const told = (p: Promise<{ ok: boolean; code?: string }>) =>
  p.then(
    (r) => ({ code: r.ok ? 'ok' : (r.code ?? '?'), message: '' }),
    (e: { code?: string; message?: string }) => ({ code: `throw:${e.code}`, message: e.message ?? '' }),
  );

describe('an approval answer racing close() and delete', () => {
  it('approvals:property:close-race — "an approved call\'s handler runs exactly once": an approval answered, then close() at every microtask until the handler ran, then a restart: an approved record always runs its call once (never lost as "unknown"), the caller is told ok or runtime.closed saying truly whether the answer is recorded, never store.closed', async () => {
    const seen = new Set<string>();
    for (const via of ['session', 'runtime'] as const) {
      for (let k = 0; k <= 12; k++) {
        const dir = mkdtempSync(join(tmpdir(), 'turnstate-answer-close-'));
        dirs.push(dir);
        const path = join(dir, 'db.sqlite');
        const runs: string[] = [];
        let runtime = open(path, runs);
        const { s, approvalId } = await suspended(runtime);
        const answer = via === 'session' ? s.answerApproval(approvalId, { approved: true }, { userId: 'first' }, 'api') : runtime.answerApproval(approvalId, { approved: true }, { userId: 'first' }, 'api');
        const result = told(answer);
        for (let j = 0; j < k; j++) await Promise.resolve();
        await runtime.close();
        const got = await result;
        const where = `${via}, close after ${k} microtasks: ${JSON.stringify(got)}`;
        expect(['ok', 'throw:runtime.closed'], where).toContain(got.code);

        runtime = open(path, runs);
        try {
          await runtime.recover();
          const record = await runtime.approval(approvalId);
          const claimsRecorded = got.code === 'ok' || got.message.includes('the answer is recorded');
          if (claimsRecorded) expect(record?.resolution?.by.userId, where).toBe('first');
          if (record?.status === 'approved') {
            await (await runtime.session(s.id))!.idle();
            // Exactly once: not lost between approval.resolved and the handler's start.
            expect(runs, where).toHaveLength(1);
            // One outcome: the handler's, or, when close() cut it before it was recorded, "unknown"
            // (true: the handler did run, above).
            const results = (await runtime.history(s.id)).filter((e) => e.type === 'tool.result');
            expect(results, where).toHaveLength(1);
          } else {
            // Not recorded: the caller was told so, and the approval waits for an answer.
            expect(got.message, where).toMatch(/^the runtime is closed$|nothing was answered|the answer may not be recorded/);
            expect(record?.status, where).toBe('pending');
            expect(runs, where).toHaveLength(0);
          }
          seen.add(`${got.code}/${record?.status}`);
        } finally {
          await runtime.close();
        }
      }
    }
    // The sweep met every kind of ending: before the answer was recorded, after, and after the run.
    expect([...seen].sort()).toEqual(['ok/approved', 'throw:runtime.closed/approved', 'throw:runtime.closed/pending']);
  });

  it('approvals:property:close-race-async — "with a store whose writes are asynchronous, a close() during the approval.resolved write leaves the call unrun and, after the restart, reported as of unknown outcome; the error says so": it never promises that recovery runs it', async () => {
    const seen = new Set<string>();
    for (let k = 0; k <= 16; k++) {
      const dir = mkdtempSync(join(tmpdir(), 'turnstate-answer-close-async-'));
      dirs.push(dir);
      const path = join(dir, 'db.sqlite');
      const runs: string[] = [];
      let runtime = open(path, runs, 'asynchronous');
      const { s, approvalId } = await suspended(runtime);
      const result = told(s.answerApproval(approvalId, { approved: true }, { userId: 'first' }, 'api'));
      for (let j = 0; j < k; j++) await Promise.resolve();
      await runtime.close();
      const got = await result;
      runtime = open(path, runs, 'asynchronous');
      try {
        await runtime.recover();
        const record = await runtime.approval(approvalId);
        if (record?.status === 'approved') await (await runtime.session(s.id))!.idle();
        const where = `close after ${k} microtasks: ${JSON.stringify(got)}`;
        if (record?.status === 'approved' && runs.length === 0) {
          // The window an asynchronous write leaves: the error must not promise a run.
          expect(got.message, where).toContain('told its outcome is unknown');
          expect(got.message, where).not.toContain('recovery runs it');
          expect(got.message, where).not.toContain('recovery applies it');
          seen.add('unrun');
        }
        expect(runs.length, where).toBeLessThanOrEqual(1);
      } finally {
        await runtime.close();
      }
    }
    // The sweep met the window.
    expect(seen.has('unrun')).toBe(true);
  });

  it('approvals:answer:deleted — an answer whose session is deleted while it is applied never says the answer is recorded (the record is gone with the session); the call runs at most once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-answer-delete-'));
    dirs.push(dir);
    const runs: string[] = [];
    const runtime = open(join(dir, 'db.sqlite'), runs);
    const seen = new Set<string>();
    try {
      for (let k = 0; k <= 12; k++) {
        runs.length = 0;
        const { s, approvalId } = await suspended(runtime);
        const result = told(s.answerApproval(approvalId, { approved: true }, { userId: 'first' }, 'api'));
        for (let j = 0; j < k; j++) await Promise.resolve();
        await runtime.deleteSession(s.id);
        const got = await result;
        const where = `delete after ${k} microtasks: ${JSON.stringify(got)}`;
        expect(await runtime.approval(approvalId), where).toBeUndefined();
        expect(got.message, where).not.toContain('the answer is recorded');
        expect(['ok', 'approval.not_found', 'throw:session.not_found'], where).toContain(got.code);
        expect(runs.length, where).toBeLessThanOrEqual(1);
        seen.add(got.code);
      }
      // The sweep met the delete before the answer and while it was applied.
      expect([...seen].sort()).toEqual(['approval.not_found', 'ok', 'throw:session.not_found']);
    } finally {
      await runtime.close();
    }
  });
});
