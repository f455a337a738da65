/**
 * The router seen through the runtime (spec 002 "Scope and routing", "Filter-and-distribute",
 * execution log): per-destination views, private specialist events, and the execution log.
 */
import { describe, expect, it } from 'vitest';
import { annotate } from '../../src/router/annotated.js';
import type { DistributionMeta } from '../../src/router/filter-distribute.js';
import type { RoutedEvent } from '../../src/router/router.js';
import type { ExecutionRecord } from '../../src/types.js';
import { Recorder, answer, checkStream, harness, part, respond, toolResultsIn, toolUse } from './helpers.js';

const flights = {
  route: { origin: 'LGW', destination: 'CFU' },
  flights: [
    { number: 'EJ4521', price: 94, fareBasis: 'QOWGB', supplierCost: 71 },
    { number: 'BA2043', price: 187, fareBasis: 'OOWGB', supplierCost: 150 },
  ],
  render: { card: 'flight-list' },
};

describe('router through the runtime', () => {
  it('router:fad:views-per-destination — ui-stream, llm-session and a registered audit destination each get their own view', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('flight_search', { q: 'CFU' }, 'toolu_fs')) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'Two flights.')], 'complete')) },
      ],
    });
    const audit: { view: unknown; meta: DistributionMeta }[] = [];
    rt.router.filterAndDistribute.register({ id: 'audit', deliver: (view, meta) => void audit.push({ view, meta }) });
    rt.registries.tools.register({
      name: 'flight_search',
      description: 'Search flights',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      scope: 'generalist',
      handler: async () =>
        annotate(flights, {
          kind: 'flights',
          fields: {
            '/flights/*/supplierCost': ['audit'],
            '/flights/*/fareBasis': ['llm-session', 'audit'],
            '/render': ['ui-stream'],
          },
        }),
    });
    rt.registries.actors.register({ name: 'sally', tools: ['flight_search'] });
    const s = await rt.createSession({ actor: 'sally' });
    const rec = new Recorder(s);
    const out = await (await s.send('flights to Corfu')).settled;
    expect(out.finalizedBy).toBe('complete');

    // ui-stream: the tool.result event's view.
    const ui = rec.of('tool.result')[0]!;
    expect(ui.isError).toBe(false);
    expect(ui.view).toEqual({
      route: flights.route,
      flights: [
        { number: 'EJ4521', price: 94 },
        { number: 'BA2043', price: 187 },
      ],
      render: { card: 'flight-list' },
    });
    // llm-session: the tool_result content of the next model request.
    const llm = toolResultsIn(model.requests[1]!).find((b) => b.tool_use_id === 'toolu_fs');
    expect(JSON.parse(llm.content)).toEqual({
      route: flights.route,
      flights: [
        { number: 'EJ4521', price: 94, fareBasis: 'QOWGB' },
        { number: 'BA2043', price: 187, fareBasis: 'OOWGB' },
      ],
    });
    // audit: everything but the ui-only render block.
    expect(audit).toHaveLength(1);
    expect(audit[0]!.view).toEqual({ route: flights.route, flights: flights.flights });
    expect(audit[0]!.meta).toMatchObject({ sessionId: s.id, turnId: out.turnId, actor: 'sally', tool: 'flight_search', callId: 'toolu_fs', scope: 'generalist', dataKind: 'flights' });
    // No view leaks another destination's fields.
    expect(JSON.stringify(ui.view)).not.toContain('supplierCost');
    expect(JSON.stringify(rec.of('tool.result'))).not.toContain('supplierCost');
    expect(llm.content).not.toContain('supplierCost');
    expect(llm.content).not.toContain('flight-list');
    // The envelope (to UIs and peers) carries the peer-response view: no ui-, llm- or audit-only fields.
    const env = rec.of('envelope.settled')[0]!.envelope;
    expect(env.parts.find((p) => p.metadata.partType === 'domain-data')!.data).toEqual({
      flight_search: { route: flights.route, flights: [{ number: 'EJ4521', price: 94 }, { number: 'BA2043', price: 187 }] },
    });
    checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
  });

  it('router:fad:envelope-no-leak — fields annotated for audit only never reach envelope.settled; its domain-data is the peer-response view', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('flight_search', { q: 'CFU' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'Two flights.')], 'complete')) },
      ],
    });
    rt.router.filterAndDistribute.register({ id: 'audit' });
    rt.registries.tools.register({
      name: 'flight_search',
      description: 'Search flights',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      scope: 'generalist',
      handler: async () => annotate(flights, { fields: { '/flights/*/supplierCost': ['audit'] } }),
    });
    rt.registries.actors.register({ name: 'sally', tools: ['flight_search'] });
    const s = await rt.createSession({ actor: 'sally' });
    const rec = new Recorder(s);
    await (await s.send('flights to Corfu')).settled;
    expect(rec.of('envelope.settled')).toHaveLength(1);
    expect(JSON.stringify(rec.events)).not.toContain('supplierCost');
    const env = rec.of('envelope.settled')[0]!.envelope;
    expect(env.parts.find((p) => p.metadata.partType === 'domain-data')!.data).toEqual({
      flight_search: { ...flights, flights: flights.flights.map(({ supplierCost: _, ...f }) => f) },
    });
  });

  it('router:specialist:private-to-session — routed-specialist calls are invisible to other sessions\' observers but fully logged', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user', text: 'secret' }, respond: answer(toolUse('imap_search', { q: 'invoices' }, 'toolu_imap')) },
        { when: { on: 'user', text: 'public' }, respond: answer(toolUse('task_list', { q: 'today' }, 'toolu_tasks')) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'done')], 'complete')) },
      ],
    });
    rt.registries.tools.register({
      name: 'imap_search',
      description: 'Search the private mailbox',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      scope: 'specialist',
      justification: 'The IMAP client lives inside the email researcher; no other actor may read the mailbox.',
      handler: async (a: { q: string }) => ({ hits: [`${a.q}-1`, `${a.q}-2`] }),
    });
    rt.registries.tools.register({
      name: 'task_list',
      description: 'List tasks',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      scope: 'generalist',
      handler: async () => ({ tasks: ['T12'] }),
    });
    rt.registries.actors.register({ name: 'researcher', tools: ['imap_search', 'task_list'] });
    const mine = await rt.createSession({ actor: 'researcher', tenantId: 't1' });
    const other = await rt.createSession({ actor: 'researcher', tenantId: 't1' });

    const seenByOther: RoutedEvent[] = [];
    const seenByAll: RoutedEvent[] = [];
    const seenByMine: RoutedEvent[] = [];
    const subs = [
      rt.router.observe({ sessionId: other.id }, (e) => seenByOther.push(e)),
      rt.router.observe({}, (e) => seenByAll.push(e)),
      rt.router.observe({ sessionId: mine.id }, (e) => seenByMine.push(e)),
    ];
    const t0 = Date.now();
    const out = await (await mine.send('secret search')).settled;
    await (await mine.send('public list')).settled;

    expect(seenByOther).toEqual([]);
    expect(seenByAll.map((e) => e.type)).toEqual(['tool_call:task_list', 'tool_result:task_list']);
    expect(seenByMine.map((e) => e.type)).toEqual(['tool_call:imap_search', 'tool_result:imap_search', 'tool_call:task_list', 'tool_result:task_list']);
    expect(seenByMine[0]).toMatchObject({ source: 'actor:researcher', private: true, sessionId: mine.id, payload: { q: 'invoices' }, callId: 'toolu_imap' });
    for (const sub of subs) sub.unsubscribe();

    // ...but present in session.executions() with every spec 002 field.
    const execs = await mine.executions();
    const imap = execs.find((e) => e.tool === 'imap_search')!;
    expect(imap).toMatchObject({
      kind: 'specialist_execution',
      sessionId: mine.id,
      turnId: out.turnId,
      actor: 'researcher',
      tool: 'imap_search',
      callId: 'toolu_imap',
      args: { q: 'invoices' },
      result: JSON.stringify({ hits: ['invoices-1', 'invoices-2'] }),
      resultTruncated: false,
      isError: false,
      scope: 'specialist',
      routing: 'routed',
    } satisfies Partial<ExecutionRecord>);
    expect(imap.bypassReason).toBeUndefined();
    expect(typeof imap.durationMs).toBe('number');
    expect(imap.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(imap.at)).toBeGreaterThanOrEqual(t0 - 1000);
    expect(execs.find((e) => e.tool === 'task_list')).toMatchObject({ kind: 'generalist_execution', scope: 'generalist', routing: 'routed' });
    // Nothing of it is in the other session.
    expect(await other.executions()).toEqual([]);
  });

  it('router:bypass:logged-with-reason — a bypass call publishes nothing on the router and logs its bypassReason', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('extract_dates', { q: 'next Friday at 10' }, 'toolu_x')) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'Friday 10:00')], 'complete')) },
      ],
    });
    rt.registries.tools.register({
      name: 'extract_dates',
      description: 'Inline date extraction',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      scope: 'specialist',
      routing: 'bypass',
      bypassRouting: { reason: 'latency: a pure inline extraction on the hot path' },
      justification: 'A typed extraction private to the scheduling actor.',
      handler: (a: { q: string }) => ({ date: 'friday', time: '10:00', from: a.q }),
    });
    rt.registries.actors.register({ name: 'scheduler', tools: ['extract_dates'] });
    const s = await rt.createSession({ actor: 'scheduler' });
    const routed: RoutedEvent[] = [];
    const subs = [rt.router.observe({}, (e) => routed.push(e)), rt.router.observe({ sessionId: s.id }, (e) => routed.push(e))];
    const rec = new Recorder(s);
    const out = await (await s.send('book next Friday at 10')).settled;
    for (const sub of subs) sub.unsubscribe();
    expect(out.finalizedBy).toBe('complete');
    expect(routed).toEqual([]);
    const [exec] = await s.executions();
    expect(exec).toMatchObject({
      kind: 'specialist_execution',
      tool: 'extract_dates',
      scope: 'specialist',
      routing: 'bypass',
      bypassReason: 'latency: a pure inline extraction on the hot path',
      args: { q: 'next Friday at 10' },
      isError: false,
      turnId: out.turnId,
      actor: 'scheduler',
    });
    // The session still publishes the call on its own stream (it is the session's own record).
    expect(rec.of('tool.called')).toMatchObject([{ tool: 'extract_dates', scope: 'specialist', routing: 'bypass', side: 'server' }]);
  });

  it('router:errors:are-results — a throwing handler becomes an is_error tool_result and an isError execution; the turn goes on', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('flaky', { q: 'x' }, 'toolu_flaky')) },
        { when: { on: 'rejection' }, respond: answer(respond([part('response', 'The lookup failed; try later.')], 'complete')) },
      ],
    });
    rt.registries.tools.register({
      name: 'flaky',
      description: 'Fails',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      scope: 'generalist',
      handler: async () => {
        throw new Error('backend down');
      },
    });
    rt.registries.actors.register({ name: 'a', tools: ['flaky'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('go')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(toolResultsIn(model.requests[1]!)[0]).toMatchObject({ tool_use_id: 'toolu_flaky', is_error: true, content: 'tool "flaky" failed: backend down' });
    expect(rec.of('tool.result')[0]).toMatchObject({ isError: true, view: 'tool "flaky" failed: backend down' });
    expect((await s.executions())[0]).toMatchObject({ isError: true, tool: 'flaky' });
    // An error result carries no domain data into the envelope.
    expect(rec.of('envelope.settled')[0]!.envelope.parts.map((p) => p.metadata.partType)).toEqual(['response']);
  });

  it('router:execution-log:truncated — a large result is truncated in the log to executionResultMaxChars', async () => {
    const { rt, model } = harness(
      {
        rules: [
          { when: { on: 'user' }, respond: answer(toolUse('big', { q: 'x' })) },
          { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'ok')], 'complete')) },
        ],
      },
      { limits: { executionResultMaxChars: 200 } },
    );
    rt.registries.tools.register({
      name: 'big',
      description: 'Big result',
      inputSchema: { type: 'object' },
      scope: 'generalist',
      handler: () => ({ blob: 'x'.repeat(5000) }),
    });
    rt.registries.actors.register({ name: 'a', tools: ['big'] });
    const s = await rt.createSession({ actor: 'a' });
    await (await s.send('go')).settled;
    const [exec] = await s.executions();
    expect(exec!.resultTruncated).toBe(true);
    expect(exec!.result.length).toBeLessThanOrEqual(200);
    // The model still gets the whole result.
    expect(toolResultsIn(model.requests[1]!)[0].content.length).toBeGreaterThan(5000);
  });

  it('tools:result:model-cap — "a longer one is cut, with a note saying how long it was": the model is shown at most toolResultMaxChars of a tool result (never half a surrogate pair), the tool.result event keeps it whole, and later requests carry only the cut text', async () => {
    const { rt, model } = harness(
      {
        rules: [
          { when: { on: 'user', text: 'first' }, respond: answer(toolUse('big', { q: 'x' })) },
          { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'ok')], 'complete')) },
          { when: { on: 'user' }, respond: answer(respond([part('response', 'again')], 'complete')) },
        ],
      },
      { limits: { toolResultMaxChars: 100 } },
    );
    // 99 characters, then an emoji (a surrogate pair) across the cut.
    const text = 'a'.repeat(99) + '\u{1F600}' + 'b'.repeat(5000);
    rt.registries.tools.register({ name: 'big', description: 'Big result', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => text });
    rt.registries.actors.register({ name: 'a', tools: ['big'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    await (await s.send('first')).settled;
    const shown = toolResultsIn(model.requests[1]!)[0].content as string;
    expect(shown).toBe(`${'a'.repeat(99)}\n[truncated: the result is ${text.length} characters; the first 99 are shown]`);
    expect(rec.of('tool.result')[0]!.view).toBe(text);
    await (await s.send('second')).settled;
    const later = JSON.stringify(model.requests.at(-1)!.messages);
    expect(later).toContain('[truncated: the result is');
    expect(later).not.toContain('bbbb');
    // A cap of 0 would show the model nothing: refused.
    expect(() => harness({ rules: [] }, { limits: { toolResultMaxChars: 0 } })).toThrow(/limits\.toolResultMaxChars must be an integer of at least 1/);
  });

  it('tools:context:fields — a handler gets actorName, sessionId, turnId, callId, identity and, after approval, the decision', async () => {
    const { rt } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('whoami', { q: 'a' }, 'toolu_who'), toolUse('approved_op', { q: 'b' }, 'toolu_op')) },
        { respond: answer(respond([part('response', 'ok')], 'complete')) },
      ],
    });
    const seen: Record<string, any> = {};
    rt.registries.tools.register({
      name: 'whoami',
      description: 'ctx',
      inputSchema: { type: 'object' },
      scope: 'generalist',
      handler: (_a: unknown, ctx) => void (seen.who = { ...ctx, signal: typeof ctx.signal }),
    });
    rt.registries.tools.register({
      name: 'approved_op',
      description: 'ctx after approval',
      inputSchema: { type: 'object' },
      scope: 'generalist',
      requiresApproval: true,
      handler: (_a: unknown, ctx) => void (seen.op = { ...ctx, signal: typeof ctx.signal }),
    });
    rt.registries.actors.register({ name: 'desk', tools: ['whoami', 'approved_op'] });
    const s = await rt.createSession({ actor: 'desk', tenantId: 'acme' });
    const rec = new Recorder(s);
    const ref = await s.send('go', { principal: { userId: 'u-7', personId: 'p-7', tenantId: 'acme' } });
    await ref.settled;
    expect(seen.who).toMatchObject({ actorName: 'desk', sessionId: s.id, turnId: ref.turnId, callId: 'toolu_who', userId: 'u-7', personId: 'p-7', tenantId: 'acme', signal: 'object' });
    expect(seen.who.approvalDecision).toBeUndefined();
    const approvalId = rec.of('approval.requested')[0]!.approvalId;
    await s.answerApproval(approvalId, { approved: true, reason: 'fine' }, { userId: 'boss', tenantId: 'acme' }, 'websocket');
    await s.idle();
    expect(seen.op).toMatchObject({
      callId: 'toolu_op',
      turnId: ref.turnId,
      userId: 'u-7',
      approvalDecision: { approvalId, decision: 'approved', by: { userId: 'boss' }, via: 'websocket', reason: 'fine' },
    });
  });
});


