/**
 * Edges of the turn loop: several respond() calls in one response, stop reasons, thinking
 * blocks, usage, client-side tools, hand-off targets, and approvals mixed with other tools.
 */
import { describe, expect, it } from 'vitest';
import { Recorder, addTool, addGatedTool, answer, checkHistory, checkStream, dataPart, harness, lastUserBlocks, part, respond, sequence, settledOf, toolResultsIn, toolUse } from './helpers.js';
import { createMemoryStore } from '../../src/stores/memory.js';

describe('turn loop edges', () => {
  it('respond:state-change:last-word — a respond() after a state-changing one in the same response is rejected, never published after it', async () => {
    const { rt } = harness(
      sequence([
        answer(respond([part('response', 'All done.')], 'complete', { id: 'toolu_done' }), respond([part('ack', 'one more thing')], 'awaiting', { id: 'toolu_after' })),
      ]),
    );
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    // Nothing the model said after declaring the turn complete is delivered.
    expect(rec.of('part.received').map((e) => e.part.text)).toEqual(['All done.']);
    const mb = await s.mailbox();
    const after = mb.find((m) => m.kind === 'tool_result' && m.callId === 'toolu_after');
    expect(after).toMatchObject({ isError: true });
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('respond:state-change:once — two state-changing respond() calls in one response: the first wins, the second is rejected', async () => {
    const { rt } = harness(
      sequence([answer(respond([part('response', 'First.')], 'complete'), respond([part('clarify', 'Second?')], 'clarifying', { id: 'toolu_second' }))]),
    );
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(rec.of('part.received').map((e) => e.part.text)).toEqual(['First.']);
    expect((await s.mailbox()).find((m) => m.kind === 'tool_result' && m.callId === 'toolu_second')).toMatchObject({ isError: true });
  });

  it('respond:suspended:runtime-only — a model that declares suspended is rejected with a message saying the runtime enters it', async () => {
    const { rt, model } = harness(sequence([answer(respond([part('thinking', 'waiting')], 'suspended', { id: 'toolu_s' })), answer(respond([part('response', 'ok')], 'complete'))]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    const r = toolResultsIn(model.requests[1]!).find((b) => b.tool_use_id === 'toolu_s');
    expect(r).toMatchObject({ is_error: true });
    expect(r.content).toMatch(/suspended/);
  });

  it('respond:passTo:declared-target — passTo naming an actor outside the handoffs is rejected; the turn stays with the sender', async () => {
    const { rt, model } = harness(
      sequence([answer(respond([part('thinking', 'to c')], 'passed', { passTo: 'c', id: 'toolu_p' })), answer(respond([part('response', 'I will do it myself.')], 'complete'))]),
    );
    rt.registries.actors.register({ name: 'a', handoffs: ['b'] });
    rt.registries.actors.register({ name: 'b' });
    rt.registries.actors.register({ name: 'c' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(rec.of('actor.passed')).toEqual([]);
    expect(model.requests.map((r) => r.actor)).toEqual(['a', 'a']);
    expect(toolResultsIn(model.requests[1]!).find((b) => b.tool_use_id === 'toolu_p')!.content).toContain('passTo');
    expect(out.finalizedBy).toBe('complete');
  });

  it('respond:passTo:unregistered-target — a hand-off to a declared but unregistered actor settles the turn error, naming the actor', async () => {
    // The model keeps handing off to ghost: each call is refused, naming it, until the retries run out.
    const { rt } = harness({ rules: [{ respond: answer(respond([part('thinking', 'to ghost')], 'passed', { passTo: 'ghost' })) }] });
    rt.registries.actors.register({ name: 'a', handoffs: ['ghost'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('error');
    expect(out.error?.message ?? '').toContain('ghost');
    expect(out.parts.at(-1)!.metadata.partType).toBe('error');
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('tools:unknown-in-actor — an actor listing an unregistered tool fails its turn with an error naming the tool, not a hang', async () => {
    const { rt, model } = harness(sequence([answer(respond([part('thinking', 'to b')], 'passed', { passTo: 'b' }))]));
    rt.registries.actors.register({ name: 'a', handoffs: ['b'] });
    rt.registries.actors.register({ name: 'b', tools: ['no_such_tool'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('error');
    expect(out.error?.message ?? '').toContain('no_such_tool');
    expect(model.requests.map((r) => r.actor)).toEqual(['a']);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
    // The session is usable again.
    expect((await s.snapshot()).state).toBe('idle');
  });

  it('model:stop:max-tokens — a response cut off by max_tokens settles error with stop max_tokens', async () => {
    const { rt } = harness(sequence([{ blocks: [respond([part('thinking', 'so far')], 'awaiting')], stopReason: 'max_tokens' }]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out).toMatchObject({ finalizedBy: 'error', stop: 'max_tokens', error: { code: 'model.max_tokens' } });
    expect(settledOf(rec.events, out.turnId)[0]).toMatchObject({ stop: 'max_tokens' });
    expect(out.parts.at(-1)!.metadata).toMatchObject({ partType: 'error', code: 'model.max_tokens' });
  });

  it('model:stop:context-window — a response cut off because the conversation filled the context window (model_context_window_exceeded) settles error model.context_window, not "the answer grew too long"', async () => {
    const { rt } = harness(sequence([{ blocks: [respond([part('thinking', 'so far')], 'awaiting')], stopReason: 'model_context_window_exceeded' }]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('hi')).settled;
    expect(out).toMatchObject({ finalizedBy: 'error', stop: 'max_tokens', error: { code: 'model.context_window' } });
    const error = out.parts.at(-1)!;
    expect(error.metadata).toMatchObject({ partType: 'error', code: 'model.context_window' });
    expect(error.text).toBe('The conversation has grown too long for the assistant to go on with it; start a new one.');
  });

  it('model:history:well-formed — after a max_tokens stop that cut off tool calls, the next turn\'s history still answers every tool_use', async () => {
    const { rt, model } = harness(
      sequence([
        { blocks: [respond([part('ack', 'Searching.')], 'awaiting'), toolUse('lookup', { q: 'x' }, 'toolu_cut')], stopReason: 'max_tokens' },
        answer(respond([part('response', 'Second turn.')], 'complete')),
      ]),
    );
    const ran: unknown[] = [];
    addTool(rt.registries, 'lookup', (a) => ran.push(a));
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const first = await (await s.send('one')).settled;
    expect(first).toMatchObject({ finalizedBy: 'error', stop: 'max_tokens' });
    expect(ran).toEqual([]);
    await (await s.send('two')).settled;
    checkHistory(model.requests[1]!);
  });

  it('model:failure:settles-error — "max_tokens and refusal stops settle error": also a cut response whose respond() asked for complete before the cut', async () => {
    for (const stopReason of ['max_tokens', 'refusal'] as const) {
      const cut = { blocks: [respond([part('response', 'Here is the ans')], 'complete'), { type: 'text' as const, text: 'and then the output was cut' }], stopReason };
      const { rt } = harness(sequence([cut]));
      rt.registries.actors.register({ name: 'a' });
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      const out = await (await s.send('hi')).settled;
      expect(out).toMatchObject({ finalizedBy: 'error', stop: stopReason, error: { code: `model.${stopReason === 'max_tokens' ? 'max_tokens' : 'refusal'}` } });
      // The change the cut response asked for was never entered.
      expect(rec.of('turnState.changed').map((e) => e.to)).not.toContain('complete');
      checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
      await rt.close();
    }
  });

  it('model:stop:refusal — a refusal settles error with stop refusal', async () => {
    const { rt } = harness(sequence([{ blocks: [], stopReason: 'refusal' }]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('hi')).settled;
    expect(out).toMatchObject({ finalizedBy: 'error', stop: 'refusal', error: { code: 'model.refusal' } });
  });

  it('model:thinking:reasoning-trace — a thinking block becomes a reasoning-trace part', async () => {
    const { rt } = harness(sequence([answer({ type: 'thinking', thinking: 'The user wants X.' }, respond([part('response', 'X.')], 'complete'))]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(rec.of('part.received').map((e) => [e.part.metadata.partType, e.part.text])).toEqual([
      ['reasoning-trace', 'The user wants X.'],
      ['response', 'X.'],
    ]);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('model:thinking:one-part-each — every thinking block of a turn is its own part (its own callId), across model calls and within one response', async () => {
    const { rt } = harness(
      sequence([
        answer({ type: 'thinking', thinking: 'First, look it up.' }, toolUse('lookup', { q: 'x' })),
        answer({ type: 'thinking', thinking: 'Found it.' }, { type: 'thinking', thinking: 'Now answer.' }, respond([part('response', 'X.')], 'complete')),
      ]),
    );
    addTool(rt.registries, 'lookup');
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    const traces = rec.of('part.received').filter((e) => e.part.metadata.partType === 'reasoning-trace');
    expect(traces.map((e) => e.part.text)).toEqual(['First, look it up.', 'Found it.', 'Now answer.']);
    expect(traces.map((e) => e.callId)).toEqual([1, 2, 3].map((n) => `${out.turnId}:thinking:${n}`));
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('usage:summed — turn.settled carries the sum of the turn\'s model usage', async () => {
    const { rt } = harness(
      sequence([
        { blocks: [toolUse('lookup', { q: 'a' })], usage: { inputTokens: 100, outputTokens: 10 } },
        { blocks: [respond([part('response', 'done')], 'complete')], usage: { inputTokens: 150, outputTokens: 20 } },
      ]),
    );
    addTool(rt.registries, 'lookup');
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.usage).toEqual({ inputTokens: 250, outputTokens: 30 });
    expect(settledOf(rec.events, out.turnId)[0]!.usage).toEqual({ inputTokens: 250, outputTokens: 30 });
    expect(rec.of('model.usage').map((e) => e.usage.inputTokens)).toEqual([100, 150]);
  });

  it('tools:client:stop-and-resume — a client-side tool call stops the turn; inject(client-tool-result) resumes it', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('get_location', { precise: true }, 'toolu_loc')) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'You are in $1.')], 'complete')) },
      ],
    });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const ref = await s.send('where am I?', { clientTools: [{ name: 'get_location', description: 'Browser location', parameters: { type: 'object' } }] });
    const stopped = await ref.settled;
    expect(stopped.finalizedBy).toBe('suspended');
    expect(rec.of('tool.called')).toMatchObject([{ callId: 'toolu_loc', tool: 'get_location', side: 'client' }]);
    expect((await s.snapshot()).pendingClientCalls).toEqual([{ callId: 'toolu_loc', tool: 'get_location', args: { precise: true } }]);
    await expect(s.inject({ kind: 'client-tool-result', callId: 'toolu_nope', content: 'x' })).rejects.toMatchObject({ code: 'injection.unknown_call' });
    const resumed = await s.inject({ kind: 'client-tool-result', callId: 'toolu_loc', content: 'Corfu' });
    const out = await resumed!.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(toolResultsIn(model.requests.at(-1)!).find((b) => b.tool_use_id === 'toolu_loc')).toMatchObject({ content: 'Corfu' });
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('tools:client:name-conflicts — client tools that shadow a server tool, respond(), or each other are refused at send and start nothing', async () => {
    const { rt } = harness(sequence([answer(respond([part('response', 'ok')], 'complete'))]));
    addTool(rt.registries, 'lookup');
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const tool = (name: string) => ({ name, description: name, parameters: { type: 'object' } });
    await expect(s.send('hi', { clientTools: [tool('lookup')] })).rejects.toMatchObject({ code: 'message.invalid_client_tool', message: expect.stringContaining('"lookup"') });
    await expect(s.send('hi', { clientTools: [tool('respond')] })).rejects.toMatchObject({ code: 'message.invalid_client_tool', message: expect.stringContaining('"respond"') });
    await expect(s.send('hi', { clientTools: [tool('x'), tool('x')] })).rejects.toMatchObject({ code: 'message.invalid_client_tool', message: expect.stringContaining('twice') });
    expect(await s.mailbox()).toEqual([]);
    expect((await s.snapshot()).state).toBe('idle');
    const ok = await (await s.send('hi', { clientTools: [tool('geo')] })).settled;
    expect(ok.finalizedBy).toBe('complete');
  });

  it('approval:mixed-with-running-tool — a plain tool in the same response runs at once; the gated one waits; two gated calls need two answers', async () => {
    const { rt, model } = harness({
      rules: [
        {
          when: { on: 'user' },
          respond: answer(toolUse('lookup', { q: 'first' }, 'toolu_plain'), toolUse('gated', { q: 'one' }, 'toolu_g1'), toolUse('gated', { q: 'two' }, 'toolu_g2')),
        },
        { when: { on: 'any' }, respond: answer(respond([part('response', 'all three handled')], 'complete')) },
      ],
    });
    const ran: string[] = [];
    addTool(rt.registries, 'lookup', (a) => ran.push(`lookup:${a.q}`));
    addTool(rt.registries, 'gated', (a) => ran.push(`gated:${a.q}`), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['lookup', 'gated'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const stopped = await (await s.send('go')).settled;
    expect(stopped.finalizedBy).toBe('suspended');
    expect(ran).toEqual(['lookup:first']);
    const [a1, a2] = rec.of('approval.requested');
    expect((await s.answerApproval(a1!.approvalId, { approved: true }, {}, 'api')).ok).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    // One answer of two: still suspended, no model call yet.
    expect((await s.snapshot()).state).toBe('suspended');
    expect(model.requests).toHaveLength(1);
    expect((await s.answerApproval(a2!.approvalId, { approved: false, reason: 'not this one' }, {}, 'api')).ok).toBe(true);
    await s.idle();
    expect(ran).toEqual(['lookup:first', 'gated:one']);
    const results = toolResultsIn(model.requests[1]!);
    expect(results.map((r) => r.tool_use_id).sort()).toEqual(['toolu_g1', 'toolu_g2', 'toolu_plain']);
    expect(results.find((r) => r.tool_use_id === 'toolu_g2')).toMatchObject({ is_error: true, content: 'Tool call denied: not this one' });
    expect(rec.of('turn.settled')).toHaveLength(1);
    checkStream(rec.events, rt.registries, { settledTurns: [stopped.turnId] });
  });

  it('approval:instant-answer — an approval answered synchronously from the event stream runs the tool once and the turn completes', async () => {
    for (const approved of [true, false]) {
      const { rt } = harness({
        rules: [
          { when: { on: 'user' }, respond: answer(toolUse('slowish', { q: 'a' }), toolUse('gated', { q: 'b' })) },
          { respond: answer(respond([part('response', 'done')], 'complete')) },
        ],
      });
      const ran: string[] = [];
      addTool(rt.registries, 'slowish', async (a) => {
        await new Promise((r) => setTimeout(r, 5));
        ran.push(a.q);
      });
      addTool(rt.registries, 'gated', (a) => ran.push(a.q), { requiresApproval: true });
      rt.registries.actors.register({ name: 'a', tools: ['slowish', 'gated'] });
      const s = await rt.createSession({ actor: 'a' });
      const answers: Promise<unknown>[] = [];
      const rec = new Recorder(s, (e) => {
        if (e.type === 'approval.requested') answers.push(s.answerApproval(e.approvalId, { approved }, {}, 'api'));
      });
      await s.send('go');
      await rec.waitFor((e) => e.type === 'turn.settled');
      await Promise.all(answers);
      expect(ran).toEqual(approved ? ['a', 'b'] : ['a']);
      expect(rec.of('turn.settled')).toMatchObject([{ finalizedBy: 'complete' }]);
      expect(rec.of('approval.resolved')).toHaveLength(1);
      checkStream(rec.events, rt.registries);
    }
  });

  it('approval:forbidden — a principal of another tenant may not answer; the approval stays pending', async () => {
    const { rt } = harness({ rules: [{ when: { on: 'user' }, respond: answer(toolUse('gated', { q: 'x' })) }, { respond: answer(respond([part('response', 'ok')], 'complete')) }] });
    addTool(rt.registries, 'gated', () => ({ ok: 1 }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['gated'] });
    const s = await rt.createSession({ actor: 'a', tenantId: 'acme' });
    const rec = new Recorder(s);
    await (await s.send('go')).settled;
    const id = rec.of('approval.requested')[0]!.approvalId;
    expect(await s.answerApproval(id, { approved: true }, { userId: 'mallory', tenantId: 'evil' }, 'api')).toMatchObject({ ok: false, code: 'approval.forbidden' });
    expect((await s.snapshot()).pendingApprovals.map((a) => a.approvalId)).toEqual([id]);
    expect(rec.of('approval.resolved')).toEqual([]);
    expect((await s.answerApproval(id, { approved: true }, { userId: 'alice', tenantId: 'acme' }, 'api')).ok).toBe(true);
    await s.idle();
    expect(rec.of('turn.settled')).toHaveLength(1);
  });

  it('double-texting:queue:while-suspended — a message queued behind a suspended turn runs after the approval settles it', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user', text: 'book' }, respond: answer(toolUse('gated', { q: 'x' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'booked')], 'complete')) },
        { when: { on: 'user', text: 'weather' }, respond: answer(respond([part('response', 'sunny')], 'complete')) },
      ],
    });
    addTool(rt.registries, 'gated', () => ({ ok: 1 }), { requiresApproval: true });
    rt.registries.actors.register({ name: 'a', tools: ['gated'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const r1 = await s.send('book it');
    await r1.settled;
    const r2 = await s.send('and the weather?');
    expect(r2.queued).toBe(true);
    await (await s.answerApproval(rec.of('approval.requested')[0]!.approvalId, { approved: true }, {}, 'api'));
    const o2 = await r2.settled;
    expect(o2.parts.map((p) => p.text)).toEqual(['sunny']);
    expect(rec.of('turn.settled').map((e) => e.turnId)).toEqual([r1.turnId, r2.turnId]);
    checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId, r2.turnId] });
  });

  it('message:invalid — an empty message is refused with a clear error and starts no turn', async () => {
    const { rt } = harness({ rules: [] });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    await expect(s.send('   ')).rejects.toMatchObject({ code: 'message.invalid' });
    expect((await s.snapshot()).state).toBe('idle');
    expect(await s.mailbox()).toEqual([]);
  });

  it('session:unknown-actor — a session for an unregistered actor is refused, naming the registered ones', async () => {
    const { rt } = harness({ rules: [] });
    rt.registries.actors.register({ name: 'a' });
    await expect(rt.createSession({ actor: 'zed' })).rejects.toMatchObject({ code: 'actor.unknown', message: expect.stringContaining('registered: a') });
  });

  it('nudge:history — the nudge names respond() and the free text is kept out of any other actor\'s history', async () => {
    const { rt, model } = harness(
      sequence([
        answer({ type: 'text', text: 'PRIVATE-PROSE' }),
        answer(respond([part('thinking', 'to b')], 'passed', { passTo: 'b' })),
        answer(respond([part('response', 'b here')], 'complete')),
      ]),
    );
    rt.registries.actors.register({ name: 'a', handoffs: ['b'] });
    rt.registries.actors.register({ name: 'b' });
    const s = await rt.createSession({ actor: 'a' });
    await (await s.send('hi')).settled;
    expect(lastUserBlocks(model.requests[1]!).at(-1).text).toContain('respond()');
    expect(JSON.stringify(model.requests[2]!.messages)).not.toContain('PRIVATE-PROSE');
    expect(JSON.stringify(model.requests[2]!.messages)).not.toContain('[runtime]');
  });

  it('session:stop:releases-waiters — deleting a session or closing the runtime mid-turn resolves the running and queued TurnRefs instead of leaving them pending', async () => {
    for (const how of ['delete', 'close'] as const) {
      const { rt } = harness({ rules: [{ when: { on: 'user' }, respond: answer(toolUse('slow', { q: 'x' })) }, { respond: answer(respond([part('response', 'ok')], 'complete')) }] });
      const release = addGatedTool(rt.registries, 'slow');
      rt.registries.actors.register({ name: 'a', tools: ['slow'] });
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      const r1 = await s.send('go');
      const r2 = await s.send('queued');
      await rec.waitFor((e) => e.type === 'tool.called');
      if (how === 'delete') expect(await rt.deleteSession(s.id)).toBe(true);
      else await rt.close();
      release();
      const timeout = new Promise((res) => setTimeout(() => res('still pending'), 1000));
      const [o1, o2] = await Promise.all([Promise.race([r1.settled, timeout]), Promise.race([r2.settled, timeout])]);
      // The running turn names the state it was cut in; the queued message's turn never started.
      expect(o1, how).toMatchObject({ turnId: r1.turnId, finalizedBy: 'awaiting', stop: 'interrupted', error: { code: 'session.stopped' } });
      expect(o2, how).toMatchObject({ turnId: r2.turnId, finalizedBy: 'idle', stop: 'interrupted', parts: [], error: { code: 'session.stopped' } });
      expect(await Promise.race([s.idle().then(() => 'idle'), timeout])).toBe('idle');
      // Nothing was published after the stop.
      expect(rec.of('turn.settled')).toEqual([]);
    }
  });

  it('api:session-visible-to — "with visibleTo, a session of another tenant is undefined too, and is not woken from the store for the asking": a passivated session stays asleep for another tenant\'s (or a tenant-less) principal, and wakes for its own', async () => {
    const { rt } = harness({ rules: [{ respond: answer(respond([part('response', 'ok')], 'complete')) }] });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a', tenantId: 'acme' });
    await (await s.send('hi')).settled;
    expect(rt.passivateIdle()).toBe(1);
    for (const visibleTo of [{ userId: 'eve', tenantId: 'globex' }, { userId: 'nobody' }]) {
      expect(await rt.session(s.id, { visibleTo })).toBeUndefined();
      expect(rt.liveSessions).toBe(0);
    }
    expect(await rt.session('sess_missing', { visibleTo: { tenantId: 'acme' } })).toBeUndefined();
    const own = await rt.session(s.id, { visibleTo: { userId: 'ana', tenantId: 'acme' } });
    expect(own?.id).toBe(s.id);
    expect(rt.liveSessions).toBe(1);
    // Live now: still not handed to another tenant.
    expect(await rt.session(s.id, { visibleTo: { tenantId: 'globex' } })).toBeUndefined();
    await rt.close();
  });

  it('api:session-visible-to-create — "live once created": session(id, { visibleTo }) while createSession({ id }) is under way waits for it and answers as session(id) does (the transports ask the scoped way)', async () => {
    const { rt } = harness({ rules: [] });
    rt.registries.actors.register({ name: 'a' });
    const made = rt.createSession({ actor: 'a', id: 'sess_fixed', tenantId: 'acme' });
    const [plain, scoped, other] = await Promise.all([
      rt.session('sess_fixed'),
      rt.session('sess_fixed', { visibleTo: { tenantId: 'acme' } }),
      rt.session('sess_fixed', { visibleTo: { tenantId: 'globex' } }),
    ]);
    await made;
    expect(plain?.id).toBe('sess_fixed');
    expect(scoped?.id).toBe('sess_fixed');
    expect(other).toBeUndefined();
    await rt.close();
  });

  it('api:session-exists-stored — "a session with id ... already exists" holds for a session only the store has (passivated), whether the id is the caller\'s or comes from a custom id source; a fresh id of the built-in source never names one', async () => {
    const store = createMemoryStore();
    const ids = ['sess_custom', 'sess_custom'];
    const { rt } = harness({ rules: [{ respond: answer(respond([part('response', 'ok')], 'complete')) }] }, { store, newId: (prefix) => (prefix === 'sess' ? ids.shift()! : `${prefix}_${Math.random()}`) });
    rt.registries.actors.register({ name: 'a' });
    await (await (await rt.createSession({ id: 'fixed', actor: 'a' })).send('hi')).settled;
    await (await (await rt.createSession({ actor: 'a' })).send('hi')).settled;
    expect(rt.passivateIdle()).toBe(2);
    expect(rt.liveSessions).toBe(0);
    await expect(rt.createSession({ id: 'fixed', actor: 'a' })).rejects.toMatchObject({ code: 'session.exists' });
    await expect(rt.createSession({ actor: 'a' })).rejects.toMatchObject({ code: 'session.exists', message: expect.stringContaining('sess_custom') });
    expect(store.listSessions().map((r) => r.id)).toEqual(['fixed', 'sess_custom']);
    // The built-in source: every session is new, and none collides with a stored one.
    const { rt: plain } = harness({ rules: [] }, { store });
    plain.registries.actors.register({ name: 'a' });
    const made = await Promise.all(Array.from({ length: 50 }, () => plain.createSession({ actor: 'a' })));
    expect(new Set(made.map((s) => s.id)).size).toBe(50);
    expect(made.every((s) => /^sess_[A-Za-z0-9_-]{22}$/.test(s.id))).toBe(true);
    await rt.close();
    await plain.close();
  });

  it('envelope:domain-data:proto-key, end to end — "nothing accepted is lost": a "__proto__" member in respond() data and in a tool\'s data reaches the part, the settled envelope and the stored events as a member, never as a prototype', async () => {
    // Parsed, as a script file or a recording is: "__proto__" is an own member of the data.
    const data = JSON.parse('{"__proto__": {"polluted": true}, "route": {"to": "CFU"}}') as Record<string, unknown>;
    const { rt } = harness(
      sequence([
        answer(toolUse('lookup', { q: 'CFU' })),
        // Templated ($user): the scripted model rebuilds the input, as a replay's script does.
        answer(respond([part('response', 'ok: $user'), dataPart('domain-data', data)], 'complete')),
      ]),
    );
    addTool(rt.registries, 'lookup', () => JSON.parse('{"__proto__": {"fare": 94}}') as unknown);
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('go')).settled;
    const own = (o: unknown, k: string) => Object.getOwnPropertyDescriptor(o, k)?.value;
    expect(out.parts[0]!.text).toBe('ok: go');
    const received = out.parts.find((p) => p.metadata.partType === 'domain-data')!;
    expect(own(received.data, '__proto__')).toEqual({ polluted: true });
    const merged = out.envelope!.parts.find((p) => p.metadata.partType === 'domain-data')!.data as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(own(merged, '__proto__')).toEqual({ polluted: true });
    expect(own(merged.lookup, '__proto__')).toEqual({ fare: 94 });
    const stored = JSON.stringify((await rt.store.readEvents(s.id, 0, 1000)).find((e) => e.type === 'envelope.settled'));
    expect(stored).toContain('"__proto__":{"polluted":true}');
    expect(stored).toContain('"lookup":{"__proto__":{"fare":94}}');
    await rt.close();
  });

  it('api:basics — duplicate session ids, a closed runtime, principal propagation and snapshots behave as documented', async () => {
    const { rt } = harness({ rules: [{ respond: answer(respond([part('response', 'ok')], 'complete')) }] });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ id: 'fixed', actor: 'a', tenantId: 't1' });
    await expect(rt.createSession({ id: 'fixed', actor: 'a' })).rejects.toMatchObject({ code: 'session.exists' });
    const rec = new Recorder(s);
    const ref = await s.send('hello', { principal: { userId: 'u1', tenantId: 't1' } });
    await ref.settled;
    expect(rec.of('turn.started')[0]!.input).toEqual({ text: 'hello', principal: { userId: 'u1', tenantId: 't1' } });
    expect((await s.mailbox())[0]).toMatchObject({ kind: 'user', text: 'hello', principal: { userId: 'u1' } });
    const snap = await s.snapshot();
    expect(snap).toMatchObject({ id: 'fixed', actor: 'a', tenantId: 't1', state: 'idle', queued: 0, pendingApprovals: [], pendingClientCalls: [] });
    expect(snap.lastSeq).toBe(rec.events.length);
    expect((await rt.listSessions({ tenantId: 't1' })).map((r) => r.id)).toEqual(['fixed']);
    expect(await rt.listSessions({ tenantId: 'other' })).toEqual([]);
    expect(await rt.session('fixed')).toBe(s);
    expect(await rt.session('nope')).toBeUndefined();
    await rt.close();
    await expect(rt.createSession({ actor: 'a' })).rejects.toMatchObject({ code: 'runtime.closed' });
    await expect(s.send('after close')).rejects.toMatchObject({ code: 'runtime.closed' });
    await expect(rt.answerApproval('appr_any', { approved: true }, { userId: 'u1' }, 'api')).rejects.toMatchObject({ code: 'runtime.closed' });
  });
});

