/**
 * What buffered consumers (email, SMS, WhatsApp, webhook) get for the turns that are not a plain
 * `complete` envelope (docs/concepts/delivery.md): a turn that was suspended for an approval, a
 * clarification or an error (no envelope), and a consumer terminal state that emits no envelope.
 */
import { describe, expect, it } from 'vitest';
import { renderForChannel } from '../../src/envelope/channels.js';
import { createDelivery } from '../../src/envelope/delivery.js';
import { renderPartText } from '../../src/envelope/render.js';
import { TurnstateError } from '../../src/errors.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { CHANNEL_KINDS } from '../../src/registries/part-types.js';
import { createRuntime } from '../../src/runtime.js';
import type { Envelope, Part } from '../../src/types.js';
import { settleOnce } from './turn.fixture.js';

const text = (partType: string, t: string): Part => ({ text: t, metadata: { partType } });
const respond = (parts: Part[], turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts, turnState } });
const ARGS = { flight: 'EJ4521', total: 564 };

/** A turn suspended on book_flight, answered, then settled `complete`: the envelope and its log. */
async function answeredTurn(answer: { approved: boolean; reason?: string }) {
  const script: ModelScript = {
    rules: [
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'book_flight', input: ARGS }] } },
      { when: { on: 'tool_result', tool: 'book_flight' }, respond: { blocks: [respond([text('response', 'Booked EJ4521, reference ABC123.')], 'complete')] } },
      { when: { on: 'rejection' }, respond: { blocks: [respond([text('response', 'I did not book it.')], 'complete')] } },
    ],
  };
  const rt = createRuntime({ model: createScriptedModel(script) });
  rt.registries.tools.register({
    name: 'book_flight',
    description: 'Book a flight.',
    inputSchema: { type: 'object', properties: { flight: { type: 'string' }, total: { type: 'number' } } },
    scope: 'generalist',
    requiresApproval: true,
    handler: ({ flight }: { flight: string }) => ({ booked: flight, ref: 'ABC123' }),
  });
  rt.registries.actors.register({ name: 'a', system: 'x', tools: ['book_flight'] });
  const s = await rt.createSession({ actor: 'a' });
  const held = await (await s.send('book EJ4521 for 6')).settled;
  expect(held.finalizedBy).toBe('suspended');
  expect(held.envelope).toBeUndefined();
  const [pending] = (await s.snapshot()).pendingApprovals;
  expect((await s.answerApproval(pending!.approvalId, answer, { userId: 'u' }, 'chat')).ok).toBe(true);
  await s.idle();
  const log = await rt.store.readEvents(s.id, 0);
  const settled = log.find((e) => e.type === 'envelope.settled');
  if (settled?.type !== 'envelope.settled') throw new Error('the answered turn settled no envelope');
  const delivery = createDelivery(rt.registries.partTypes);
  await rt.close();
  return { envelope: settled.envelope, delivery, approvalId: pending!.approvalId };
}

