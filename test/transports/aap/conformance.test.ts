/**
 * AAP conformance (protocols.md 5.1) over loopback HTTP against the real runtime, the
 * ScriptedModel playing the travel desk, in all three stream modes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../../src/stores/memory.js';
import { checkResponse } from './conformance.js';
import { MODES, api, createSession, history, startHarness, stopReason, textOf, thinkingOf, toolCalls, toolResults, turn, user, type Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('AAP framing and ordering', () => {
  for (const mode of ['delta', 'message'] as const) {
    it(`aap:stream:sse-framing — stream "${mode}": 200 text/event-stream, one event: and one JSON data: line per event (${mode})`, async () => {
      const sid = await createSession(h.url);
      const r = await turn(h.url, sid, user('flights to Corfu', mode));
      checkResponse(r, mode);
      expect(r.raw.startsWith('event: turn_start\ndata: {}\n\n')).toBe(true);
    });
  }

  it('aap:stream:none-json-body — stream omitted or "none": 200 application/json, body exactly {stopReason, messages}', async () => {
    const sid = await createSession(h.url);
    const omitted = await turn(h.url, sid, { messages: [{ role: 'user', content: 'hello' }] });
    checkResponse(omitted, 'none');
    expect(Object.keys(omitted.json).sort()).toEqual(['messages', 'stopReason']);
    const explicit = await turn(h.url, sid, user('hello', 'none'));
    checkResponse(explicit, 'none');
  });

  it('aap:turn_start:first, aap:turn_stop:last — exactly one turn_start first and one turn_stop last; the connection closes after it', async () => {
    const sid = await createSession(h.url);
    for (const mode of ['delta', 'message'] as const) {
      const r = await turn(h.url, sid, user('flights to Lisbon', mode));
      const names = r.events.map((e) => e.event);
      expect(names[0]).toBe('turn_start');
      expect(names.indexOf('turn_start', 1)).toBe(-1);
      expect(names.at(-1)).toBe('turn_stop');
      expect(names.indexOf('turn_stop')).toBe(names.length - 1);
      // Every other event lies strictly between them.
      expect(names.slice(1, -1).every((n) => n !== 'turn_start' && n !== 'turn_stop')).toBe(true);
    }
  });

  it('aap:stream:delta-only-deltas, aap:stream:message-whole — delta mode never sends text/thinking; message mode never sends deltas', async () => {
    const sid = await createSession(h.url);
    const d = await turn(h.url, sid, user('flights to Corfu', 'delta'));
    const m = await turn(h.url, sid, user('flights to Corfu', 'message'));
    const dn = new Set(d.events.map((e) => e.event));
    const mn = new Set(m.events.map((e) => e.event));
    expect(dn.has('text_delta')).toBe(true);
    expect(dn.has('thinking_delta')).toBe(true);
    expect(dn.has('text') || dn.has('thinking')).toBe(false);
    expect(mn.has('text')).toBe(true);
    expect(mn.has('thinking')).toBe(true);
    expect(mn.has('text_delta') || mn.has('thinking_delta')).toBe(false);
    // Several deltas per part: text really streams.
    expect(d.events.filter((e) => e.event === 'text_delta').length).toBeGreaterThan(3);
    // One text event per message (part): the triage ack, then the flights answer.
    expect(m.events.filter((e) => e.event === 'text').map((e) => e.data.text)).toEqual([
      'Passing you to our flights desk for flights to Corfu.',
      'I found 2 direct flights to Corfu: TS205 at EUR 42 and TS101 at EUR 94. Say "book TS205" or "book TS101".',
    ]);
  });

  it('aap:content:same-across-modes — one scripted turn yields the same text and thinking in delta, message and none', async () => {
    const out: Record<string, { text: string; thinking: string; tools: string[]; stop: string }> = {};
    for (const mode of MODES) {
      const sid = await createSession(h.url);
      const r = await turn(h.url, sid, user('flights to Corfu', mode));
      checkResponse(r, mode);
      out[mode] = { text: textOf(r), thinking: thinkingOf(r), tools: toolCalls(r).map((c) => `${c.name}:${JSON.stringify(c.input)}`), stop: stopReason(r) };
    }
    expect(out.delta!.text).toContain('I found 2 direct flights to Corfu');
    expect(out.delta!.thinking).toBe('Searching direct flights to Corfu.');
    expect(out.message).toEqual(out.delta);
    expect(out.none).toEqual(out.delta);
  });

  it('aap:stream:undeclared-mode — a mode outside /meta capabilities.stream is refused with 400 naming /stream', async () => {
    const meta = await api(h.url, '/meta');
    expect(Object.keys(meta.json.agents[0].capabilities.stream).sort()).toEqual(['delta', 'message', 'none']);
    const sid = await createSession(h.url);
    const r = await turn(h.url, sid, user('hello', 'chunk' as never));
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('stream.unsupported');
    expect(r.json.error.path).toBe('/stream');
    expect(r.json.error.message).toContain('"chunk"');
  });

  it('aap:stream:undeclared-mode — a server declaring only "none" refuses "delta" before running anything', async () => {
    const { createAapTransport } = await import('../../../src/transports/aap/index.js');
    const { startServer } = await import('../../../src/transports/server.js');
    const srv = await startServer({ runtime: h.runtime, transports: [createAapTransport({ runtime: h.runtime, streamModes: ['none'] })], port: 0, closeRuntime: false });
    try {
      const meta = await api(srv.url, '/meta');
      expect(meta.json.agents[0].capabilities.stream).toEqual({ none: {} });
      const sid = await createSession(srv.url);
      const r = await turn(srv.url, sid, user('hello', 'delta'));
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('stream.unsupported');
      expect(await history(srv.url, sid)).toEqual([]);
    } finally {
      await srv.close();
    }
  });
});

describe('AAP tool calls', () => {
  it('aap:tool:trusted-inline — a trusted (routed) server tool gives tool_call then tool_result in the same stream and generation continues', async () => {
    for (const mode of MODES) {
      const sid = await createSession(h.url);
      const r = await turn(h.url, sid, user('flights to Corfu', mode));
      const facts = checkResponse(r, mode);
      expect(facts.stopReason).toBe('end_turn');
      const calls = toolCalls(r);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.name).toBe('search_flights');
      expect(calls[0]!.input).toEqual({ to: 'Corfu' });
      expect(toolResults(r).map((x) => x.toolCallId)).toEqual([calls[0]!.toolCallId]);
      if (mode !== 'none') {
        const names = r.events.map((e) => e.event);
        const iCall = names.indexOf('tool_call');
        const iResult = names.indexOf('tool_result');
        expect(iCall).toBeLessThan(iResult);
        // Text after the result: the agent kept going without a stop.
        expect(names.slice(iResult + 1).some((n) => n === 'text' || n === 'text_delta')).toBe(true);
      } else {
        expect(r.json.messages.map((m: any) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
      }
    }
  });

  it('aap:tool_result:hides-internal-fields — the routed tool result is the filtered view: the audit-only supplierCost never reaches AAP, only the audit destination', async () => {
    const sid = await createSession(h.url);
    const r = await turn(h.url, sid, user('flights to Corfu', 'message'));
    const content = toolResults(r)[0]!.content as string;
    const flights = JSON.parse(content).flights;
    expect(flights.map((f: any) => f.id)).toEqual(['TS205', 'TS101']);
    expect(content).not.toContain('supplierCost');
    expect(JSON.stringify(await history(h.url, sid))).not.toContain('supplierCost');
    // The audit destination did get it.
    const audited = h.desk!.audit.find((a) => a.sessionId === sid && a.tool === 'search_flights');
    expect((audited?.view as any).flights.map((f: any) => f.supplierCost)).toEqual([31, 70]);
  });

  it('aap:tool:unknown-names — an unexposed server tool (not in /meta tools) still appears in tool_call/tool_result', async () => {
    const meta = await api(h.url, '/meta');
    const exposed = meta.json.agents[0].tools.map((t: any) => t.name);
    expect(exposed).not.toContain('search_flights');
    const sid = await createSession(h.url, { name: 'triage' });
    const r = await turn(h.url, sid, user('flights to Oslo', 'delta'));
    expect(toolCalls(r).map((c) => c.name)).toEqual(['search_flights']);
  });

  it('aap:tool_call:unique-ids — toolCallIds are unique within the session across turns', async () => {
    const sid = await createSession(h.url);
    const ids: string[] = [];
    for (const mode of MODES) {
      const r = await turn(h.url, sid, user('flights to Rome', mode));
      ids.push(...toolCalls(r).map((c) => c.toolCallId));
    }
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });
});

describe('AAP tool results', () => {
  it('aap:tool_result:matches-call — over a whole session (inline, granted, denied) every tool_result follows its tool_call, in this stream or the stopped one before it, at most once', async () => {
    for (const mode of MODES) {
      const sid = await createSession(h.url);
      const shown = new Map<string, string>();
      const resulted = new Set<string>();
      for (const body of [
        user('flights to Corfu', mode),
        user('book TS101', mode),
        'grant',
        user('book TS205', mode),
        'deny',
      ] as const) {
        let request: Record<string, unknown>;
        if (typeof body === 'string') {
          const pending = [...shown.keys()].filter((id) => !resulted.has(id));
          expect(pending).toHaveLength(1);
          request = { stream: mode, messages: [{ role: 'tool_permission', toolCallId: pending[0], granted: body === 'grant', ...(body === 'deny' ? { reason: 'no' } : {}) }] };
        } else request = body;
        const r = await turn(h.url, sid, request);
        const facts = checkResponse(r, mode, shown);
        for (const [id, name] of facts.calls) {
          expect(shown.has(id)).toBe(false);
          shown.set(id, name);
        }
        for (const id of facts.results) {
          expect(resulted.has(id)).toBe(false);
          resulted.add(id);
        }
      }
      expect([...shown.values()]).toEqual(['search_flights', 'book_flight', 'book_flight']);
      expect(resulted.size).toBe(3);
    }
  });
});

describe('AAP stopReason', () => {
  it('aap:stopReason:end_turn — complete and clarifying turns end with end_turn', async () => {
    const sid = await createSession(h.url);
    const clarify = await turn(h.url, sid, user('I need flights', 'message'));
    checkResponse(clarify, 'message');
    expect(stopReason(clarify)).toBe('end_turn');
    expect(textOf(clarify)).toBe('Where would you like to fly to?');
    // The clarification path: the answer continues the conversation.
    const answer = await turn(h.url, sid, user('Corfu', 'none'));
    checkResponse(answer, 'none');
    expect(textOf(answer)).toContain('I found 2 direct flights to Corfu');
  });

  it('aap:stopReason:tool_use-iff-unresolved — an untrusted server tool stops the turn with tool_use; trusted ones never do', async () => {
    for (const mode of MODES) {
      const sid = await createSession(h.url);
      const search = await turn(h.url, sid, user('flights to Corfu', mode));
      expect(checkResponse(search, mode).stopReason).toBe('end_turn');
      const book = await turn(h.url, sid, user('book TS101', mode));
      const facts = checkResponse(book, mode);
      expect(facts.stopReason).toBe('tool_use');
      expect(facts.unresolved).toHaveLength(1);
      expect(toolCalls(book)[0]).toMatchObject({ name: 'book_flight', input: { flightId: 'TS101', totalCost: 94 } });
    }
  });

  it('aap:stopReason:error — a model failure mid-turn ends with exactly one turn_stop {"stopReason":"error"}', async () => {
    const hx = await startHarness({
      script: { rules: [{ when: { on: 'user' }, respond: { blocks: [], fail: { code: 'model.invalid_request', message: 'scripted failure' } } }] },
      setup: (rt) => rt.registries.actors.register({ name: 'a' }),
    });
    try {
      for (const mode of MODES) {
        const sid = await createSession(hx.url, { name: 'a' });
        const r = await turn(hx.url, sid, user('hi', mode));
        checkResponse(r, mode);
        expect(stopReason(r)).toBe('error');
        if (mode !== 'none') expect(r.events.filter((e) => e.event === 'turn_stop')).toHaveLength(1);
      }
    } finally {
      await hx.close();
    }
  });

  it('aap:stopReason:error-internal — an infrastructure failure (the store refuses a write mid-turn) still ends with exactly one turn_stop error', async () => {
    const store = createMemoryStore();
    const commit = store.commit.bind(store);
    let failing = false;
    (store as { commit: typeof store.commit }).commit = (id, step) => {
      if (failing && step.events?.some((e) => e.type === 'tool.result')) throw new Error('disk full');
      return commit(id, step);
    };
    const hx = await startHarness({ store });
    try {
      for (const mode of MODES) {
        const sid = await createSession(hx.url);
        failing = true;
        const r = await turn(hx.url, sid, user('flights to Corfu', mode));
        failing = false;
        checkResponse(r, mode);
        expect(stopReason(r)).toBe('error');
        if (mode !== 'none') expect(r.events.filter((e) => e.event === 'turn_stop')).toHaveLength(1);
      }
    } finally {
      await hx.close();
    }
  });

  it('aap:stopReason:max_tokens, aap:stopReason:refusal — passed through from the model', async () => {
    const R = (text: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text }], turnState: 'awaiting' } });
    const hx = await startHarness({
      script: {
        rules: [
          { when: { on: 'user', text: 'long' }, respond: { stopReason: 'max_tokens', blocks: [R('Part of a long answer')] } },
          { when: { on: 'user', text: 'unsafe' }, respond: { stopReason: 'refusal', blocks: [] } },
        ],
      },
      setup: (rt) => rt.registries.actors.register({ name: 'a' }),
    });
    try {
      for (const mode of MODES) {
        const sid = await createSession(hx.url, { name: 'a' });
        const long = await turn(hx.url, sid, user('long', mode));
        checkResponse(long, mode);
        expect(stopReason(long)).toBe('max_tokens');
        expect(textOf(long)).toContain('Part of a long answer');
        const refused = await turn(hx.url, sid, user('unsafe', mode));
        checkResponse(refused, mode);
        expect(stopReason(refused)).toBe('refusal');
      }
    } finally {
      await hx.close();
    }
  });
});
