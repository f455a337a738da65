/**
 * The pure mapping from SessionEvents to AAP items, on synthetic event sequences.
 */
import { describe, expect, it } from 'vitest';
import { fc, test as fcTest } from '@fast-check/vitest';
import { AapProjector, canonicalPartClass, denialText, type AapItem } from '../../../src/transports/aap/projector.js';
import { MessageBuilder, assistantText } from '../../../src/transports/aap/messages.js';
import type { SessionEvent, SessionEventBody } from '../../../src/types.js';

let seq = 0;
function ev(body: SessionEventBody, turnId = 't1'): SessionEvent {
  return { seq: ++seq, sessionId: 's1', turnId, at: '2026-01-01T00:00:00.000Z', ...body } as SessionEvent;
}
const started = (text = 'hi') => ev({ type: 'turn.started', actor: 'a', input: { text } });
const delta = (callId: string, index: number, text: string, partType?: string) =>
  ev({ type: 'part.delta', callId, index, text, ...(partType ? { partType } : {}) });
const part = (callId: string, index: number, partType: string, text: string) =>
  ev({ type: 'part.received', callId, index, part: { text, metadata: { partType } }, turnState: 'awaiting', actor: 'a' });
const called = (callId: string, tool: string, side: 'server' | 'client' = 'server', routing: 'routed' | 'bypass' = 'routed') =>
  ev({ type: 'tool.called', callId, tool, args: { q: 1 }, actor: 'a', side, ...(side === 'server' ? { scope: 'generalist' as const, routing } : {}) });
const result = (callId: string, tool: string, view: unknown, isError = false) => ev({ type: 'tool.result', callId, tool, view, isError });
const requested = (callId: string, tool: string) =>
  ev({ type: 'approval.requested', approvalId: `ap_${callId}`, callId, tool, args: { q: 1 }, actor: 'a', policyResult: { decision: 'ask', source: 'always' } });
const resolved = (callId: string, decision: 'approved' | 'denied', reason?: string) =>
  ev({ type: 'approval.resolved', approvalId: `ap_${callId}`, callId, decision, by: { userId: 'u' }, via: 'aap', ...(reason ? { reason } : {}) });
const settled = (stop?: 'max_tokens' | 'refusal' | 'error' | 'interrupted') =>
  ev({ type: 'turn.settled', finalizedBy: 'complete', usage: { inputTokens: 0, outputTokens: 0 }, ...(stop ? { stop } : {}) });

function project(events: SessionEvent[], granularity: 'delta' | 'whole', known: { callId: string; side: 'untrusted' | 'client'; turnId: string }[] = []) {
  const items: AapItem[] = [];
  const p = new AapProjector({ granularity, classify: canonicalPartClass, emit: (i) => items.push(i), knownCalls: known });
  for (const e of events) p.push(e);
  return { items, p };
}

