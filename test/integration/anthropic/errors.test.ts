import { afterEach, describe, expect, it } from 'vitest';
import type { SessionHandle, TurnOutcome } from '../../../src/api.js';
import type { LoopbackReply, LoopbackTurn } from '../../../src/models/loopback-server.js';
import type { MailboxEntry } from '../../../src/types.js';
import { API_KEY, bodies, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

const OK: LoopbackReply = {
  content: [{ type: 'tool_use', name: 'respond', id: 'toolu_ok', input: { parts: [textPart('response', 'All good.')], turnState: 'complete' } }],
};

const LONG_TEXT = 'A long answer that streams in many small chunks. '.repeat(3);

/** A respond() whose part text streams over many events (so a fault can land inside it). */
function longReply(id: string, text = LONG_TEXT): LoopbackReply {
  return { content: [{ type: 'tool_use', name: 'respond', id, input: { parts: [textPart('response', text)], turnState: 'complete' } }], split: 8 };
}

async function desk(script: LoopbackTurn[], doubleTexting: 'queue' | 'interrupt' = 'queue') {
  r = await rig({ script });
  r.rt.registries.actors.register({ name: 'desk', system: 'You are the help desk.' });
  const s = await r.rt.createSession({ actor: 'desk', doubleTexting });
  const rec = record(s);
  return { s, rec, rig: r };
}

type Rec = ReturnType<typeof record>;

/** The turn ended as `error` with one user-facing error part, the given code, and the user message kept. */
async function expectErrorTurn(s: SessionHandle, rec: Rec, out: TurnOutcome, code: string, stop: 'error' | 'max_tokens' | 'refusal' = 'error') {
  expect(out.finalizedBy).toBe('error');
  expect(out.stop).toBe(stop);
  expect(out.error?.code).toBe(code);
  const settled = rec.of('turn.settled');
  expect(settled).toHaveLength(1);
  expect(settled[0]).toMatchObject({ finalizedBy: 'error', stop, error: { code } });
  const errorParts = rec.of('part.received').filter((e) => e.part.metadata.partType === 'error');
  expect(errorParts).toHaveLength(1);
  const text = errorParts[0]!.part.text!;
  expect(text.length).toBeGreaterThan(10);
  // user-facing: no error codes, HTTP statuses or API error types in the text
  expect(text).not.toMatch(/model\.|_error|\b[45]\d\d\b/);
  expect(errorParts[0]!.part.metadata.code).toBe(code);
  expect(out.parts.filter((p) => p.metadata.partType === 'error').map((p) => p.text)).toEqual([text]);
  // a failed turn emits no envelope
  expect(rec.of('envelope.settled')).toHaveLength(0);
  expect(rec.of('turnState.changed').at(-1)).toMatchObject({ to: 'error' });
  const users = (await s.mailbox()).filter((m): m is MailboxEntry & { kind: 'user' } => m.kind === 'user');
  expect(users.map((u) => u.text)).toContain('Help me.');
}

describe('the Claude path: model failures at the turn level', () => {
  it('anthropic:errors:rate-limited-retry-after — a 429 with retry-after is waited out, then the turn completes', async () => {
    const { s, rec, rig } = await desk([{ fail: { status: 429, retryAfter: 1 } }, OK]);
    const t0 = Date.now();
    const out = await (await s.send('Help me.')).settled;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['All good.']);
    expect(rig.server.requests).toHaveLength(2);
    // the retry was invisible to subscribers: one usage, no error part, identical requests
    expect(rec.of('model.usage')).toHaveLength(1);
    expect(rec.of('part.received').map((e) => e.part.metadata.partType)).toEqual(['response']);
    expect(bodies(rig.server)[1]).toEqual(bodies(rig.server)[0]);
  });

  it('anthropic:errors:rate-limited-bounded — a persistent 429 is retried a bounded number of times, then the turn settles error model.rate_limited', async () => {
    const fail: LoopbackTurn = { fail: { status: 429, retryAfterMs: 5 } };
    const { s, rec, rig } = await desk([fail, fail, fail, fail, fail]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.rate_limited');
    // 1 attempt + 2 retries (the rig's policy); the rest of the script is untouched
    expect(rig.server.requests).toHaveLength(3);
    expect(rig.server.pending).toBe(2);
  });

  it('anthropic:errors:overloaded — persistent 529 settles the turn error model.overloaded with a user-facing part; the user message stays and the next message is answered with it in history', async () => {
    const overloaded: LoopbackTurn = { fail: { status: 529 } };
    const { s, rec, rig } = await desk([overloaded, overloaded, overloaded, OK]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.overloaded');
    expect(rig.server.requests).toHaveLength(3);
    expect(rec.of('part.received')[0]!.part.text).toMatch(/busy|try again/i);

    const next = await (await s.send('Are you there?')).settled;
    expect(next.finalizedBy).toBe('complete');
    const last = bodies(rig.server).at(-1);
    expect(JSON.stringify(last.messages)).toContain('Help me.');
    expect(JSON.stringify(last.messages)).toContain('Are you there?');
    expect(last.messages[0].role).toBe('user');
  });

  it('anthropic:errors:invalid-request — a 400 is not retried and settles error model.invalid_request', async () => {
    const { s, rec, rig } = await desk([{ fail: { status: 400, message: 'messages.0.content: Field required' } }, OK]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.invalid_request');
    expect(rig.server.requests).toHaveLength(1);
    // the developer-facing message names the API's complaint
    expect(out.error!.message).toContain('messages.0.content: Field required');
  });

  it('anthropic:errors:authentication — a 401 settles error model.authentication; the API key appears in no event, part, error, mailbox entry or stored record', async () => {
    // The server even echoes the key back in its error message.
    const { s, rec, rig } = await desk([{ fail: { status: 401, message: `invalid x-api-key: ${API_KEY}` } }]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.authentication');
    expect(rig.server.requests).toHaveLength(1);
    expect(out.error!.message).toContain('[redacted]');
    const stored = await rig.rt.store.readEvents(s.id, 0);
    const everything = JSON.stringify([rec.events, out, await s.mailbox(), stored, await s.executions(), await s.snapshot()]);
    expect(everything).toContain('authentication_error');
    expect(everything).not.toContain(API_KEY);
    expect(everything).not.toContain('7c1e5a9d3f');
  });

  it('anthropic:errors:stream-error — an error event mid-stream (after the respond() block began) settles error model.stream_error; nothing of the call is applied', async () => {
    const { s, rec, rig } = await desk([{ ...longReply('toolu_cut'), streamError: { afterEvents: 8, type: 'overloaded_error' } }, OK]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.stream_error');
    // events were already consumed: not retried
    expect(rig.server.requests).toHaveLength(1);
    expect(rec.of('part.delta').some((e) => e.callId === 'toolu_cut')).toBe(true);
    expect(rec.of('part.received').some((e) => e.callId === 'toolu_cut')).toBe(false);
    expect(rec.of('model.usage')).toHaveLength(0);
    expect((await s.mailbox()).some((m) => m.kind === 'assistant')).toBe(false);
  });

  it('anthropic:errors:stream-error-early — an error event before any content is retried and the turn completes', async () => {
    const { s, rig } = await desk([{ ...longReply('toolu_early'), streamError: { afterEvents: 1, type: 'overloaded_error' } }, OK]);
    const out = await (await s.send('Help me.')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(2);
  });

  it('anthropic:errors:dropped-connection — a connection cut mid-stream settles error model.connection; nothing of the call is applied', async () => {
    const { s, rec, rig } = await desk([{ ...longReply('toolu_drop'), dropAfterEvents: 9 }, OK]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.connection');
    expect(rig.server.requests).toHaveLength(1);
    expect(rec.of('part.received').some((e) => e.callId === 'toolu_drop')).toBe(false);
  });

  it('anthropic:errors:dropped-early — a connection cut before any content is retried and the turn completes', async () => {
    const { s, rig } = await desk([{ ...longReply('toolu_drop0'), dropAfterEvents: 1 }, OK]);
    const out = await (await s.send('Help me.')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(2);
  });

  it('anthropic:errors:max-tokens — stop_reason max_tokens with a truncated respond() settles with stop max_tokens', async () => {
    const truncated = '{"parts":[{"metadata":{"partType":"response"},"text":"The answer is that the fares';
    const { s, rec, rig } = await desk([{ content: [{ type: 'tool_use', name: 'respond', id: 'toolu_trunc', rawInput: truncated }], stopReason: 'max_tokens', split: 10 }]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.max_tokens', 'max_tokens');
    expect(rig.server.requests).toHaveLength(1);
    expect(rec.of('part.received').some((e) => e.callId === 'toolu_trunc')).toBe(false);
    expect(rec.of('model.usage').map((e) => e.stopReason)).toEqual(['max_tokens']);
  });

  it('anthropic:errors:refusal — stop_reason refusal settles with stop refusal', async () => {
    const { s, rec, rig } = await desk([{ content: [{ type: 'text', text: 'I cannot help with that.' }], stopReason: 'refusal' }]);
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.refusal', 'refusal');
    expect(rig.server.requests).toHaveLength(1);
    // the model's free text is never delivered
    expect(JSON.stringify(rec.events)).not.toContain('I cannot help with that.');
  });

  it('anthropic:errors:stalled-stream — a stream that stops delivering events hits the idle limit and settles error model.timeout', async () => {
    r = await rig({ script: [{ ...longReply('toolu_stall'), stallAfterEvents: 9 }], model: { idleTimeout: 150 } });
    r.rt.registries.actors.register({ name: 'desk', system: 'You are the help desk.' });
    const s = await r.rt.createSession({ actor: 'desk' });
    const rec = record(s);
    const t0 = Date.now();
    const out = await (await s.send('Help me.')).settled;
    await expectErrorTurn(s, rec, out, 'model.timeout');
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(r.server.requests).toHaveLength(1);
    expect(rec.of('part.received').some((e) => e.callId === 'toolu_stall')).toBe(false);
  });

  it('respond:json:invalid / anthropic:errors:invalid-respond-json — "input that is not valid JSON (a truncated stream) is rejected as a whole; the model is told to send the call again": respond() input that is not valid JSON goes back as an is_error tool_result; the model retries and the turn completes', async () => {
    const broken = '{"parts":[{"metadata":{"partType":"response"},"text":"Half an answer"}],"turnState":"complete"';
    const { s, rec, rig } = await desk([
      { content: [{ type: 'tool_use', name: 'respond', id: 'toolu_broken', rawInput: broken }], split: 12 },
      OK,
    ]);
    const out = await (await s.send('Help me.')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['All good.']);
    expect(rec.of('part.received').some((e) => e.callId === 'toolu_broken')).toBe(false);
    const second = bodies(rig.server)[1];
    expect(second.messages[1].content).toEqual([{ type: 'tool_use', id: 'toolu_broken', name: 'respond', input: {} }]);
    const result = second.messages[2].content[0];
    expect(result).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_broken', is_error: true });
    expect(result.content).toMatch(/not valid JSON/);
  });

  it('anthropic:errors:interrupt-during-backoff — a second message while a 429 retry-after is waited out cuts the wait; the next request carries both messages', async () => {
    const { s, rec, rig } = await desk([{ fail: { status: 429, retryAfterMs: 3_000 } }, OK], 'interrupt');
    const t0 = Date.now();
    const first = await s.send('Help me.');
    while (rig.server.requests.length === 0) await new Promise((res) => setTimeout(res, 2));
    const second = await s.send('Actually, make it Tuesday.');
    expect(second.turnId).toBe(first.turnId);
    const out = await second.settled;
    expect(Date.now() - t0).toBeLessThan(2_500);
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(2);
    expect(bodies(rig.server)[1].messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Help me.' }, { type: 'text', text: 'Actually, make it Tuesday.' }] },
    ]);
    expect(rec.of('part.received').some((e) => e.part.metadata.partType === 'error')).toBe(false);
  });

  it('anthropic:errors:interrupt — a second message under doubleTexting interrupt aborts the streaming call: no part.received from it, and the next request carries the new message', async () => {
    const slow: LoopbackReply = { ...longReply('toolu_slow'), split: 4, eventDelayMs: 15 };
    const answer: LoopbackReply = {
      content: [{ type: 'tool_use', name: 'respond', id: 'toolu_new', input: { parts: [textPart('response', 'Answering both.')], turnState: 'complete' } }],
    };
    const { s, rec, rig } = await desk([slow, answer], 'interrupt');
    const first = await s.send('Help me.');
    // wait until the slow respond() is visibly streaming
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (rec.of('part.delta').some((e) => e.callId === 'toolu_slow')) {
          clearInterval(check);
          resolve();
        }
      }, 2);
    });
    const second = await s.send('Actually, make it Tuesday.');
    expect(second.queued).toBe(false);
    expect(second.turnId).toBe(first.turnId);
    const out = await second.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['Answering both.']);

    // the aborted call left nothing applied
    expect(rec.of('part.received').map((e) => e.callId)).toEqual(['toolu_new']);
    expect(rec.of('model.usage')).toHaveLength(1);
    expect(rec.of('turn.settled')).toHaveLength(1);
    expect(rec.of('turn.started')).toHaveLength(1);
    const assistant = (await s.mailbox()).filter((m) => m.kind === 'assistant');
    expect(JSON.stringify(assistant)).not.toContain('toolu_slow');

    // the next request: both user messages, nothing of the aborted response
    expect(rig.server.requests).toHaveLength(2);
    const next = bodies(rig.server)[1];
    expect(JSON.stringify(next.messages)).not.toContain('toolu_slow');
    expect(next.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Help me.' }, { type: 'text', text: 'Actually, make it Tuesday.' }] },
    ]);
    // the stream was cut short: far fewer deltas than the full text would give
    const deltaText = rec.of('part.delta').filter((e) => e.callId === 'toolu_slow').map((e) => e.text).join('');
    expect(deltaText.length).toBeGreaterThan(0);
    expect(deltaText.length).toBeLessThan(LONG_TEXT.length);
    expect(LONG_TEXT.startsWith(deltaText)).toBe(true);
  });
  // An interrupted response keeps what it already applied: the joined message enters the mailbox
  // after it, so the model sees the ack the user saw, in order.
  it('anthropic:interrupt:applied-ack-in-history — a respond(ack) applied before the interrupt cut its response is in the next request\'s history', async () => {
    const slow: LoopbackReply = {
      content: [
        { type: 'tool_use', name: 'respond', id: 'toolu_ack1', input: { parts: [textPart('ack', 'Looking into it.')], turnState: 'awaiting' } },
        { type: 'tool_use', name: 'respond', id: 'toolu_slow2', input: { parts: [textPart('response', LONG_TEXT)], turnState: 'complete' } },
      ],
      split: 4,
      eventDelayMs: 15,
    };
    const { s, rec, rig } = await desk([slow, OK], 'interrupt');
    await s.send('Help me.');
    while (!rec.of('part.delta').some((e) => e.callId === 'toolu_slow2')) await new Promise((res) => setTimeout(res, 2));
    const out = await (await s.send('Actually, make it Tuesday.')).settled;
    expect(out.finalizedBy).toBe('complete');
    // the ack reached the user before the cut, and the cut call published nothing else
    expect(rec.of('part.received').map((e) => e.callId)).toEqual(['toolu_ack1', 'toolu_ok']);
    // what the user saw, the model must see too
    expect(JSON.stringify(bodies(rig.server)[1].messages)).toContain('Looking into it.');
  });
});
