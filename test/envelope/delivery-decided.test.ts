/**
 * Buffered consumers get a turn once it has settled, with what was decided, never the open question
 * (docs/concepts/delivery.md): an answered approval in a turn that settles without an envelope, a
 * held outcome, the documented snippet, and the surface that asked the approval.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkA2uiMessages } from '../../src/envelope/a2ui.js';
import { renderForChannel, type ChannelMessage } from '../../src/envelope/channels.js';
import { createDelivery, type ApprovalAnswer, type Delivery } from '../../src/envelope/delivery.js';
import { TurnstateError } from '../../src/errors.js';
import type { SessionHandle } from '../../src/api.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { approvalKind } from '../../src/registries/surface-templates.js';
import type { ChannelKind } from '../../src/registries/types.js';
import { annotate } from '../../src/router/index.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { SessionStore } from '../../src/machines/ports.js';
import type { Envelope, Part, SessionEvent } from '../../src/types.js';

const text = (partType: string, t: string): Part => ({ text: t, metadata: { partType } });
const respond = (parts: Part[], turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts, turnState } });
const ARGS = { amount: 500 };
const CALL = 'refund {"amount":500}';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-delivery-decided-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The approval template of `tool`: the question with Approve and Deny buttons (as s11 and the travel desk build it). */
function registerApprovalSurface(rt: TurnstateRuntime, tool: string): void {
  rt.registries.surfaceTemplates.register({
    kind: approvalKind(tool),
    build(data, ctx) {
      const answer = (name: string) => ({ event: { name, context: { approvalId: { path: '/approvalId' } } } });
      return [
        { version: 'v0.9', createSurface: { surfaceId: ctx.surfaceId, catalogId: ctx.catalogId } },
        {
          version: 'v0.9',
          updateComponents: {
            surfaceId: ctx.surfaceId,
            components: [
              { id: 'root', component: 'Column', children: ['q', 'yes', 'no'] },
              { id: 'q', component: 'Text', text: 'Go ahead?' },
              { id: 'yes', component: 'Button', child: 'yl', action: answer('approve') },
              { id: 'yl', component: 'Text', text: 'Approve' },
              { id: 'no', component: 'Button', child: 'nl', action: answer('deny') },
              { id: 'nl', component: 'Text', text: 'Deny' },
            ],
          },
        },
        { version: 'v0.9', updateDataModel: { surfaceId: ctx.surfaceId, path: '/', value: data } },
      ];
    },
  });
}

const HANDED_TO_HUMAN = { id: 'handed-to-human', meta: { description: 'Handed to a human agent.', isTerminal: true, emitsEnvelope: false, holdsActor: false } };

/** A refund desk whose approval-gated turn ends in `handed-to-human` (emitsEnvelope: false), as s7 runs it. */
function refundDesk(store?: SessionStore, extra: ModelScript['rules'] = []): TurnstateRuntime {
  const model = createScriptedModel({
    rules: [
      ...extra,
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'refund', input: ARGS }] } },
      { when: { on: 'tool_result', tool: 'refund' }, respond: { blocks: [respond([text('response', 'Refund issued; a colleague will follow up.')], 'handed-to-human')] } },
      { when: { on: 'rejection' }, respond: { blocks: [respond([text('response', 'No refund; a colleague will follow up.')], 'handed-to-human')] } },
    ],
  });
  const rt = createRuntime({ model, ...(store ? { store } : {}) });
  rt.registries.turnStates.register(HANDED_TO_HUMAN);
  rt.registries.tools.register({ name: 'refund', description: 'Refund.', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: () => ({ ok: true }) });
  rt.registries.actors.register({ name: 'a', system: 'x', tools: ['refund'] });
  registerApprovalSurface(rt, 'refund');
  return rt;
}

/**
 * docs/concepts/delivery.md's snippet, as written there: each turn's parts, approval answers and
 * envelope from session.events(), delivered at its turn.settled on `channels`.
 */
function deliverAtSettlement(delivery: Delivery, session: SessionHandle, channels: readonly ChannelKind[], afterSeq = 0) {
  const sent: (ChannelMessage & { turnId: string })[] = [];
  const turns = new Map<string, { parts: Part[]; approvals: ApprovalAnswer[]; envelope?: Envelope }>();
  const sub = session.events(afterSeq).subscribe((e: SessionEvent) => {
    let turn = turns.get(e.turnId);
    if (turn === undefined) turns.set(e.turnId, (turn = { parts: [], approvals: [] }));
    if (e.type === 'part.received') turn.parts.push(e.part);
    else if (e.type === 'approval.resolved') turn.approvals.push(e);
    else if (e.type === 'envelope.settled') turn.envelope = e.envelope;
    else if (e.type === 'turn.settled') {
      turns.delete(e.turnId);
      const view = delivery.buffered(turn);
      for (const ch of channels) sent.push({ ...renderForChannel(delivery, ch, view), turnId: e.turnId });
    }
  });
  return { sent, sub };
}