describe('router streams through the runtime', () => {
  it('router:distribute:slow-destination-off-the-turn — an audit writer that never finishes holds up no turn; its views wait in its buffer', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user' }, respond: answer(toolUse('flight_search', { q: 'CFU' })) },
        { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'Two flights.')], 'complete')) },
      ],
    });
    const written: unknown[] = [];
    rt.router.filterAndDistribute.register({ id: 'audit', bufferSize: 8, deliver: (view) => (written.push(view), new Promise<void>(() => {})) });
    const results: string[] = [];
    rt.router.results$.subscribe((r) => void results.push(`${r.call.tool}:${r.outcome}:${r.attempts}`));
    rt.registries.tools.register({
      name: 'flight_search',
      description: 'Search flights',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      scope: 'generalist',
      handler: async () => annotate(flights, { kind: 'flights', fields: { '/flights/*/supplierCost': ['audit'] } }),
    });
    rt.registries.actors.register({ name: 'sally', tools: ['flight_search'] });
    const s = await rt.createSession({ actor: 'sally' });
    for (let i = 0; i < 3; i++) expect((await (await s.send(`flights ${i}`)).settled).finalizedBy).toBe('complete');
    // The model got each result at once (the llm-session view); the audit writer still holds the first.
    expect(model.requests).toHaveLength(6);
    expect(written).toHaveLength(1);
    expect(rt.router.filterAndDistribute.stats('audit')).toEqual({ delivered: 0, failed: 0, dropped: 0, pending: 3 });
    expect(results).toEqual(['flight_search:ok:1', 'flight_search:ok:1', 'flight_search:ok:1']);
    await rt.close();
  });
});