describe('delivery: an answered approval on buffered channels', () => {
  const SPEC = '"Suspended turn — the envelope pauses at an approval-request part; no settlement until an approval-response injection arrives"';

  it(`delivery:channels:approval-approved — ${SPEC}: at settlement the approval is answered, so email and SMS say it was approved, not "Approval needed"; the envelope keeps the request with its resolution`, async () => {
    const { envelope, delivery, approvalId } = await answeredTurn({ approved: true });
    const request = envelope.parts.find((p) => p.metadata.partType === 'approval-request')!;
    expect(request.data).toEqual({ approvalId, tool: 'book_flight', args: ARGS, actor: 'a', turnId: envelope.meta.turnId, reason: null, resolution: { decision: 'approved' } });
    for (const ch of ['email', 'sms', 'whatsapp'] as const) {
      const m = renderForChannel(delivery, ch, envelope);
      expect(m.text, ch).toBe('Approved: book_flight {"flight":"EJ4521","total":564}\n\nBooked EJ4521, reference ABC123.');
      expect(m.text).not.toContain('Approval needed');
    }
    // A webhook (or a peer) gets the approval record as data: the request and what was decided.
    expect(renderForChannel(delivery, 'webhook', envelope).envelope!.parts).toContainEqual(request);
  });

  it(`delivery:channels:approval-denied — ${SPEC}: a denied approval reads "Denied: tool {args} (reason)" on email and SMS`, async () => {
    const { envelope, delivery } = await answeredTurn({ approved: false, reason: 'too expensive' });
    const request = envelope.parts.find((p) => p.metadata.partType === 'approval-request')!;
    expect(request.data!.resolution).toEqual({ decision: 'denied', reason: 'too expensive' });
    for (const ch of ['email', 'sms'] as const) {
      expect(renderForChannel(delivery, ch, envelope).text, ch).toBe('Denied: book_flight {"flight":"EJ4521","total":564} (too expensive)\n\nI did not book it.');
    }
  });

  it('delivery:render:approval-resolved — an approval-request with a resolution renders what was decided; without one it still asks', () => {
    const part = (d: Record<string, unknown>): Part => ({ data: { tool: 'book_flight', args: { flightId: 'TS205' }, ...d }, metadata: { partType: 'approval-request' } });
    expect(renderPartText(part({ resolution: { decision: 'approved' } }))).toBe('Approved: book_flight {"flightId":"TS205"}');
    expect(renderPartText(part({ resolution: { decision: 'denied' } }))).toBe('Denied: book_flight {"flightId":"TS205"}');
    expect(renderPartText(part({ resolution: { decision: 'denied', reason: 'over budget' } }))).toBe('Denied: book_flight {"flightId":"TS205"} (over budget)');
    expect(renderPartText(part({ resolution: { decision: 'maybe' } }))).toBe('Approval needed: book_flight {"flightId":"TS205"}');
  });
});


describe('delivery: a turn without an envelope on buffered channels', () => {
  const SPEC = `"A clarification — a clarify part, turnState: 'clarifying', no envelope build."`;

  it(`delivery:channels:no-envelope — ${SPEC}: renderForChannel takes the buffered view of a clarifying or error turn and renders its part as plain text; the webhook carries the part`, async () => {
    for (const [part, state] of [[text('clarify', 'Which date do you want to fly?'), 'clarifying'], [text('error', 'I could not reach the airline.'), 'error']] as const) {
      const { outcome, delivery } = await settleOnce([part], state);
      expect(outcome.finalizedBy).toBe(state);
      expect(outcome.envelope).toBeUndefined();
      const view = delivery.buffered({ envelope: outcome.envelope, parts: outcome.parts });
      for (const ch of ['email', 'sms', 'whatsapp'] as const) {
        expect(renderForChannel(delivery, ch, view), `${state} on ${ch}`).toEqual({ channel: ch, text: part.text, attachments: [], dropped: [] });
      }
      const hook = renderForChannel(delivery, 'webhook', view);
      expect(hook).toEqual({ channel: 'webhook', text: '', attachments: [], parts: [part], dropped: [] });
    }
  });

  it(`delivery:channels:invalid-input — ${SPEC}: a turn's missing envelope (or anything that is neither an envelope nor a buffered view) is refused with a TurnstateError that says to pass delivery.buffered(...), not a TypeError`, () => {
    const { delivery } = { delivery: createDelivery(createRuntime({ model: createScriptedModel({ rules: [] }) }).registries.partTypes) };
    for (const bad of [undefined, null, 'text', {}, { parts: 'x' }, { parts: [{ text: 'no metadata' }] }, { envelope: { parts: null }, parts: [] }]) {
      let thrown: unknown;
      try {
        renderForChannel(delivery, 'sms', bad as unknown as Envelope);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, JSON.stringify(bad)).toBeInstanceOf(TurnstateError);
      expect((thrown as TurnstateError).code).toBe('delivery.invalid');
      expect((thrown as TurnstateError).message).toContain('delivery.buffered(');
    }
  });

  it(`delivery:buffered:consumer-terminal — "Each part type declares per-transport delivery semantics via the PartTypeRegistry": a consumer terminal state with emitsEnvelope: false gives buffered transports its response (buffered: deliver), and email, SMS, WhatsApp and the webhook carry it`, async () => {
    const reply = text('response', 'A colleague will email you within the hour.');
    const { outcome, delivery } = await settleOnce([text('ack', 'One moment.'), reply], 'handed-to-human', (rt) =>
      rt.registries.turnStates.register({ id: 'handed-to-human', meta: { description: 'Handed to a human agent.', isTerminal: true, emitsEnvelope: false, holdsActor: false } }),
    );
    expect(outcome.finalizedBy).toBe('handed-to-human');
    expect(outcome.envelope).toBeUndefined();
    const view = delivery.buffered({ envelope: outcome.envelope, parts: outcome.parts });
    expect(view).toEqual({ parts: [reply] });
    for (const ch of CHANNEL_KINDS) {
      const m = renderForChannel(delivery, ch, view);
      if (ch === 'webhook') expect(m.parts).toEqual([reply]);
      else expect(m.text, ch).toBe(reply.text);
    }
  });

  it('delivery:buffered:no-envelope-rules — without an envelope, clarify and error stand for the turn (their parts outside envelopes only); otherwise every part by its buffered rule', () => {
    const delivery = createDelivery(createRuntime({ model: createScriptedModel({ rules: [] }) }).registries.partTypes);
    const data: Part = { data: { ref: 'R1' }, metadata: { partType: 'domain-data' } };
    expect(delivery.buffered({ parts: [text('response', 'Partial.'), text('error', 'Failed.')] }).parts).toEqual([text('error', 'Failed.')]);
    expect(delivery.buffered({ parts: [text('thinking', 'hm'), text('response', 'Handed over.'), data, text('progress', '50%')] }).parts).toEqual([text('response', 'Handed over.'), data]);
  });
});

