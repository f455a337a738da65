/**
 * Double-texting (DESIGN "Machines"): a user message that arrives while a turn runs follows the
 * session's policy: queue (default), interrupt, or reject. Nothing accepted is ever lost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TurnstateError } from '../../src/errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../../src/machines/ports.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { SessionEvent } from '../../src/types.js';
import { Recorder, addTool, addGatedTool, answer, checkHistory, checkStream, harness, part, respond, settledOf, toolUse } from './helpers.js';

const longText = 'A long answer that streams in many small chunks so that a message can arrive mid-call. '.repeat(4);

describe('double-texting', () => {
  it('double-texting:queue — the second message runs as its own turn after the first settles; nothing is lost', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', text: 'first' }, respond: answer(respond([part('ack', 'on it')], 'awaiting'), toolUse('slow', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'first done')], 'complete')) },
        { when: { on: 'user', text: 'second' }, respond: answer(respond([part('response', 'second done')], 'complete')) },
      ],
    });
    const release = addGatedTool(rt.registries, 'slow');
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const r1 = await s.send('first message');
    await rec.waitFor((e) => e.type === 'tool.called');
    const r2 = await s.send('second message');
    expect(r1.queued).toBe(false);
    expect(r2.queued).toBe(true);
    expect(r2.turnId).not.toBe(r1.turnId);
    expect((await s.snapshot()).queued).toBe(1);
    release();
    const [o1, o2] = await Promise.all([r1.settled, r2.settled]);
    expect(o1.parts.map((p) => p.text)).toEqual(['on it', 'first done']);
    expect(o2.parts.map((p) => p.text)).toEqual(['second done']);
    expect(o2.turnId).toBe(r2.turnId);
    // The second turn starts only after the first settled.
    const settled1 = settledOf(rec.events, r1.turnId)[0]!;
    const started2 = rec.events.find((e) => e.type === 'turn.started' && e.turnId === r2.turnId)!;
    expect(started2.seq).toBeGreaterThan(settled1.seq);
    expect(started2).toMatchObject({ input: { text: 'second message' } });
    // The first turn's model calls never saw the second message; the second turn sees both.
    const firstTurnReqs = model.requests.filter((r) => r.turnId === r1.turnId);
    for (const r of firstTurnReqs) expect(JSON.stringify(r.messages)).not.toContain('second message');
    const secondReq = model.requests.find((r) => r.turnId === r2.turnId)!;
    expect(JSON.stringify(secondReq.messages)).toContain('first message');
    expect(JSON.stringify(secondReq.messages)).toContain('second message');
    const users = (await s.mailbox()).filter((m) => m.kind === 'user').map((m) => (m as { text: string }).text);
    expect(users).toEqual(['first message', 'second message']);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId, r2.turnId] });
    await s.idle();
  });

  it('double-texting:queue-many — several queued messages each get their own turn, in order', async () => {
    const { rt } = harness({ rules: [{ respond: answer(respond([part('response', 're: $user')], 'complete')) }] });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const refs = await Promise.all(['m1', 'm2', 'm3', 'm4'].map((m) => s.send(m)));
    const outs = await Promise.all(refs.map((r) => r.settled));
    expect(outs.map((o) => o.parts[0]!.text)).toEqual(['re: m1', 're: m2', 're: m3', 're: m4']);
    expect(rec.of('turn.started').map((e) => e.input.text)).toEqual(['m1', 'm2', 'm3', 'm4']);
    checkStream(rec.events, rt.registries, { settledTurns: refs.map((r) => r.turnId) });
  });

  it('double-texting:interrupt — the running model call is aborted, the message joins the mailbox and the next model request', async () => {
    const scripted = createScriptedModel({
      rules: [
        { when: { on: 'user', text: 'stop' }, respond: answer(respond([part('response', 'Stopped, as you asked.')], 'complete')) },
        { when: { on: 'user' }, respond: { chunkSize: 8, blocks: [respond([part('response', longText)], 'complete')] } },
      ],
    });
    const rt = createRuntime({ model: scripted });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    let second: Promise<unknown> | undefined;
    const rec = new Recorder(s, (e) => {
      // The first part.delta proves the call is streaming: the message arrives now.
      if (e.type === 'part.delta' && !second) second = s.send('stop, actually');
    });
    const r1 = await s.send('tell me a long story');
    const out = await r1.settled;
    const r2 = (await second) as { turnId: string; queued: boolean; settled: Promise<unknown> };
    expect(r2.queued).toBe(false);
    expect(r2.turnId).toBe(r1.turnId);
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['Stopped, as you asked.']);
    // The aborted call was never applied: its text was streamed partly but never received as a part.
    expect(rec.of('part.received').map((e) => e.part.text)).toEqual(['Stopped, as you asked.']);
    const deltas = rec.of('part.delta').map((d) => d.text).join('');
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.length).toBeLessThan(longText.length);
    // ... and is taken back: one part.retracted (interrupted) for the cut call, after its deltas.
    const cutCall = rec.of('part.delta')[0]!.callId;
    expect(rec.of('part.retracted').map((r) => [r.callId, r.reason])).toEqual([[cutCall, 'interrupted']]);
    expect(rec.of('part.retracted')[0]!.seq).toBeGreaterThan(rec.of('part.delta').at(-1)!.seq);
    // One turn, one settlement; the second request carries the new message.
    expect(rec.of('turn.started')).toHaveLength(1);
    expect(scripted.requests).toHaveLength(2);
    expect(JSON.stringify(scripted.requests[1]!.messages)).toContain('stop, actually');
    const users = (await s.mailbox()).filter((m) => m.kind === 'user').map((m) => [(m as { text: string }).text, m.turnId]);
    expect(users).toEqual([
      ['tell me a long story', r1.turnId],
      ['stop, actually', r1.turnId],
    ]);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
    expect((await s.snapshot()).state).toBe('idle');
  });

  it('double-texting:interrupt:slow-port — with a custom slow ModelPort the abort signal reaches the call and the turn continues', async () => {
    const requests: ModelRequest[] = [];
    let aborted = 0;
    const model: ModelPort = {
      name: 'slow',
      async *stream(req, signal): AsyncIterable<ModelEvent> {
        requests.push(req);
        const last = JSON.stringify(req.messages.at(-1));
        if (!last.includes('change of plan')) {
          yield { type: 'block.start', index: 0, block: { type: 'tool_use', id: 'toolu_slow', name: 'respond' } };
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, 5000);
            signal.addEventListener('abort', () => {
              clearTimeout(t);
              aborted++;
              resolve();
            });
          });
          const { ModelError } = await import('../../src/errors.js');
          throw new ModelError('model.aborted', 'aborted');
        }
        const block = { type: 'tool_use' as const, id: 'toolu_ok', name: 'respond', input: { parts: [part('response', 'New plan noted.')], turnState: 'complete' } };
        yield { type: 'block.start', index: 0, block: { type: 'tool_use', id: block.id, name: block.name } };
        yield { type: 'block.stop', index: 0, block };
        yield { type: 'message.stop', stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1 }, content: [block] };
      },
    };
    const rt = createRuntime({ model });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const rec = new Recorder(s);
    const r1 = await s.send('plan a trip');
    while (requests.length === 0) await new Promise((r) => setTimeout(r, 1));
    const t0 = Date.now();
    const r2 = await s.send('change of plan');
    const out = await r1.settled;
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(aborted).toBe(1);
    expect(r2.turnId).toBe(r1.turnId);
    expect(out.parts.map((p) => p.text)).toEqual(['New plan noted.']);
    expect(requests).toHaveLength(2);
    expect(JSON.stringify(requests[1]!.messages)).toContain('change of plan');
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
  });

  it('double-texting:interrupt:during-tool — a message during a running tool joins the next model request of the same turn', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', call: 0 }, respond: answer(toolUse('slow', { q: 'x' })) },
        { respond: answer(respond([part('response', 'done: $user')], 'complete')) },
      ],
    });
    const release = addGatedTool(rt.registries, 'slow');
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const rec = new Recorder(s);
    const r1 = await s.send('do it');
    await rec.waitFor((e) => e.type === 'tool.called');
    const r2 = await s.send('also this');
    release();
    const out = await r1.settled;
    expect(r2.turnId).toBe(r1.turnId);
    expect(rec.of('turn.started')).toHaveLength(1);
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain('also this');
    expect(out.finalizedBy).toBe('complete');
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
  });

  it('double-texting:interrupt:never-unanswered — a message that arrives after the final model call has finished still gets an answer', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', text: 'late' }, respond: answer(respond([part('response', 'answer to the late message')], 'complete')) },
        { when: { on: 'user' }, respond: answer(respond([part('response', 'answer to the first message')], 'complete')) },
      ],
    });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    let late: Promise<{ turnId: string; settled: Promise<unknown> }> | undefined;
    const rec = new Recorder(s, (e) => {
      // model.usage is published when the final response has been read, before it is applied.
      if (e.type === 'model.usage' && !late) late = s.send('late message');
    });
    const r1 = await s.send('first message');
    await r1.settled;
    const r2 = await late!;
    await s.idle();
    const answered = rec.of('part.received').map((e) => e.part.text);
    expect(answered).toContain('answer to the late message');
    // Some model request saw the late message.
    expect(model.requests.some((r) => JSON.stringify(r.messages).includes('late message'))).toBe(true);
    void r2;
    checkStream(rec.events, rt.registries);
  });

  it('double-texting:interrupt:while-suspended — a message to a turn waiting for approval is queued, not joined', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', text: 'book' }, respond: answer(toolUse('gated', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'booked')], 'complete')) },
        { when: { on: 'user', text: 'status' }, respond: answer(respond([part('response', 'all good')], 'complete')) },
      ],
    });
    addTool(rt.registries, 'gated', () => ({ ok: 1 }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['gated'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const rec = new Recorder(s);
    const r1 = await s.send('book it');
    expect((await r1.settled).finalizedBy).toBe('suspended');
    const r2 = await s.send('status?');
    expect(r2.queued).toBe(true);
    expect(r2.turnId).not.toBe(r1.turnId);
    expect((await s.snapshot()).state).toBe('suspended');
    await s.answerApproval(rec.of('approval.requested')[0]!.approvalId, { approved: true }, {}, 'api');
    const o2 = await r2.settled;
    expect(o2.parts.map((p) => p.text)).toEqual(['all good']);
    // The first turn's model calls never saw the queued message.
    for (const r of model.requests.filter((q) => q.turnId === r1.turnId)) expect(JSON.stringify(r.messages)).not.toContain('status?');
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId, r2.turnId] });
  });

  it('double-texting:reject — a message during a turn is refused with session.busy; the running turn completes and nothing is lost', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user', call: 0 }, respond: answer(respond([part('ack', 'working')], 'awaiting'), toolUse('slow', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'all done')], 'complete')) },
      ],
    });
    const release = addGatedTool(rt.registries, 'slow');
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'reject' });
    const rec = new Recorder(s);
    const r1 = await s.send('do the thing');
    await rec.waitFor((e) => e.type === 'tool.called');
    let err: unknown;
    try {
      await s.send('REJECTED-TEXT');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TurnstateError);
    expect((err as TurnstateError).code).toBe('session.busy');
    expect((err as Error).message).toContain(r1.turnId);
    expect((err as Error).message).toMatch(/reject/);
    expect((err as Error).message).toMatch(/not accepted/);
    release();
    const out = await r1.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.text)).toEqual(['working', 'all done']);
    const mailbox = await s.mailbox();
    expect(JSON.stringify(mailbox)).not.toContain('REJECTED-TEXT');
    expect(rec.events.some((e: SessionEvent) => JSON.stringify(e).includes('REJECTED-TEXT'))).toBe(false);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
    // After settlement the session accepts messages again.
    const r3 = await s.send('now it works');
    expect(r3.queued).toBe(false);
    await r3.settled;
  });

  it('double-texting:reject:suspended — a message while a turn waits for approval is refused too, and the approval still resumes the turn', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('gated', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'ok')], 'complete')) },
      ],
    });
    addTool(rt.registries, 'gated', () => ({ done: true }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['gated'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'reject' });
    const rec = new Recorder(s);
    const r1 = await s.send('go');
    expect((await r1.settled).finalizedBy).toBe('suspended');
    await expect(s.send('hello?')).rejects.toMatchObject({ code: 'session.busy' });
    const approvalId = rec.of('approval.requested')[0]!.approvalId;
    expect((await s.answerApproval(approvalId, { approved: true }, {}, 'api')).ok).toBe(true);
    await s.idle();
    expect(settledOf(rec.events, r1.turnId)).toMatchObject([{ finalizedBy: 'complete' }]);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
  });

  it('double-texting:invalid-policy — an unknown policy is refused at session creation', async () => {
    const { rt } = harness({ rules: [] });
    rt.registries.actors.register({ name: 'a' });
    await expect(rt.createSession({ actor: 'a', doubleTexting: 'drop' as any })).rejects.toMatchObject({ code: 'session.invalid_policy' });
  });

  it('double-texting:property — under every policy, with random timing, an accepted message is never lost or left unanswered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('queue' as const, 'interrupt' as const, 'reject' as const),
        fc.array(fc.record({ delayMs: fc.integer({ min: 0, max: 6 }), toolMs: fc.integer({ min: 0, max: 4 }), chunk: fc.integer({ min: 2, max: 40 }) }), { minLength: 1, maxLength: 5 }),
        async (policy, sends) => {
          const { rt, model } = harness({
            rules: [
              { when: { on: 'user', call: 0 }, respond: answer(respond([part('ack', 'on it')], 'awaiting'), toolUse('work', { q: '$user' })) },
              { respond: { chunkSize: 12, blocks: [respond([part('response', 'finished the work for: $user')], 'complete')] } },
            ],
          });
          addTool(rt.registries, 'work', async () => {
            await new Promise((r) => setTimeout(r, sends[0]!.toolMs));
            return { ok: true };
          });
          rt.registries.actors.register({ name: 'a', tools: ['work'] });
          const s = await rt.createSession({ actor: 'a', doubleTexting: policy });
          const rec = new Recorder(s);
          const accepted: string[] = [];
          const rejected: string[] = [];
          const refs: Promise<unknown>[] = [];
          for (const [i, x] of sends.entries()) {
            await new Promise((r) => setTimeout(r, x.delayMs));
            const text = `message-${i}`;
            try {
              const ref = await s.send(text);
              accepted.push(text);
              refs.push(ref.settled);
            } catch (e) {
              expect((e as { code?: string }).code).toBe('session.busy');
              rejected.push(text);
            }
          }
          await Promise.all(refs);
          await s.idle();
          const users = (await s.mailbox()).filter((m) => m.kind === 'user').map((m) => (m as { text: string }).text);
          // Every accepted message is recorded exactly once; rejected ones nowhere.
          expect(users.sort()).toEqual([...accepted].sort());
          for (const r of rejected) expect(JSON.stringify(rec.events)).not.toContain(`"${r}"`);
          // Nothing unanswered: every accepted message was in the history of some model request
          // that ended its turn, i.e. the last request of the session saw them all.
          for (const r of model.requests) checkHistory(r);
          const last = model.requests.at(-1)!;
          for (const a of accepted) expect(JSON.stringify(last.messages)).toContain(a);
          // Under queue and reject, every accepted message got its own turn.
          if (policy !== 'interrupt') expect(rec.of('turn.started').map((e) => e.input.text)).toEqual(accepted);
          checkStream(rec.events, rt.registries, { settledTurns: rec.of('turn.started').map((e) => e.turnId) });
          expect((await s.snapshot()).state).toBe('idle');
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('double-texting: interrupt at the edges of a turn', () => {
  it('double-texting:interrupt:never-unanswered — "is answered in a turn of its own": a message that joined too late runs in its place in arrival order (after one queued before it), and its sender\'s settled follows the turn that answers it', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user', text: '^book' }, respond: answer(toolUse('gated', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'booked')], 'complete')) },
        { respond: answer(respond([part('response', 're: $user')], 'complete')) },
      ],
    });
    addTool(rt.registries, 'gated', () => ({ ok: 1 }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['gated'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    let armed = false;
    let late: ReturnType<typeof s.send> | undefined;
    const rec = new Recorder(s, (e) => {
      // After the approval the final response has been read: a message now joins too late.
      if (armed && e.type === 'model.usage' && !late) late = s.send('M2 sent second');
    });
    const r1 = await s.send('book it');
    expect((await r1.settled).finalizedBy).toBe('suspended');
    const m1 = await s.send('M1 sent first');
    expect(m1.queued).toBe(true);
    armed = true;
    await s.answerApproval(rec.of('approval.requested')[0]!.approvalId, { approved: true }, {}, 'api');
    await s.idle();
    const m2 = await late!;
    expect(m2.queued).toBe(false);
    const out = await m2.settled;
    expect(out.parts.map((p) => p.text)).toEqual(['re: M2 sent second']);
    expect(out.turnId).not.toBe(r1.turnId);
    expect(rec.of('turn.started').map((e) => e.input.text)).toEqual(['book it', 'M1 sent first', 'M2 sent second']);
    checkStream(rec.events, rt.registries);
  });

  it('double-texting:interrupt — "a call not yet started does not run": a message joining while an asynchronous approval policy is evaluated cancels the call instead of asking a human, and reaches the next model request', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', text: '^book', call: 0 }, respond: answer(toolUse('book', { q: 'corfu' })) },
        { respond: answer(respond([part('response', 'reply to: $user')], 'complete')) },
      ],
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let policyStarted = false;
    let ran = 0;
    addTool(rt.registries, 'book', () => (ran++, { ok: 'booked' }), {
      requiresApproval: async () => {
        policyStarted = true;
        await gate;
        return { decision: 'ask', reason: 'costly' };
      },
    });
    rt.registries.actors.register({ name: 'a', tools: ['book'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const rec = new Recorder(s);
    const r1 = await s.send('book corfu');
    while (!policyStarted) await new Promise((r) => setTimeout(r, 1));
    const r2 = await s.send('actually, make it 2 people');
    expect(r2).toMatchObject({ queued: false, turnId: r1.turnId });
    release();
    expect((await r2.settled).finalizedBy).toBe('complete');
    expect(rec.of('approval.requested')).toEqual([]);
    expect(ran).toBe(0);
    expect(rec.of('tool.result').map((e) => e.view)).toEqual(['tool "book" was cancelled before it ran']);
    expect(model.requests.some((r) => JSON.stringify(r.messages).includes('2 people'))).toBe(true);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId] });
  });
});
