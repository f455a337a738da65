/**
 * Bounds and refusals of the turn loop (spec 000 parser behaviour, DESIGN "respond()",
 * spec 002 HITL approval): what goes back to the model, and where a turn stops.
 */
import { describe, expect, it } from 'vitest';
import type { TurnOutcome } from '../../src/api.js';
import { Recorder, addTool, answer, checkStream, harness, lastUserBlocks, part, respond, sequence, settledOf, toolResultsIn, toolUse } from './helpers.js';

const badPart = { text: 'hello', metadata: { partType: 'no-such-type' } };

describe('bounds of the turn loop', () => {
  it('respond:rejected:is-error-result — a rejected respond() goes back as an is_error tool_result naming the violation, and the model can fix it', async () => {
    const { rt, model } = harness(
      sequence([
        answer(respond([badPart as any], 'complete', { id: 'toolu_bad' })),
        answer(respond([part('response', 'Fixed.')], 'complete')),
      ]),
    );
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    const results = toolResultsIn(model.requests[1]!);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool_use_id: 'toolu_bad', is_error: true });
    expect(results[0].content).toContain('/parts/0/metadata/partType');
    expect(results[0].content).toContain('no-such-type');
    // The rejected call published nothing.
    expect(rec.of('part.received').map((e) => e.part.text)).toEqual(['Fixed.']);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('respond:rejected:bounded — after maxRespondRetries rejections the turn settles error with an error part', async () => {
    const { rt, model } = harness({ rules: [{ respond: answer(respond([badPart as any], 'complete')) }] }, { limits: { maxRespondRetries: 2 } });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('error');
    // The first call and two retries.
    expect(model.requests).toHaveLength(3);
    expect(toolResultsIn(model.requests[2]!).filter((r) => r.is_error)).toHaveLength(2);
    expect(out.error?.code).toBe('turn.respond_retries');
    const parts = rec.of('part.received');
    expect(parts).toHaveLength(1);
    expect(parts[0]!.part.metadata).toMatchObject({ partType: 'error', code: 'turn.respond_retries' });
    expect(settledOf(rec.events, out.turnId)).toMatchObject([{ finalizedBy: 'error', stop: 'error', error: { code: 'turn.respond_retries' } }]);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('respond:free-text:never-delivered — text outside respond() reaches no part, the model is nudged, and after the bound the turn errors', async () => {
    const secret = 'FREE-TEXT-OUTSIDE-RESPOND';
    const { rt, model } = harness({ rules: [{ respond: answer({ type: 'text', text: secret }) }] }, { limits: { maxFreeTextNudges: 2 } });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('error');
    expect(out.error?.code).toBe('turn.free_text');
    expect(model.requests).toHaveLength(3);
    // Nudged: the next request ends with the runtime's instruction to call respond().
    const nudge = lastUserBlocks(model.requests[1]!).at(-1);
    expect(nudge.type).toBe('text');
    expect(nudge.text).toMatch(/^\[runtime\] .*respond\(\)/);
    // Never delivered: no event carries the text, no part has it.
    for (const e of rec.events) {
      if (e.type === 'part.received' || e.type === 'part.delta') expect(JSON.stringify(e)).not.toContain(secret);
    }
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['error']);
    expect(JSON.stringify(out.parts)).not.toContain(secret);
    // ...but it is kept in the mailbox as what the model said (logged).
    const mailbox = await s.mailbox();
    expect(mailbox.filter((m) => m.kind === 'nudge')).toHaveLength(2);
    expect(JSON.stringify(mailbox.filter((m) => m.kind === 'assistant'))).toContain(secret);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('respond:free-text:nudge-recovers — a model that calls respond() after a nudge completes normally', async () => {
    const { rt } = harness(sequence([answer({ type: 'text', text: 'Sure, here it is' }), answer(respond([part('response', 'Here it is.')], 'complete'))]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts).toEqual([part('response', 'Here it is.')]);
  });

  it('turn:model-call-budget — a model that keeps answering awaiting hits the model-call budget', async () => {
    const { rt, model } = harness({ rules: [{ respond: answer(respond([part('thinking', 'still thinking')], 'awaiting')) }] }, { limits: { maxModelCallsPerTurn: 4 } });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('error');
    expect(out.error?.code).toBe('turn.model_call_budget');
    expect(model.requests).toHaveLength(4);
    expect(out.parts.filter((p) => p.metadata.partType === 'thinking')).toHaveLength(4);
    expect(out.parts.at(-1)!.metadata).toMatchObject({ partType: 'error', code: 'turn.model_call_budget' });
    expect(rec.of('turnState.changed').at(-1)).toMatchObject({ from: 'awaiting', to: 'error' });
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('turn:actor-bounds — an actor\'s own maxModelCalls bounds its turn below the runtime default', async () => {
    const { rt, model } = harness({ rules: [{ respond: answer(respond([part('thinking', 'still thinking')], 'awaiting')) }] }, { limits: { maxModelCallsPerTurn: 10 } });
    rt.registries.actors.register({ name: 'a', maxModelCalls: 2 });
    const s = await rt.createSession({ actor: 'a' });
    const out = await (await s.send('hi')).settled;
    expect(out.error?.code).toBe('turn.model_call_budget');
    expect(model.requests).toHaveLength(2);
  });

  describe('turn:actor-bounds:after-handoff — "Model calls one actor may make in one turn": a hand-off starts the receiver\'s counts afresh', () => {
    const plannerThenDrafter = [
      { when: { actor: 'planner', on: 'user' as const }, respond: answer(toolUse('search', { q: 'x' })) },
      { when: { actor: 'planner', on: 'tool_result' as const }, respond: answer(respond([part('thinking', 'over to the drafter')], 'passed', { passTo: 'drafter' })) },
      { when: { actor: 'drafter', on: 'handoff' as const }, respond: answer(toolUse('draft', { q: 'y' })) },
      { when: { actor: 'drafter', on: 'tool_result' as const }, respond: answer(respond([part('response', 'Drafted.')], 'complete')) },
    ];

    it('the receiver\'s own maxModelCalls counts only its calls, not the sender\'s', async () => {
      const { rt, model } = harness({ rules: plannerThenDrafter });
      addTool(rt.registries, 'search');
      addTool(rt.registries, 'draft');
      rt.registries.actors.register({ name: 'planner', tools: ['search'], handoffs: ['drafter'] });
      rt.registries.actors.register({ name: 'drafter', tools: ['draft'], maxModelCalls: 2 });
      const s = await rt.createSession({ actor: 'planner' });
      const out = await (await s.send('hi')).settled;
      expect(out.error).toBeUndefined();
      expect(out.finalizedBy).toBe('complete');
      expect(model.requests.map((r) => r.actor)).toEqual(['planner', 'planner', 'drafter', 'drafter']);
      await rt.close();
    });

    it('maxModelCallsPerTurn bounds each actor of the turn: two actors of two calls each fit under 3', async () => {
      const { rt, model } = harness({ rules: plannerThenDrafter }, { limits: { maxModelCallsPerTurn: 3 } });
      addTool(rt.registries, 'search');
      addTool(rt.registries, 'draft');
      rt.registries.actors.register({ name: 'planner', tools: ['search'], handoffs: ['drafter'] });
      rt.registries.actors.register({ name: 'drafter', tools: ['draft'] });
      const s = await rt.createSession({ actor: 'planner' });
      const out = await (await s.send('hi')).settled;
      expect(out.error).toBeUndefined();
      expect(model.requests.map((r) => r.actor)).toEqual(['planner', 'planner', 'drafter', 'drafter']);
      await rt.close();
    });

    it('the sender\'s rejected respond() calls do not count against the receiver\'s maxRespondRetries', async () => {
      const bad = respond([badPart as any], 'awaiting');
      const { rt, model } = harness({
        rules: [
          { when: { actor: 'planner', call: 0 }, respond: answer(bad) },
          { when: { actor: 'planner', call: 1 }, respond: answer(bad) },
          { when: { actor: 'planner', call: 2 }, respond: answer(respond([part('thinking', 'over to the drafter')], 'passed', { passTo: 'drafter' })) },
          { when: { actor: 'drafter', on: 'handoff' as const }, respond: answer(bad) },
          { when: { actor: 'drafter', on: 'rejection' as const }, respond: answer(respond([part('response', 'Drafted.')], 'complete')) },
        ],
      });
      rt.registries.actors.register({ name: 'planner', handoffs: ['drafter'] });
      rt.registries.actors.register({ name: 'drafter', maxRespondRetries: 2 });
      const s = await rt.createSession({ actor: 'planner' });
      const out = await (await s.send('hi')).settled;
      expect(out.error).toBeUndefined();
      expect(out.finalizedBy).toBe('complete');
      expect(model.requests.map((r) => r.actor)).toEqual(['planner', 'planner', 'planner', 'drafter', 'drafter']);
      await rt.close();
    });
  });

  it('respond:state-change:last-call — a progress respond() after a state change in the same response is the call rejected: the turn ends with the change, the later call\'s parts are never delivered', async () => {
    const { rt, model } = harness(sequence([answer(respond([part('response', 'done answer')], 'complete'), respond([part('ack', 'also ack')], 'awaiting'))]));
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(model.requests).toHaveLength(1);
    expect(out.parts.map((p) => p.text)).toEqual(['done answer']);
    expect(rec.of('part.received').map((e) => e.part.text)).toEqual(['done answer']);
    expect(rec.of('envelope.settled')[0]!.envelope.parts.map((p) => p.text)).toEqual(['done answer']);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('respond:state-change:last-call — a passed respond() with other tool calls in the same response is rejected', async () => {
    const { rt, model } = harness(
      sequence([
        answer(respond([part('thinking', 'over to b')], 'passed', { passTo: 'b', id: 'toolu_pass' }), toolUse('lookup', { q: 'x' }, 'toolu_lookup')),
        answer(respond([part('response', 'done by a')], 'complete')),
      ]),
    );
    addTool(rt.registries, 'lookup');
    rt.registries.actors.register({ name: 'a', tools: ['lookup'], handoffs: ['b'] });
    rt.registries.actors.register({ name: 'b' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(rec.of('actor.passed')).toHaveLength(0);
    expect(model.requests.map((r) => r.actor)).toEqual(['a', 'a']);
    const results = toolResultsIn(model.requests[1]!);
    const rejection = results.find((r) => r.tool_use_id === 'toolu_pass');
    expect(rejection).toMatchObject({ is_error: true });
    expect(rejection.content).toMatch(/passed.*only call/s);
    expect(rejection.content).toContain('lookup');
    expect(out.finalizedBy).toBe('complete');
    // The rejected call's parts were never published.
    expect(rec.of('part.received').map((e) => e.part.text)).toEqual(['done by a']);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('turn:handoff-budget — ping-pong between two actors ends in error after maxHandoffsPerTurn', async () => {
    const { rt, model } = harness(
      {
        rules: [
          { when: { actor: 'a' }, respond: answer(respond([part('thinking', 'to b')], 'passed', { passTo: 'b' })) },
          { when: { actor: 'b' }, respond: answer(respond([part('thinking', 'to a')], 'passed', { passTo: 'a' })) },
        ],
      },
      { limits: { maxHandoffsPerTurn: 3 } },
    );
    rt.registries.actors.register({ name: 'a', handoffs: ['b'] });
    rt.registries.actors.register({ name: 'b', handoffs: ['a'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('error');
    expect(out.error?.code).toBe('turn.handoff_budget');
    expect(rec.of('actor.passed').map((e) => `${e.from}->${e.to}`)).toEqual(['a->b', 'b->a', 'a->b']);
    expect(model.requests.map((r) => r.actor)).toEqual(['a', 'b', 'a', 'b']);
    expect(rec.of('turnState.changed').at(-1)).toMatchObject({ from: 'passed', to: 'error' });
    expect(out.parts.at(-1)!.metadata).toMatchObject({ partType: 'error', code: 'turn.handoff_budget' });
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('tools:unknown-and-invalid:is-error — an unknown tool and invalid arguments come back as is_error results naming the problem', async () => {
    const ran: unknown[] = [];
    const { rt, model } = harness(
      sequence([
        answer(toolUse('no_such_tool', { q: 'x' }, 'toolu_unknown'), toolUse('lookup', { q: 42, extra: true }, 'toolu_invalid')),
        answer(respond([part('response', 'ok')], 'complete')),
      ]),
    );
    addTool(rt.registries, 'lookup', (a) => ran.push(a));
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('hi')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(ran).toEqual([]);
    const results = toolResultsIn(model.requests[1]!);
    const unknown = results.find((r) => r.tool_use_id === 'toolu_unknown');
    const invalid = results.find((r) => r.tool_use_id === 'toolu_invalid');
    expect(unknown).toMatchObject({ is_error: true });
    expect(unknown.content).toContain('Unknown tool "no_such_tool"');
    expect(unknown.content).toContain('lookup');
    expect(invalid).toMatchObject({ is_error: true });
    expect(invalid.content).toContain('Invalid arguments for lookup');
    expect(invalid.content).toContain('/q');
    expect(invalid.content).toMatch(/extra/);
    // Both are published as error results too.
    expect(rec.of('tool.result').map((e) => [e.callId, e.isError])).toEqual([
      ['toolu_unknown', true],
      ['toolu_invalid', true],
    ]);
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });
});

describe('approval-gated tools (spec 002 HITL)', () => {
  function gated(decisionText = 'Booked.') {
    const h = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(respond([part('ack', 'Booking.')], 'awaiting'), toolUse('book_flight', { q: 'BA2043' }, 'toolu_book')) },
        { when: { on: 'tool_result', tool: 'book_flight' }, respond: answer(respond([part('response', decisionText)], 'complete')) },
        { when: { on: 'rejection' }, respond: answer(respond([part('response', 'Not booked: $user')], 'complete')) },
      ],
    });
    const runs: unknown[] = [];
    addTool(h.rt.registries, 'book_flight', (a) => {
      runs.push(a);
      return { booking: 'PNR123' };
    }, { requiresApproval: true });
    h.rt.registries.actors.register({ name: 'a', tools: ['book_flight'] });
    return { ...h, runs };
  }

  it('approval:suspend-then-approve — an approval-gated call suspends with an approval-request part; approving runs the handler exactly once', async () => {
    const { rt, model, runs } = gated();
    const s = await rt.createSession({ actor: 'a', tenantId: 't1' });
    const rec = new Recorder(s);
    const stopped = await (await s.send('book BA2043')).settled;
    expect(stopped.finalizedBy).toBe('suspended');
    expect(runs).toEqual([]);
    expect(rec.of('turn.settled')).toHaveLength(0);
    expect(rec.types()).toEqual([
      'turn.started',
      'part.received',
      'turnState.changed',
      'model.usage',
      'tool.called',
      'approval.requested',
      'part.received',
      'turnState.changed',
    ]);
    const req = rec.of('approval.requested')[0]!;
    expect(req).toMatchObject({ callId: 'toolu_book', tool: 'book_flight', args: { q: 'BA2043' }, actor: 'a' });
    const approvalPart = rec.of('part.received')[1]!;
    expect(approvalPart.part.metadata.partType).toBe('approval-request');
    expect(approvalPart.part.data).toMatchObject({ approvalId: req.approvalId, tool: 'book_flight', args: { q: 'BA2043' }, actor: 'a', turnId: stopped.turnId });
    expect(rec.of('turnState.changed').at(-1)).toMatchObject({ from: 'awaiting', to: 'suspended' });
    const snap = await s.snapshot();
    expect(snap.state).toBe('suspended');
    expect(snap.pendingApprovals.map((a) => a.approvalId)).toEqual([req.approvalId]);

    // Stays suspended: no settlement without an answer.
    await new Promise((r) => setTimeout(r, 20));
    expect(rec.of('turn.settled')).toHaveLength(0);

    const res = await s.answerApproval(req.approvalId, { approved: true }, { userId: 'u1', tenantId: 't1' }, 'api');
    expect(res.ok).toBe(true);
    await s.idle();
    expect(runs).toEqual([{ q: 'BA2043' }]);
    const settled = settledOf(rec.events, stopped.turnId);
    expect(settled).toMatchObject([{ finalizedBy: 'complete' }]);
    const resolved = rec.of('approval.resolved')[0]!;
    expect(resolved).toMatchObject({ approvalId: req.approvalId, decision: 'approved', by: { userId: 'u1' }, via: 'api' });
    expect(resolved.seq).toBeLessThan(rec.of('tool.result')[0]!.seq);
    expect(rec.of('turnState.changed').map((c) => `${c.from}->${c.to}`)).toEqual([
      'awaiting->awaiting',
      'awaiting->suspended',
      'suspended->awaiting',
      'awaiting->complete',
    ]);
    expect(toolResultsIn(model.requests.at(-1)!).find((r) => r.tool_use_id === 'toolu_book')).toMatchObject({ content: '{"booking":"PNR123"}' });
    const exec = (await s.executions()).filter((e) => e.tool === 'book_flight');
    expect(exec).toHaveLength(1);
    expect(exec[0]!.approvalId).toBe(req.approvalId);
    checkStream(rec.events, rt.registries, { settledTurns: [stopped.turnId] });

    // A second answer changes nothing and reports the first decision.
    const again = await s.answerApproval(req.approvalId, { approved: false, reason: 'too late' }, { userId: 'u2', tenantId: 't1' }, 'websocket');
    expect(again).toMatchObject({ ok: false, code: 'approval.already_resolved', record: { status: 'approved', resolution: { decision: 'approved', by: { userId: 'u1' }, via: 'api' } } });
    expect((again as { message: string }).message).toContain('approved');
    expect(runs).toHaveLength(1);
    expect(rec.of('approval.resolved')).toHaveLength(1);
    checkStream(rec.events, rt.registries, { settledTurns: [stopped.turnId] });
  });

  it('approval:deny — a denied call sends "Tool call denied: <reason>" to the model and never runs the handler', async () => {
    const { rt, model, runs } = gated();
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const stopped = await (await s.send('book BA2043')).settled;
    const approvalId = rec.of('approval.requested')[0]!.approvalId;
    const res = await rt.answerApproval(approvalId, { approved: false, reason: 'over budget' }, { userId: 'boss' }, 'email');
    expect(res.ok).toBe(true);
    await s.idle();
    expect(runs).toEqual([]);
    const result = toolResultsIn(model.requests.at(-1)!).find((r) => r.tool_use_id === 'toolu_book');
    expect(result).toEqual({ type: 'tool_result', tool_use_id: 'toolu_book', content: 'Tool call denied: over budget', is_error: true });
    expect(rec.of('tool.result')).toMatchObject([{ callId: 'toolu_book', view: 'Tool call denied: over budget', isError: true }]);
    expect(settledOf(rec.events, stopped.turnId)).toMatchObject([{ finalizedBy: 'complete' }]);
    expect((await s.executions()).filter((e) => e.tool === 'book_flight')).toEqual([]);
    const again = await s.answerApproval(approvalId, { approved: true }, { userId: 'other' }, 'api');
    expect(again).toMatchObject({ ok: false, code: 'approval.already_resolved', record: { status: 'denied', resolution: { decision: 'denied', reason: 'over budget', by: { userId: 'boss' }, via: 'email' } } });
    expect(runs).toEqual([]);
    checkStream(rec.events, rt.registries, { settledTurns: [stopped.turnId] });
  });

  it('approval:concurrent-answers — of two concurrent answers exactly one wins and the handler runs at most once', async () => {
    const { rt, runs } = gated();
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    await (await s.send('book BA2043')).settled;
    const approvalId = rec.of('approval.requested')[0]!.approvalId;
    const [r1, r2] = await Promise.all([
      s.answerApproval(approvalId, { approved: true }, { userId: 'x' }, 'api'),
      s.answerApproval(approvalId, { approved: false, reason: 'no' }, { userId: 'y' }, 'aap'),
    ]);
    expect([r1.ok, r2.ok].filter(Boolean)).toHaveLength(1);
    await s.idle();
    expect(runs.length).toBeLessThanOrEqual(1);
    expect(runs.length).toBe(r1.ok ? 1 : 0);
    expect(rec.of('approval.resolved')).toHaveLength(1);
    expect(rec.of('turn.settled')).toHaveLength(1);
    checkStream(rec.events, rt.registries);
  });

  it('approval:unknown-id — answering an unknown approval reports approval.not_found', async () => {
    const { rt } = gated();
    const s = await rt.createSession({ actor: 'a' });
    expect(await s.answerApproval('appr_nope', { approved: true }, {}, 'api')).toMatchObject({ ok: false, code: 'approval.not_found' });
    expect(await rt.answerApproval('appr_nope', { approved: true }, {}, 'api')).toMatchObject({ ok: false, code: 'approval.not_found' });
  });

  it('approval:settled-promise — the TurnRef resolves when the turn stops to wait, with the approval-request part', async () => {
    const { rt } = gated();
    const s = await rt.createSession({ actor: 'a' });
    const out: TurnOutcome = await (await s.send('book')).settled;
    expect(out.finalizedBy).toBe('suspended');
    expect(out.envelope).toBeUndefined();
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['ack', 'approval-request']);
  });

  it('approval:policy:cel-and-handler — autoApproveIf runs cheap calls at once and suspends dear ones; a handler policy can deny outright', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', text: 'cheap' }, respond: answer(toolUse('pay', { amount: 20 }, 'toolu_cheap')) },
        { when: { on: 'user', text: 'dear' }, respond: answer(toolUse('pay', { amount: 500 }, 'toolu_dear')) },
        { when: { on: 'user', text: 'wipe' }, respond: answer(toolUse('wipe', {}, 'toolu_wipe')) },
        { respond: answer(respond([part('response', 'handled')], 'complete')) },
      ],
    });
    const paid: number[] = [];
    rt.registries.tools.register({
      name: 'pay',
      description: 'Pay',
      inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
      scope: 'generalist',
      requiresApproval: { autoApproveIf: 'args.amount < 50' },
      handler: (a: { amount: number }) => void paid.push(a.amount),
    });
    let wiped = false;
    rt.registries.tools.register({
      name: 'wipe',
      description: 'Wipe',
      inputSchema: { type: 'object' },
      scope: 'generalist',
      requiresApproval: () => ({ decision: 'deny', reason: 'never on Fridays' }),
      handler: () => void (wiped = true),
    });
    rt.registries.actors.register({ name: 'a', tools: ['pay', 'wipe'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    expect((await (await s.send('cheap one')).settled).finalizedBy).toBe('complete');
    expect(paid).toEqual([20]);
    expect(rec.of('approval.requested')).toEqual([]);
    expect((await (await s.send('dear one')).settled).finalizedBy).toBe('suspended');
    expect(paid).toEqual([20]);
    await s.answerApproval(rec.of('approval.requested')[0]!.approvalId, { approved: true }, {}, 'api');
    await s.idle();
    expect(paid).toEqual([20, 500]);
    expect((await (await s.send('wipe it')).settled).finalizedBy).toBe('complete');
    expect(wiped).toBe(false);
    expect(toolResultsIn(model.requests.at(-1)!).find((b) => b.tool_use_id === 'toolu_wipe')).toMatchObject({ is_error: true, content: 'Tool call denied: never on Fridays' });
    checkStream(rec.events, rt.registries);
  });
});