describe('AapProjector', () => {
  it('aap:map:parts — response/ack/clarify/error become text, thinking/reasoning-trace become thinking, data parts nothing', () => {
    const { items } = project(
      [
        started(),
        part('r1', 0, 'ack', 'On it.'),
        part('r1', 1, 'thinking', 'Hmm.'),
        part('r2', 0, 'reasoning-trace', 'Because.'),
        ev({ type: 'part.received', callId: 'r2', index: 1, part: { data: { x: 1 }, metadata: { partType: 'domain-data' } }, turnState: 'awaiting', actor: 'a' }),
        part('r3', 0, 'response', 'Answer.'),
        part('r3', 1, 'clarify', 'Which one?'),
        part('r3', 2, 'error', 'Oops.'),
        part('r3', 3, 'progress', '50%'),
      ],
      'whole',
    );
    expect(items.filter((i) => i.kind !== 'user')).toEqual([
      { kind: 'text', text: 'On it.' },
      { kind: 'thinking', thinking: 'Hmm.' },
      { kind: 'thinking', thinking: 'Because.' },
      { kind: 'text', text: 'Answer.' },
      { kind: 'text', text: 'Which one?' },
      { kind: 'text', text: 'Oops.' },
    ]);
  });

  it('aap:map:delta-buffering — deltas before the part type is known are held, then flushed; the part tail completes the text', () => {
    const { items } = project(
      [delta('r1', 0, 'Hel'), delta('r1', 0, 'lo ', 'response'), delta('r1', 0, 'wor'), part('r1', 0, 'response', 'Hello world'), delta('r2', 0, 'x', 'thinking'), part('r2', 0, 'thinking', 'xyz')],
      'delta',
    );
    expect(items).toEqual([
      { kind: 'text_delta', delta: 'Hel' },
      { kind: 'text_delta', delta: 'lo ' },
      { kind: 'text_delta', delta: 'wor' },
      { kind: 'text_delta', delta: 'ld' },
      { kind: 'thinking_delta', delta: 'x' },
      { kind: 'thinking_delta', delta: 'yz' },
    ]);
  });

  it('aap:delta:part-boundary — in delta mode a boundary delta goes before each part that follows another of its class (text or thinking); the first part and a part of the other class get none; an empty part sends nothing', () => {
    const { items } = project(
      [
        part('a1', 0, 'ack', 'Looking up flights to Corfu.'),
        delta('t1', 0, 'Compar', 'thinking'),
        part('t1', 0, 'thinking', 'Comparing.'),
        part('x1', 0, 'reasoning-trace', ''),
        delta('r1', 0, 'I found', 'response'),
        part('r1', 0, 'response', 'I found 2.'),
        part('t2', 0, 'thinking', 'Done.'),
      ],
      'delta',
    );
    expect(items).toEqual([
      { kind: 'text_delta', delta: 'Looking up flights to Corfu.' },
      { kind: 'thinking_delta', delta: 'Compar' },
      { kind: 'thinking_delta', delta: 'ing.' },
      { kind: 'text_delta', delta: '\n\n' },
      { kind: 'text_delta', delta: 'I found' },
      { kind: 'text_delta', delta: ' 2.' },
      { kind: 'thinking_delta', delta: '\n\n' },
      { kind: 'thinking_delta', delta: 'Done.' },
    ]);
    // Whole mode keeps one item per part and needs no boundary.
    expect(project([part('a1', 0, 'ack', 'A.'), part('r1', 0, 'response', 'B.')], 'whole').items).toEqual([
      { kind: 'text', text: 'A.' },
      { kind: 'text', text: 'B.' },
    ]);
  });

  it('aap:map:delta-retracted — the held deltas of a retracted call (part type not known yet) never go out', () => {
    const { items } = project(
      [
        delta('r1', 0, 'Hasty'),
        ev({ type: 'part.retracted', callId: 'r1', reason: 'rejected' }),
        delta('r2', 0, 'Fine', 'response'),
        part('r2', 0, 'response', 'Fine.'),
      ],
      'delta',
    );
    expect(items).toEqual([
      { kind: 'text_delta', delta: 'Fine' },
      { kind: 'text_delta', delta: '.' },
    ]);
  });

  it('aap:map:delta-data-parts — deltas of a data-only or unknown part type never reach the client', () => {
    const { items } = project([delta('r1', 0, '{"a":', 'domain-data'), delta('r1', 1, 'pending'), part('r1', 0, 'domain-data', '')], 'delta');
    expect(items).toEqual([]);
  });

  it('aap:map:respond-hidden — respond() and bypass tools are never tool calls', () => {
    const { items } = project([called('c1', 'respond'), result('c1', 'respond', 'Recorded.'), called('c2', 'extract', 'server', 'bypass'), result('c2', 'extract', 'x')], 'whole');
    expect(items).toEqual([]);
  });

  it('aap:map:trusted — a routed server tool is a trusted tool_call then tool_result; content is a string (JSON for objects)', () => {
    const { items, p } = project([called('c1', 'search'), result('c1', 'search', { n: 2 }), settled()], 'whole');
    expect(items).toEqual([
      { kind: 'tool_call', toolCallId: 'c1', name: 'search', input: { q: 1 }, side: 'trusted' },
      { kind: 'tool_result', toolCallId: 'c1', content: '{"n":2}', side: 'trusted' },
    ]);
    expect(p.stopReason()).toBe('end_turn');
  });

  it('aap:map:untrusted — an approval-gated call is unresolved until granted and run, or denied with the spec text', () => {
    const a = project([called('c1', 'book'), requested('c1', 'book')], 'whole');
    expect(a.p.unresolvedCalls()).toEqual(['c1']);
    expect(a.p.stopReason()).toBe('tool_use');
    const granted = project([resolved('c1', 'approved'), result('c1', 'book', 'ok'), settled()], 'whole', [{ callId: 'c1', side: 'untrusted', turnId: 't1' }]);
    expect(granted.items).toEqual([{ kind: 'tool_result', toolCallId: 'c1', content: 'ok', side: 'untrusted' }]);
    const denied = project([resolved('c1', 'denied', 'no'), result('c1', 'book', 'Tool call denied: no', true)], 'whole', [{ callId: 'c1', side: 'untrusted', turnId: 't1' }]);
    expect(denied.items).toEqual([{ kind: 'tool_result', toolCallId: 'c1', content: 'Tool call denied: no', side: 'untrusted' }]);
    expect(denied.p.unresolvedCalls()).toEqual([]);
    expect(denialText(undefined)).toBe('Tool call denied');
    expect(denialText('too much')).toBe('Tool call denied: too much');
  });

  it('aap:map:approval-without-call — approval.requested alone still shows the tool_call once', () => {
    const { items } = project([requested('c9', 'book'), requested('c9', 'book')], 'whole');
    expect(items).toEqual([{ kind: 'tool_call', toolCallId: 'c9', name: 'book', input: { q: 1 }, side: 'untrusted' }]);
  });

  it('aap:map:client — a client tool call is unresolved; its injected result is marked client (never a server tool_result)', () => {
    const { items, p } = project([called('c1', 'geo', 'client')], 'whole');
    expect(items).toEqual([{ kind: 'tool_call', toolCallId: 'c1', name: 'geo', input: { q: 1 }, side: 'client' }]);
    expect(p.stopReason()).toBe('tool_use');
    const r = project([result('c1', 'geo', 'Lisbon')], 'whole', [{ callId: 'c1', side: 'client', turnId: 't1' }]);
    expect(r.items).toEqual([{ kind: 'tool_result', toolCallId: 'c1', content: 'Lisbon', side: 'client' }]);
  });

  it('aap:tool_result:matches-call — results for unknown calls are dropped, and at most one result per id', () => {
    const { items } = project([result('zz', 'x', 'orphan'), called('c1', 's'), result('c1', 's', 'one'), result('c1', 's', 'two')], 'whole');
    expect(items.filter((i) => i.kind === 'tool_result')).toEqual([{ kind: 'tool_result', toolCallId: 'c1', content: 'one', side: 'trusted' }]);
  });

  it('aap:map:ids-per-turn — a call id a model reuses in a later turn is a new call: nothing is hidden', () => {
    const { items } = project([called('c1', 's'), result('c1', 's', 'first'), { ...called('c1', 's'), turnId: 't2' }, { ...result('c1', 's', 'second'), turnId: 't2' }], 'whole');
    expect(items.filter((i) => i.kind === 'tool_result').map((i) => (i as { content: string }).content)).toEqual(['first', 'second']);
  });

  it('aap:stopReason:mapping — settled stops map to max_tokens, refusal, error; interrupted and normal settle to end_turn', () => {
    expect(project([settled('max_tokens')], 'whole').p.stopReason()).toBe('max_tokens');
    expect(project([settled('refusal')], 'whole').p.stopReason()).toBe('refusal');
    expect(project([settled('error')], 'whole').p.stopReason()).toBe('error');
    expect(project([settled('interrupted')], 'whole').p.stopReason()).toBe('end_turn');
    expect(project([settled()], 'whole').p.stopReason()).toBe('end_turn');
  });

  fcTest.prop([fc.array(fc.string({ minLength: 0, maxLength: 12 }), { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 12 }), fc.constantFrom('response', 'ack', 'thinking', 'clarify')])(
    'aap:content:same-across-modes — for any chunking and any point where the part type arrives, concatenated deltas equal the whole part',
    (chunks, typeAt, partType) => {
      const full = chunks.join('');
      const events = chunks.map((c, i) => delta('rx', 0, c, i >= typeAt ? partType : undefined));
      events.push(part('rx', 0, partType, full));
      const d = project(events, 'delta').items;
      const w = project(events, 'whole').items;
      const join = (items: AapItem[]) => items.map((i) => (i.kind === 'text_delta' || i.kind === 'thinking_delta' ? i.delta : i.kind === 'text' ? i.text : i.kind === 'thinking' ? i.thinking : '')).join('');
      expect(join(d)).toBe(full);
      expect(join(w)).toBe(full);
      const cls = canonicalPartClass(partType);
      expect(d.every((i) => i.kind === (cls === 'text' ? 'text_delta' : 'thinking_delta'))).toBe(true);
    },
  );
});

