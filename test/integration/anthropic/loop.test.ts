/**
 * Turn-loop paths whose request shape the Messages API is strict about: a message joining while a
 * tool runs, free text under thinking, and an approval that suspends a thinking actor's loop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bodies, doneReply, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

/** Roles alternate, and after an assistant message with tool_use the next user message opens with one tool_result per tool_use, in order. */
function expectApiShape(body: any): void {
  const msgs = body.messages as Array<{ role: string; content: any[] }>;
  expect(msgs[0]!.role).toBe('user');
  for (let i = 1; i < msgs.length; i++) expect(msgs[i]!.role).not.toBe(msgs[i - 1]!.role);
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (m.role !== 'assistant') continue;
    const uses = m.content.filter((b) => b.type === 'tool_use').map((b) => b.id);
    if (uses.length === 0) continue;
    const next = msgs[i + 1]!.content;
    expect(next.slice(0, uses.length).map((b: any) => b.tool_use_id)).toEqual(uses);
    expect(next.slice(0, uses.length).every((b: any) => b.type === 'tool_result')).toBe(true);
  }
}

describe('the Claude path: loop shapes the API is strict about', () => {
  it('anthropic:loop:interrupt-during-tool — a message that joins while a tool runs goes after the tool_result in the next request', async () => {
    r = await rig({
      script: [
        {
          content: [
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Searching.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'slow_search', id: 'toolu_slow', input: { q: 'Corfu' } },
          ],
        },
        doneReply('toolu_done', 'Found it, and noted Tuesday.'),
      ],
    });
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    r.rt.registries.tools.register({
      name: 'slow_search',
      description: 'A slow search.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      scope: 'generalist',
      handler: async () => {
        await gate;
        return { hits: 1 };
      },
    });
    r.rt.registries.actors.register({ name: 'desk', tools: ['slow_search'] });
    const s = await r.rt.createSession({ actor: 'desk', doubleTexting: 'interrupt' });
    const rec = record(s);
    const first = await s.send('Search Corfu.');
    while (rec.of('tool.called').length === 0) await new Promise((res) => setTimeout(res, 2));
    const second = await s.send('Make it Tuesday.');
    expect(second.turnId).toBe(first.turnId);
    release();
    const out = await second.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(rec.of('tool.result').map((e) => [e.callId, e.isError])).toEqual([['toolu_slow', false]]);
    expect(r.server.requests).toHaveLength(2);
    const next = bodies(r.server)[1];
    expectApiShape(next);
    expect(next.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_ack', content: expect.any(String) },
        { type: 'tool_result', tool_use_id: 'toolu_slow', content: expect.stringContaining('1') },
        { type: 'text', text: 'Make it Tuesday.' },
      ],
    });
  });

  it('anthropic:loop:thinking-free-text — under thinking (tool_choice auto) free text is nudged, never delivered; the thinking goes back with it', async () => {
    r = await rig({
      script: [
        { content: [{ type: 'thinking', thinking: 'Just answer.', signature: 'sig-a' }, { type: 'text', text: 'Corfu is lovely in May.' }], stopReason: 'end_turn' },
        doneReply('toolu_done', 'Corfu is lovely in May.'),
      ],
    });
    r.rt.registries.actors.register({ name: 'thinker', thinking: { budgetTokens: 1024 } });
    const s = await r.rt.createSession({ actor: 'thinker' });
    const rec = record(s);
    const out = await (await s.send('When to visit Corfu?')).settled;
    expect(out.finalizedBy).toBe('complete');
    // the free text was never a part; the reasoning trace and the response were
    expect(rec.of('part.received').map((e) => e.part.metadata.partType)).toEqual(['reasoning-trace', 'response']);
    // deltas come from respond() only
    expect(rec.of('part.delta').every((e) => e.callId === 'toolu_done')).toBe(true);
    expect(rec.of('part.delta').map((e) => e.text).join('')).toBe('Corfu is lovely in May.');
    const second = bodies(r.server)[1];
    expectApiShape(second);
    expect(second.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Just answer.', signature: 'sig-a' },
        { type: 'text', text: 'Corfu is lovely in May.' },
      ],
    });
    expect(second.messages[2].role).toBe('user');
    expect(JSON.stringify(second.messages[2].content)).toMatch(/respond\(\)/);
  });

  it('anthropic:loop:approval-with-thinking — a call that needs approval suspends the turn; after the answer, the next request sends the thinking block and both tool_results', async () => {
    r = await rig({
      script: [
        {
          content: [
            { type: 'thinking', thinking: 'Booking needs approval.', signature: 'sig-book' },
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Booking it.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'book', id: 'toolu_book', input: { flight: 'EJ4521' } },
          ],
        },
        doneReply('toolu_done', 'Booked EJ4521.'),
      ],
    });
    const booked: string[] = [];
    r.rt.registries.tools.register({
      name: 'book',
      description: 'Book a flight.',
      inputSchema: { type: 'object', properties: { flight: { type: 'string' } }, required: ['flight'] },
      scope: 'generalist',
      requiresApproval: true,
      handler: async (a: { flight: string }) => {
        booked.push(a.flight);
        return { booked: a.flight };
      },
    });
    r.rt.registries.actors.register({ name: 'booker', tools: ['book'], thinking: { budgetTokens: 1024 } });
    const s = await r.rt.createSession({ actor: 'booker' });
    const rec = record(s);
    const held = await (await s.send('Book EJ4521.')).settled;
    expect(held.finalizedBy).toBe('suspended');
    expect(r.server.requests).toHaveLength(1);
    expect(booked).toEqual([]);
    const approvalId = rec.of('approval.requested')[0]!.approvalId;
    const res = await s.answerApproval(approvalId, { approved: true }, { userId: 'u1' }, 'test');
    expect(res.ok).toBe(true);
    await s.idle();
    expect(booked).toEqual(['EJ4521']);
    expect(rec.of('turn.settled').map((e) => e.finalizedBy)).toEqual(['complete']);
    const second = bodies(r.server)[1];
    expectApiShape(second);
    expect(second.messages[1].content[0]).toEqual({ type: 'thinking', thinking: 'Booking needs approval.', signature: 'sig-book' });
    expect(second.messages[2].content.map((b: any) => [b.tool_use_id, b.is_error === true])).toEqual([
      ['toolu_ack', false],
      ['toolu_book', false],
    ]);
  });
  it('anthropic:loop:handoff-and-clarify — a passTo hand-off and a clarifying turn then a follow-up: every request has the shape the API accepts', async () => {
    r = await rig({
      script: [
        // triage hands off
        {
          content: [
            {
              type: 'tool_use',
              name: 'respond',
              id: 'toolu_pass',
              input: { parts: [textPart('thinking', 'Handing you to flights.')], turnState: 'passed', passTo: 'flights' },
            },
          ],
        },
        // flights (thinking on) asks a question
        {
          content: [
            { type: 'thinking', thinking: 'Need the date.', signature: 'sig-f' },
            { type: 'tool_use', name: 'respond', id: 'toolu_q', input: { parts: [textPart('clarify', 'Which date?')], turnState: 'clarifying' } },
          ],
        },
        // the next turn starts again at the entry actor (triage), which answers
        doneReply('toolu_final', 'Direct flights on 15 August: two.'),
      ],
    });
    r.rt.registries.actors.register({ name: 'triage', handoffs: ['flights'] });
    r.rt.registries.actors.register({ name: 'flights', thinking: { budgetTokens: 1024 } });
    const s = await r.rt.createSession({ actor: 'triage' });
    const rec = record(s);
    const o1 = await (await s.send('Flights to Corfu?')).settled;
    expect(o1.finalizedBy).toBe('clarifying');
    expect(rec.of('actor.passed').map((e) => [e.from, e.to])).toEqual([['triage', 'flights']]);
    const o2 = await (await s.send('15 August.')).settled;
    expect(o2.finalizedBy).toBe('complete');
    expect(r.server.requests).toHaveLength(3);
    const [first, second, third] = bodies(r.server);
    for (const b of [first, second, third]) expectApiShape(b);
    // flights: its own thinking settings, and the hand-off as a user message (the last one)
    expect(second.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(second.tool_choice).toEqual({ type: 'auto' });
    expect(first.tool_choice).toEqual({ type: 'any' });
    expect(second.messages.at(-1).role).toBe('user');
    expect(JSON.stringify(second.messages)).toContain('Handing you to flights.');
    expect(JSON.stringify(second.messages)).not.toContain('toolu_pass');
    // the follow-up (triage again: no thinking): the clarify question is visible, the new message comes last
    expect(third.thinking).toBeUndefined();
    expect(JSON.stringify(third.messages)).toContain('Which date?');
    expect(third.messages.at(-1).content.at(-1)).toEqual({ type: 'text', text: '15 August.' });
  });
});