describe('delivery: what is not a settled turn, or not its view (review findings)', () => {
  const SPEC = '"anything that is neither an envelope nor a buffered view (a turn\'s missing envelope, a part without metadata.partType, an unknown channel) is refused with TurnstateError delivery.invalid, saying to pass delivery.buffered(...)"';
  const refusal = (f: () => unknown): TurnstateError => {
    try {
      f();
    } catch (e) {
      return e as TurnstateError;
    }
    throw new Error('not refused');
  };

  it(`delivery:channels:invalid-input — ${SPEC}: a TurnOutcome passed as is (an error turn that streamed a partial response) is refused, not rendered with the parts its buffered view leaves out; so is a turn's events object`, async () => {
    const partial = text('response', 'Booking BA2043 now…');
    const failed = text('error', 'Sorry, something went wrong.');
    const { outcome, delivery } = await settleOnce([partial, failed], 'error');
    expect(outcome.envelope).toBeUndefined();
    for (const ch of ['sms', 'email', 'whatsapp'] as const) expect(renderForChannel(delivery, ch, delivery.buffered(outcome)).text, ch).toBe(failed.text);
    for (const bad of [outcome, { parts: outcome.parts, approvals: [] }]) {
      const err = refusal(() => renderForChannel(delivery, 'sms', bad as unknown as Envelope));
      expect(err).toBeInstanceOf(TurnstateError);
      expect(err.code).toBe('delivery.invalid');
      expect(err.message).toContain('delivery.buffered(');
    }
  });

  it('delivery:buffered:invalid-input — delivery.buffered() refuses what is not a settled turn (undefined, a part without metadata, an envelope without parts) with TurnstateError delivery.invalid saying what to pass, never a TypeError', () => {
    const delivery = createDelivery(createRuntime({ model: createScriptedModel({ rules: [] }) }).registries.partTypes);
    const env: Envelope = { role: 'agent', parts: [], meta: { sessionId: 's', turnId: 't', producedAt: '2026-01-01T00:00:00.000Z', finalizedBy: 'complete' } };
    const bad: [string, unknown, RegExp][] = [
      ['undefined (a missing outcome)', undefined, /got undefined/],
      ['null', null, /got null/],
      ['a string', 'hi', /got string/],
      ['no parts', {}, /parts is missing/],
      ['parts not an array', { parts: 'x' }, /parts is not an array/],
      ['a part without metadata', { parts: [{ text: 'hi' }] }, /parts\[0\] has no metadata\.partType/],
      ['{ envelope } without parts', { envelope: env }, /parts is missing/],
      ['an envelope without parts', { envelope: { role: 'agent' }, parts: [] }, /envelope\.parts is missing/],
      ['an envelope part without metadata', { envelope: { ...env, parts: [null] }, parts: [] }, /envelope\.parts\[0\] has no metadata\.partType/],
      ['approvals not an array', { parts: [], approvals: 'yes' }, /approvals is not an array/],
    ];
    for (const [what, input, why] of bad) {
      const err = refusal(() => delivery.buffered(input as never));
      expect(err, what).toBeInstanceOf(TurnstateError);
      expect(err.code, what).toBe('delivery.invalid');
      expect(err.message, what).toMatch(why);
      expect(err.message, what).toContain("pass a settled TurnOutcome as it is (send()'s settled), or { envelope, parts, approvals }");
    }
    // A held outcome is still what it was: an empty view marked held.
    expect(delivery.buffered({ parts: [], held: { resumeOn: 'approval-response' } })).toEqual({ parts: [], held: { resumeOn: 'approval-response' } });
  });
});

