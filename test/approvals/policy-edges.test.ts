/**
 * Approval policies at their edges (found by a review session): handler answers that throw when
 * read, handlers that change the call's arguments, standing approvals against a handler's deny,
 * the evaluator pool's lifetime, and matches() calls the rewrite must still find.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closePolicyEvaluators, compileApprovalPolicy } from '../../src/approvals/policy.js';
import { RegistrationError } from '../../src/errors.js';
import type { ApprovalHandler, PolicyContext } from '../../src/registries/types.js';
import type { PolicyResult } from '../../src/types.js';
import { buildDesk } from '../durability/fixtures/scenario.js';

const ctx: PolicyContext = { actor: 'booker', session: { id: 's' }, turn: { id: 't' }, user: {}, tenant: {} };
const handler = (h: ApprovalHandler) => compileApprovalPolicy('book', h);

const dir = mkdtempSync(join(tmpdir(), 'turnstate-policy-edges-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

class Verdict {
  get decision(): string {
    throw new Error('boom');
  }
}

describe('handler policies: "when it throws, times out or answers nonsense | asks | handler-error"', () => {
  it('approvals:handler:unreadable-answer — an answer whose getter throws, sync or async, or a thenable whose then throws, asks with handler-error; nothing escapes', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const cases: ApprovalHandler[] = [
        () => new Verdict() as never,
        async () => new Verdict() as never,
        () => ({ then: () => { throw new Error('then boom'); } }) as never,
        () => new Proxy({}, { get: () => { throw new Error('trap'); } }) as never,
      ];
      for (const h of cases) {
        const r = (await handler(h).evaluate({}, ctx)) as PolicyResult;
        expect(r).toMatchObject({ decision: 'ask', source: 'handler-error' });
      }
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('approvals:handler:args-copy — a handler that changes its args changes neither the call a human approves nor what the tool runs with', async () => {
    const seen: unknown[] = [];
    const rt = buildDesk({
      db: join(dir, 'copy.db'),
      sideLog: join(dir, 'copy.log'),
      bookPolicy: (args) => {
        (args as Record<string, unknown>).cost = 1e9;
        return { decision: 'ask' };
      },
      onHandler: (_t, _callId, args) => seen.push(args),
    });
    const s = await rt.createSession({ actor: 'desk' });
    await (await s.send('book Corfu')).settled;
    const [appr] = await rt.store.listApprovals({ sessionId: s.id, status: 'pending' });
    expect(appr!.args).toEqual({ what: 'Corfu', cost: 120 });
    await rt.answerApproval(appr!.approvalId, { approved: true }, { userId: 'alice' }, 'test');
    await s.idle();
    expect(seen).toEqual([{ what: 'Corfu', cost: 120 }]);
    await rt.close();
  });

  it('approvals:standing:handler-deny — "deny denies": a standing approval (AAP trust) does not override a handler policy\'s deny; it still approves what the handler would ask', async () => {
    for (const [decision, ran] of [['deny', 0], ['ask', 1]] as const) {
      const calls: string[] = [];
      const rt = buildDesk({ db: join(dir, `standing-${decision}.db`), sideLog: join(dir, `standing-${decision}.log`), bookPolicy: () => ({ decision }), onHandler: (_t, callId) => calls.push(callId) });
      const s = await rt.createSession({ actor: 'desk' });
      const out = await (await s.send('book Corfu', { standingApprovals: ['book'] })).settled;
      expect(out.finalizedBy, decision).toBe('complete');
      expect(calls, decision).toHaveLength(ran);
      await rt.close();
    }
  });
});

describe('the evaluator pool', () => {
  it('approvals:pool:close — "closePolicyEvaluators() ends them at once": awaiting it on an idle pool resolves; a pool made after it is closed by the next call; the last runtime\'s close() ends it', () => {
    // In a child process: the pool is the process's, and the check is that nothing is left behind.
    const script = `
      import { compileApprovalPolicy, closePolicyEvaluators, createRuntime, createScriptedModel } from ${JSON.stringify(new URL('../../src/index.ts', import.meta.url).pathname)};
      import { execSync } from 'node:child_process';
      const kids = () => execSync('ps -o pid= --ppid ' + process.pid).toString().trim().split(/\\s+/).filter(Boolean).length - 1;
      const base = kids(); // the loader's own helper processes
      const p = compileApprovalPolicy('t', { autoApproveIf: 'args.x < 5' });
      await p.evaluate({ x: 1 }, { actor: 'a', session: { id: 's' }, turn: { id: 't' }, user: {}, tenant: {} });
      await closePolicyEvaluators();
      const afterFirst = kids();
      await p.evaluate({ x: 1 }, { actor: 'a', session: { id: 's' }, turn: { id: 't' }, user: {}, tenant: {} });
      await closePolicyEvaluators();
      const afterSecond = kids();
      const rt = createRuntime({ model: createScriptedModel({ rules: [] }) });
      await p.evaluate({ x: 1 }, { actor: 'a', session: { id: 's' }, turn: { id: 't' }, user: {}, tenant: {} });
      await rt.close();
      console.log(JSON.stringify({ afterFirst: afterFirst - base, afterSecond: afterSecond - base, afterRuntime: kids() - base, done: true }));
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=turnstate-source', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    expect(line, r.stderr).toMatch(/"done":true/);
    expect(JSON.parse(line)).toEqual({ afterFirst: 0, afterSecond: 0, afterRuntime: 0, done: true });
  });
});

describe('matches() in autoApproveIf', () => {
  it('tools:cel:matches-call — a parenthesised receiver or a comment before matches() registers and runs on RE2; the runtime\'s own method name is refused with a RegistrationError', async () => {
    for (const expr of ['(args.to).matches("@corp[.]com$")', '((args.to)) // the address\n  .matches("@corp[.]com$")']) {
      const p = compileApprovalPolicy('mail', { autoApproveIf: expr });
      expect(await p.evaluate({ to: 'ana@corp.com' }, ctx), expr).toMatchObject({ decision: 'approve' });
      expect(await p.evaluate({ to: 'eve@evil.com' }, ctx), expr).toMatchObject({ decision: 'ask' });
    }
    let err: unknown;
    try {
      compileApprovalPolicy('mail', { autoApproveIf: 'args.s.__turnstate_re2_matches(args.p)' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RegistrationError);
    expect((err as RegistrationError).rule).toBe('tools:cel:reserved-name');
    await closePolicyEvaluators();
  });
});