function refusal(f: () => unknown): TurnstateError {
  try {
    f();
  } catch (e) {
    if (e instanceof TurnstateError) return e;
    throw e;
  }
  throw new Error('not refused');
}

describe('delivery: an answered approval in a turn that settles without an envelope', () => {
  const RULE = '"never `Approval needed`" (delivery:channels:approval-approved / approval-denied)';

  it(`delivery:channels:approval-no-envelope — ${RULE}: from the turn's events at turn.settled, email and SMS say what was decided, the webhook's request carries its resolution and no surface asks again`, async () => {
    for (const [answer, said] of [
      [{ approved: true }, `Approved: ${CALL}\n\nRefund issued; a colleague will follow up.`],
      [{ approved: false, reason: 'policy' }, `Denied: ${CALL} (policy)\n\nNo refund; a colleague will follow up.`],
    ] as const) {
      const rt = refundDesk();
      const delivery = createDelivery(rt.registries.partTypes);
      const s = await rt.createSession({ actor: 'a' });
      const { sent, sub } = deliverAtSettlement(delivery, s, ['email', 'sms', 'whatsapp', 'webhook']);
      const held = await (await s.send('refund me')).settled;
      expect(held.held).toEqual({ resumeOn: 'approval-response' });
      expect(sent).toEqual([]);
      const [pending] = (await s.snapshot()).pendingApprovals;
      expect((await s.answerApproval(pending!.approvalId, answer, { userId: 'u' }, 'chat')).ok).toBe(true);
      await s.idle();
      expect(sent.map((m) => m.channel)).toEqual(['email', 'sms', 'whatsapp', 'webhook']);
      for (const m of sent.slice(0, 3)) {
        expect(m.text, m.channel).toBe(said);
        expect(m.text).not.toContain('Approval needed');
      }
      const hook = sent[3]!;
      expect(hook.parts!.map((p) => p.metadata.partType)).toEqual(['approval-request', 'response']);
      const resolution = answer.approved ? { decision: 'approved' } : { decision: 'denied', reason: 'policy' };
      expect(hook.parts![0]!.data).toEqual({ approvalId: pending!.approvalId, tool: 'refund', args: ARGS, actor: 'a', turnId: held.turnId, reason: null, resolution });
      // The streamed request was the question, and its surface asked it: neither is changed.
      const log = await rt.store.readEvents(s.id, 0);
      const streamed = log.flatMap((e) => (e.type === 'part.received' ? [e.part] : []));
      expect(streamed.find((p) => p.metadata.partType === 'approval-request')!.data!.resolution).toBeUndefined();
      expect(streamed.some((p) => p.metadata.partType === 'a2ui-surface' && p.metadata.kind === 'approval:refund')).toBe(true);
      sub.unsubscribe();
      await rt.close();
    }
  });

  it(`delivery:channels:approval-no-envelope — ${RULE}: a view built from the turn's parts without its approval answers is refused (delivery.held), never rendered as the question`, async () => {
    const rt = refundDesk();
    const delivery = createDelivery(rt.registries.partTypes);
    const s = await rt.createSession({ actor: 'a' });
    const held = await (await s.send('refund me')).settled;
    const [pending] = (await s.snapshot()).pendingApprovals;
    await s.answerApproval(pending!.approvalId, { approved: true }, { userId: 'u' }, 'chat');
    await s.idle();
    const parts = (await rt.store.readEvents(s.id, 0)).flatMap((e) => (e.type === 'part.received' && e.turnId === held.turnId ? [e.part] : []));
    const err = refusal(() => delivery.buffered({ envelope: undefined, parts }));
    expect(err.code).toBe('delivery.held');
    expect(err.message).toContain(pending!.approvalId);
    expect(err.message).toContain('approval.resolved');
    await rt.close();
  });

  it(`delivery:channels:approval-no-envelope — ${RULE}: answered after a restart (SQLite), the events replayed from the store give the decision`, async () => {
    const path = join(dir, 'restart.db');
    let rt = refundDesk(createSqliteStore({ path }));
    let s = await rt.createSession({ actor: 'a', id: 'sess_restart' });
    const held = await (await s.send('refund me')).settled;
    expect(held.finalizedBy).toBe('suspended');
    const [pending] = (await s.snapshot()).pendingApprovals;
    await rt.close();

    rt = refundDesk(createSqliteStore({ path }));
    await rt.recover();
    s = (await rt.session('sess_restart'))!;
    const delivery = createDelivery(rt.registries.partTypes);
    const { sent, sub } = deliverAtSettlement(delivery, s, ['sms', 'webhook']);
    expect((await rt.answerApproval(pending!.approvalId, { approved: false, reason: 'over limit' }, { userId: 'u' }, 'sms')).ok).toBe(true);
    await s.idle();
    expect(sent.map((m) => [m.channel, m.turnId])).toEqual([
      ['sms', held.turnId],
      ['webhook', held.turnId],
    ]);
    expect(sent[0]!.text).toBe(`Denied: ${CALL} (over limit)\n\nNo refund; a colleague will follow up.`);
    expect(sent[1]!.parts!.find((p) => p.metadata.partType === 'approval-request')!.data!.resolution).toEqual({ decision: 'denied', reason: 'over limit' });
    sub.unsubscribe();
    await rt.close();
  });

  it(`delivery:channels:approval-no-envelope — ${RULE}: the resumed turn's outcome (settlement) carries the resolution on its request, so delivery.buffered(outcome) says what was decided`, async () => {
    // An approval and a client tool in one response: the client tool's result resumes the turn,
    // and inject() hands back the resumed turn's outcome.
    const rt = refundDesk(undefined, [
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'refund', input: ARGS }, { type: 'tool_use', name: 'confirm_address', input: {} }] } },
      { when: { call: 1 }, respond: { blocks: [respond([text('response', 'Refund issued; a colleague will follow up.')], 'handed-to-human')] } },
    ]);
    const delivery = createDelivery(rt.registries.partTypes);
    const s = await rt.createSession({ actor: 'a' });
    const held = await (await s.send('refund me', { clientTools: [{ name: 'confirm_address', description: 'Confirm the address.', parameters: { type: 'object' } }] })).settled;
    expect(held.held).toBeDefined();
    const snap = await s.snapshot();
    await s.answerApproval(snap.pendingApprovals[0]!.approvalId, { approved: true }, { userId: 'u' }, 'chat');
    const ref = await s.inject({ kind: 'client-tool-result', callId: snap.pendingClientCalls[0]!.callId, content: 'confirmed' });
    const outcome = await ref!.settled;
    expect(outcome.finalizedBy).toBe('handed-to-human');
    expect(outcome.envelope).toBeUndefined();
    expect(outcome.parts.find((p) => p.metadata.partType === 'approval-request')!.data!.resolution).toEqual({ decision: 'approved' });
    const view = delivery.buffered(outcome);
    expect(renderForChannel(delivery, 'sms', view).text).toBe(`Approved: ${CALL}\n\nRefund issued; a colleague will follow up.`);
    expect(renderForChannel(delivery, 'webhook', view).parts!.map((p) => p.metadata.partType)).toEqual(['approval-request', 'response']);
    await rt.close();
  });
});

