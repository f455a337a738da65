/**
 * Approval policies end to end (spec 002 "HITL approval integration"), on a SQLite store: CEL
 * auto-approval, asking a human, run-time policy errors, handler policies that deny, who
 * answered through which channel, and answering by approval id alone after a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/types.js';
import type { ApprovalPolicy } from '../../src/registries/types.js';
import { buildDesk, sideEffects } from './fixtures/scenario.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-policy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function desk(bookPolicy: ApprovalPolicy, tenantId?: string) {
  const id = ++n;
  const db = join(dir, `p${id}.db`);
  const sideLog = join(dir, `p${id}.log`);
  const calls: string[] = [];
  const rt = buildDesk({ db, sideLog, bookPolicy, onHandler: (_t, callId) => calls.push(callId) });
  const s = await rt.createSession({ actor: 'desk', ...(tenantId ? { tenantId } : {}) });
  return { rt, s, db, sideLog, calls };
}

const types = (events: SessionEvent[]) => events.map((e) => e.type);
const states = (events: SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turnState.changed' ? [`${e.from}->${e.to}`] : []));

describe('approval policies', () => {
  it('approvals:policy:cel-true-runs — autoApproveIf true: the tool runs without suspension', async () => {
    const { rt, s, calls } = await desk({ autoApproveIf: "args.cost < 50 && ctx.user.tier == 'trusted'" });
    const out = await (await s.send('cheap Corfu', { principal: { userId: 'u1', attributes: { tier: 'trusted' } } })).settled;
    expect(out.finalizedBy).toBe('complete');
    const events = await rt.store.readEvents(s.id, 0);
    expect(types(events)).not.toContain('approval.requested');
    expect(states(events)).not.toContain('awaiting->suspended');
    expect(calls).toHaveLength(1);
    await rt.close();
  });

  it('approvals:policy:cel-false-asks — autoApproveIf false: the turn suspends and a human is asked', async () => {
    const { rt, s, calls } = await desk({ autoApproveIf: "args.cost < 50 && ctx.user.tier == 'trusted'" });
    // Cheap, but the user is not trusted: the expression is false.
    const out = await (await s.send('cheap Corfu', { principal: { userId: 'u1', attributes: { tier: 'new' } } })).settled;
    expect(out.finalizedBy).toBe('suspended');
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['approval-request']);
    const [appr] = await rt.store.listApprovals({ sessionId: s.id, status: 'pending' });
    expect(appr?.policyResult).toMatchObject({ decision: 'ask', source: 'cel' });
    expect(calls).toHaveLength(0);
    await rt.close();
  });

  it('approvals:policy:error-asks — an expression that fails at run time asks a human, never approves', async () => {
    const { rt, s, calls } = await desk({ autoApproveIf: 'args.budget.limit > args.cost' });
    const out = await (await s.send('cheap Corfu')).settled;
    expect(out.finalizedBy).toBe('suspended');
    const [appr] = await rt.store.listApprovals({ sessionId: s.id, status: 'pending' });
    expect(appr?.policyResult.decision).toBe('ask');
    expect(appr?.policyResult.source).toBe('cel-error');
    expect(calls).toHaveLength(0);
    await rt.close();
  });

  it('approvals:policy:handler-deny — a handler policy that denies gives the model a ToolDenied result; the handler never runs', async () => {
    const { rt, s, calls, sideLog } = await desk(() => ({ decision: 'deny', reason: 'bookings are frozen' }));
    const out = await (await s.send('book Corfu')).settled;
    expect(out.finalizedBy).toBe('complete');
    const events = await rt.store.readEvents(s.id, 0);
    const result = events.find((e) => e.type === 'tool.result');
    expect(result).toMatchObject({ tool: 'book', isError: true, view: 'Tool call denied: bookings are frozen' });
    expect(types(events)).not.toContain('approval.requested');
    const mailbox = await s.mailbox();
    expect(mailbox.find((m) => m.kind === 'tool_result' && m.tool === 'book')).toMatchObject({ isError: true, content: 'Tool call denied: bookings are frozen' });
    expect(out.parts.at(-1)?.text).toBe('That did not go through.');
    expect(calls).toHaveLength(0);
    expect(sideEffects(sideLog)).toHaveLength(0);
    await rt.close();
  });

  it('approvals:record:who-when-via — the approval record keeps who answered, when, and through which channel; the handler sees the decision', async () => {
    const { rt, s, calls } = await desk(true);
    await (await s.send('book Corfu')).settled;
    const [appr] = await rt.store.listApprovals({ sessionId: s.id, status: 'pending' });
    expect(appr).toMatchObject({ tool: 'book', actor: 'desk', args: { what: 'Corfu', cost: 120 }, status: 'pending', policyResult: { source: 'always' } });
    const before = Date.now();
    const r = await rt.answerApproval(appr!.approvalId, { approved: true, reason: 'within budget' }, { userId: 'alice', roles: ['approver'] }, 'email');
    expect(r.ok).toBe(true);
    await s.idle();
    const rec = await rt.store.getApproval(appr!.approvalId);
    expect(rec).toMatchObject({ status: 'approved', resolution: { decision: 'approved', reason: 'within budget', by: { userId: 'alice' }, via: 'email' } });
    expect(Date.parse(rec!.resolution!.at)).toBeGreaterThanOrEqual(before - 1000);
    const events = await rt.store.readEvents(s.id, 0);
    expect(events.find((e) => e.type === 'approval.resolved')).toMatchObject({ approvalId: appr!.approvalId, decision: 'approved', by: { userId: 'alice' }, via: 'email' });
    // spec 002 "The context argument": approvalDecision is populated for calls resumed after approval.
    expect(calls).toEqual([appr!.callId]);
    const toolResult = (await s.mailbox()).find((m) => m.kind === 'tool_result' && m.tool === 'book');
    expect(toolResult && 'content' in toolResult ? toolResult.content : '').toContain('"approvedBy":"alice"');
    const [exec] = await s.executions();
    expect(exec).toMatchObject({ tool: 'book', approvalId: appr!.approvalId, isError: false });
    await rt.close();
  });

  it('approvals:answer:by-id-after-restart — the approval is answered from the runtime by id alone, after a restart, without recover() or a session handle', async () => {
    const { rt, s, db, sideLog } = await desk(true);
    const sessionId = s.id;
    await (await s.send('book Corfu')).settled;
    const [appr] = await rt.store.listApprovals({ sessionId, status: 'pending' });
    await rt.close();

    const calls: string[] = [];
    const rt2 = buildDesk({ db, sideLog, onHandler: (_t, c) => calls.push(c) });
    expect(rt2.liveSessions).toBe(0);
    const r = await rt2.answerApproval(appr!.approvalId, { approved: false, reason: 'not now' }, { userId: 'bob' }, 'sms');
    expect(r).toMatchObject({ ok: true, record: { status: 'denied', resolution: { by: { userId: 'bob' }, via: 'sms' } } });
    const again = await rt2.answerApproval(appr!.approvalId, { approved: true }, { userId: 'carol' }, 'websocket');
    expect(again).toMatchObject({ ok: false, code: 'approval.already_resolved', record: { status: 'denied', resolution: { by: { userId: 'bob' } } } });
    const s2 = (await rt2.session(sessionId))!;
    await s2.idle();
    const events = await rt2.store.readEvents(sessionId, 0);
    expect(events.at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
    expect(events.find((e) => e.type === 'tool.result')).toMatchObject({ isError: true, view: 'Tool call denied: not now' });
    expect(calls).toHaveLength(0);
    await rt2.close();
  });

  it('approvals:answer:forbidden — a principal of another tenant cannot answer; nothing changes; the right tenant can', async () => {
    const { rt, s } = await desk(true, 'acme');
    await (await s.send('book Corfu')).settled;
    const [appr] = await rt.store.listApprovals({ sessionId: s.id, status: 'pending' });
    const r = await rt.answerApproval(appr!.approvalId, { approved: true }, { userId: 'mallory', tenantId: 'other' }, 'api');
    expect(r).toMatchObject({ ok: false, code: 'approval.forbidden' });
    expect((await rt.store.getApproval(appr!.approvalId))?.status).toBe('pending');
    expect((await s.snapshot()).state).toBe('suspended');
    const ok = await rt.answerApproval(appr!.approvalId, { approved: true }, { userId: 'ann', tenantId: 'acme' }, 'api');
    expect(ok.ok).toBe(true);
    await s.idle();
    expect((await s.snapshot()).state).toBe('idle');
    await rt.close();
  });

  it('approvals:answer:forbidden-resolved — once resolved, another tenant\'s answer is still approval.forbidden and shows no record (its args, who answered); the right tenant gets already_resolved', async () => {
    const { rt, s } = await desk(true, 'acme');
    await (await s.send('book Corfu')).settled;
    const [appr] = await rt.store.listApprovals({ sessionId: s.id, status: 'pending' });
    expect((await rt.answerApproval(appr!.approvalId, { approved: true, reason: 'fine' }, { userId: 'ann', tenantId: 'acme' }, 'email')).ok).toBe(true);
    await s.idle();
    const other = await rt.answerApproval(appr!.approvalId, { approved: false }, { userId: 'mallory', tenantId: 'other' }, 'api');
    expect(other).toMatchObject({ ok: false, code: 'approval.forbidden' });
    expect(other).not.toHaveProperty('record');
    expect(other.ok === false && other.message).not.toContain('ann');
    const again = await rt.answerApproval(appr!.approvalId, { approved: false }, { userId: 'bob', tenantId: 'acme' }, 'api');
    expect(again).toMatchObject({ ok: false, code: 'approval.already_resolved', record: { status: 'approved', resolution: { by: { userId: 'ann' }, via: 'email' } } });
    await rt.close();
  });
});