describe('delivery: a turn without an envelope gets the envelope\'s filters (review findings)', () => {
  const HANDED = (rt: ReturnType<typeof createRuntime>) =>
    rt.registries.turnStates.register({ id: 'handed-to-human', meta: { description: 'Handed to a human agent.', isTerminal: true, emitsEnvelope: false, holdsActor: false } });
  const reply = text('response', 'Done. Two flights found; a colleague takes it from here.');
  const context = text('llm-context', 'INTERNAL analysis for a peer LLM: cheapest is EJ4521.');
  const flights: Part = { data: { flights: [{ id: 'EJ4521' }] }, metadata: { partType: 'domain-data' } };
  const bound: Part = { data: { path: '/flights/0', title: 'easyJet fares', url: 'https://fares.example/EJ4521' }, metadata: { partType: 'citation' } };
  const unbound: Part = { data: { path: '/nowhere', title: 'x', url: 'https://x.example' }, metadata: { partType: 'citation' } };
  const turn = [reply, context, flights, bound, unbound];

  it('envelope:llm-context:unconsumed · envelope:citation:unbound-dropped — "an llm-context part the actor wrote itself is left out of the envelope (and so of every buffered consumer) when no originator of the turn consumes llm-context", and "one that resolves to nothing is left out": a consumer terminal state without an envelope gives buffered consumers what the envelope would', async () => {
    const { outcome, delivery } = await settleOnce(turn, 'handed-to-human', HANDED);
    expect(outcome.envelope).toBeUndefined();
    const view = delivery.buffered(outcome);
    expect(view.parts).toEqual([reply, flights, bound]);
    expect(renderForChannel(delivery, 'webhook', view).parts).toEqual([reply, flights, bound]);
    expect(renderForChannel(delivery, 'email', view).text).toBe(`${reply.text}\n\nSource: easyJet fares (https://fares.example/EJ4521)`);
    // The same turn settling `complete` keeps the same parts in its envelope (the domain-data merged).
    const complete = await settleOnce(turn);
    expect(complete.outcome.envelope!.parts.map((p) => p.metadata.partType)).toEqual(view.parts.map((p) => p.metadata.partType));
    // An originator that consumes llm-context gets it, as the envelope would carry it.
    expect(delivery.buffered({ ...outcome, consumes: ['llm-context'] }).parts).toEqual([reply, context, flights, bound]);
  });

  it('envelope:llm-context:consumed — "left out … when no originator of the turn consumes llm-context", so kept when one does: the outcome of a turn without an envelope says who consumes it, and delivery.buffered(outcome) keeps the actor\'s llm-context', async () => {
    const { outcome, delivery } = await settleOnce(turn, 'handed-to-human', HANDED, { consumes: ['llm-context'] });
    expect(outcome.envelope).toBeUndefined();
    expect(outcome.consumes).toEqual(['llm-context']);
    expect(delivery.buffered(outcome).parts).toEqual([reply, context, flights, bound]);
    // Nobody consumes it: the outcome says nothing, and the part stays out.
    const plain = await settleOnce(turn, 'handed-to-human', HANDED);
    expect(plain.outcome.consumes).toBeUndefined();
  });
});