/** s2: an approval turn that settles `complete`, with the answer given later. */
function bookingDesk(): TurnstateRuntime {
  const model = createScriptedModel({
    rules: [
      { when: { on: 'user' }, respond: { blocks: [respond([text('ack', 'Booking…'), text('response', 'I will book EJ4521 once you approve.')], 'awaiting'), { type: 'tool_use', name: 'book', input: { flight: 'EJ4521' } }] } },
      { when: { on: 'tool_result', tool: 'book' }, respond: { blocks: [respond([text('response', 'Booked, ref ABC123.')], 'complete')] } },
      { when: { on: 'rejection' }, respond: { blocks: [respond([text('response', 'Not booked.')], 'complete')] } },
    ],
  });
  const rt = createRuntime({ model });
  rt.registries.tools.register({
    name: 'book',
    description: 'Book.',
    inputSchema: { type: 'object' },
    scope: 'generalist',
    requiresApproval: true,
    handler: () => annotate({ ref: 'ABC123', flight: 'EJ4521' }, { kind: 'booking' }),
  });
  rt.registries.actors.register({ name: 'a', system: 'x', tools: ['book'] });
  return rt;
}

describe('delivery: a held outcome is not deliverable', () => {
  const SPEC = '"Suspended turn — the envelope pauses at an approval-request part; no settlement until an approval-response injection arrives"';

  it(`delivery:buffered:held — ${SPEC}: send().settled of a suspended turn gives an empty view marked held, which renderForChannel refuses; its parts alone are refused too`, async () => {
    const rt = bookingDesk();
    const delivery = createDelivery(rt.registries.partTypes);
    const s = await rt.createSession({ actor: 'a' });
    const held = await (await s.send('book it')).settled;
    expect(held.held).toEqual({ resumeOn: 'approval-response' });
    const view = delivery.buffered(held);
    expect(view).toEqual({ parts: [], held: { resumeOn: 'approval-response' } });
    const err = refusal(() => renderForChannel(delivery, 'sms', view));
    expect(err.code).toBe('delivery.held');
    expect(err.message).toContain('turn.settled');
    // The snippet as the docs had it (envelope and parts, no held): the open question is refused, not sent.
    expect(refusal(() => delivery.buffered({ envelope: held.envelope, parts: held.parts })).code).toBe('delivery.held');
    await rt.close();
  });

  it(`delivery:buffered:snippet — ${SPEC}: the documented snippet sends nothing while the turn is held and one message per channel once it settles, saying what was decided`, async () => {
    for (const [answer, said] of [
      [{ approved: true }, 'I will book EJ4521 once you approve.\n\nApproved: book {"flight":"EJ4521"}\n\nBooked, ref ABC123.'],
      [{ approved: false, reason: 'too pricey' }, 'I will book EJ4521 once you approve.\n\nDenied: book {"flight":"EJ4521"} (too pricey)\n\nNot booked.'],
    ] as const) {
      const rt = bookingDesk();
      const delivery = createDelivery(rt.registries.partTypes);
      const s = await rt.createSession({ actor: 'a' });
      const { sent, sub } = deliverAtSettlement(delivery, s, ['sms', 'webhook']);
      const held = await (await s.send('book it')).settled;
      expect(held.held).toBeDefined();
      expect(sent).toEqual([]);
      const [pending] = (await s.snapshot()).pendingApprovals;
      await s.answerApproval(pending!.approvalId, answer, { userId: 'u' }, 'email');
      await s.idle();
      expect(sent.map((m) => [m.channel, m.turnId])).toEqual([
        ['sms', held.turnId],
        ['webhook', held.turnId],
      ]);
      expect(sent[0]!.text).toBe(said);
      expect(sent[1]!.envelope!.parts.find((p) => p.metadata.partType === 'approval-request')!.data!.resolution).toMatchObject({ decision: answer.approved ? 'approved' : 'denied' });
      sub.unsubscribe();
      await rt.close();
    }
  });
});