describe('MessageBuilder', () => {
  it('aap:none:only-generated — user messages and client results are left out of a turn response; history keeps them', () => {
    const items: AapItem[] = [
      { kind: 'user', text: 'hi', turnId: 't' },
      { kind: 'thinking', thinking: 'hmm' },
      { kind: 'text', text: 'Checking.' },
      { kind: 'tool_call', toolCallId: 'c1', name: 's', input: {}, side: 'trusted' },
      { kind: 'tool_result', toolCallId: 'c1', content: 'r', side: 'trusted' },
      { kind: 'tool_call', toolCallId: 'c2', name: 'geo', input: {}, side: 'client' },
      { kind: 'tool_result', toolCallId: 'c2', content: 'Lisbon', side: 'client' },
      { kind: 'text', text: 'Done.' },
    ];
    const response = new MessageBuilder({ includeUser: false, includeClientResults: false, includeThinking: true });
    const full = new MessageBuilder({ includeUser: true, includeClientResults: true, includeThinking: true });
    const compacted = new MessageBuilder({ includeUser: true, includeClientResults: true, includeThinking: false });
    for (const i of items) {
      response.push(i);
      full.push(i);
      compacted.push(i);
    }
    expect(response.finish()).toEqual([
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'text', text: 'Checking.' }, { type: 'tool_use', toolCallId: 'c1', name: 's', input: {} }] },
      { role: 'tool', toolCallId: 'c1', content: 'r' },
      { role: 'assistant', content: [{ type: 'tool_use', toolCallId: 'c2', name: 'geo', input: {} }, { type: 'text', text: 'Done.' }] },
    ]);
    const f = full.finish();
    expect(f[0]).toEqual({ role: 'user', content: 'hi' });
    expect(f).toContainEqual({ role: 'tool', toolCallId: 'c2', content: 'Lisbon' });
    expect(JSON.stringify(compacted.finish())).not.toContain('thinking');
    expect(assistantText(f)).toBe('Checking.Done.');
  });

  it('aap:history:last-assistant-holds-unresolved — unresolved tool_use blocks move into the last message after trusted results', () => {
    const b = new MessageBuilder({ includeUser: true, includeClientResults: true, includeThinking: true });
    for (const i of [
      { kind: 'user', text: 'go', turnId: 't' },
      { kind: 'tool_call', toolCallId: 'u1', name: 'book', input: {}, side: 'trusted' },
      { kind: 'tool_call', toolCallId: 't1', name: 'search', input: {}, side: 'trusted' },
      { kind: 'tool_result', toolCallId: 't1', content: 'r', side: 'trusted' },
    ] as AapItem[])
      b.push(i);
    const out = b.finish(['u1']);
    expect(out).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'tool_use', toolCallId: 't1', name: 'search', input: {} }] },
      { role: 'tool', toolCallId: 't1', content: 'r' },
      { role: 'assistant', content: [{ type: 'tool_use', toolCallId: 'u1', name: 'book', input: {} }] },
    ]);
  });

  it('aap:none:string-content — an assistant message of one text block is written as a string', () => {
    const b = new MessageBuilder({ includeUser: false, includeClientResults: false, includeThinking: true });
    b.push({ kind: 'text', text: 'Just this.' });
    expect(b.finish()).toEqual([{ role: 'assistant', content: 'Just this.' }]);
  });
});