describe('envelope: the surface that asked a decided approval', () => {
  it('envelope:approval:surface-decided — "buffered consumers get what was decided, not the question": the settled envelope leaves out the approval template\'s surface (live Approve and Deny buttons), keeps the result\'s surface, and every surface left is valid A2UI', async () => {
    for (const approved of [true, false]) {
      const rt = bookingDesk();
      registerApprovalSurface(rt, 'book');
      rt.registries.surfaceTemplates.register({
        kind: 'booking',
        build: (data, ctx) => [
          { version: 'v0.9', createSurface: { surfaceId: ctx.surfaceId, catalogId: ctx.catalogId } },
          { version: 'v0.9', updateComponents: { surfaceId: ctx.surfaceId, components: [{ id: 'root', component: 'Text', text: { path: '/ref' } }] } },
          { version: 'v0.9', updateDataModel: { surfaceId: ctx.surfaceId, path: '/', value: data } },
        ],
      });
      const s = await rt.createSession({ actor: 'a' });
      const held = await (await s.send('book it')).settled;
      expect(held.parts.map((p) => p.metadata.partType)).toContain('a2ui-surface');
      const [pending] = (await s.snapshot()).pendingApprovals;
      await s.answerApproval(pending!.approvalId, approved ? { approved } : { approved, reason: 'no' }, { userId: 'u' }, 'email');
      await s.idle();
      const log = await rt.store.readEvents(s.id, 0);
      const settled = log.find((e) => e.type === 'envelope.settled');
      if (settled?.type !== 'envelope.settled') throw new Error('no envelope');
      const surfaces = settled.envelope.parts.filter((p) => p.metadata.partType === 'a2ui-surface');
      expect(surfaces.map((p) => p.metadata.kind)).toEqual(approved ? ['booking'] : []);
      for (const p of surfaces) expect(checkA2uiMessages((p.data as { messages: unknown }).messages)).toEqual([]);
      expect(settled.envelope.parts.find((p) => p.metadata.partType === 'approval-request')!.data!.resolution).toMatchObject({ decision: approved ? 'approved' : 'denied' });
      // Streaming consumers saw the question's surface when it was asked.
      expect(log.some((e) => e.type === 'part.received' && e.part.metadata.kind === 'approval:book')).toBe(true);
      await rt.close();
    }
  });
});
