import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStore } from '../../../src/machines/ports.js';
import { buildFrames } from '../../../src/models/loopback-frames.js';
import type { LoopbackReply } from '../../../src/models/loopback-server.js';
import { createSqliteStore } from '../../../src/stores/sqlite.js';
import { bodies, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

/** The final text: a newline, quotes, an accented letter, and two emoji (one sent as surrogate escapes). */
const FINAL_TEXT = 'Two direct options:\nEasyJet "EJ4521" £94pp at 06:15 — café 🛫 or BA £187pp at 08:45 😀.';
const FLIGHTS = { flights: [{ carrier: 'EasyJet', code: 'EJ4521', price: 94 }, { carrier: 'BA', code: 'BA2043', price: 187 }] };

/**
 * respond(response + domain-data, complete) as the model might write it: `text` before
 * `metadata` (partType last), é as \u00e9, 🛫 as a surrogate-pair escape; plus the cut points
 * that split chunks inside every escape and between the halves of the raw emoji.
 */
function finalCall(): { raw: string; cuts: number[] } {
  const textJson = JSON.stringify(FINAL_TEXT).replace('é', '\\u00e9').replace('🛫', '\\ud83d\\udeeb');
  const raw =
    `{"parts":[{"text":${textJson},"metadata":{"partType":"response"}},` +
    `{"data":${JSON.stringify(FLIGHTS)},"metadata":{"partType":"domain-data"}}],"turnState":"complete"}`;
  expect(JSON.parse(raw).parts[0].text).toBe(FINAL_TEXT);
  const at = (needle: string, offset: number) => {
    const i = raw.indexOf(needle);
    expect(i).toBeGreaterThan(0);
    return i + offset;
  };
  const cuts = [
    at('\\n', 1), // between \ and n
    at('\\"', 1), // between \ and "
    at('\\u00e9', 2), // after \u
    at('\\u00e9', 4), // after \u00
    at('\\ud83d\\udeeb', 3), // inside the high surrogate escape
    at('\\ud83d\\udeeb', 6), // between the two escapes
    at('\\ud83d\\udeeb', 9), // inside the low surrogate escape
    at('😀', 1), // between the halves of the raw surrogate pair
  ];
  for (let i = 3; i < raw.length; i += 3) cuts.push(i);
  return { raw, cuts: [...new Set(cuts)] };
}

/** The three-call turn of spec 000's multi-call pattern, checked end to end; returns what a store holds afterwards. */
async function threeCall(store?: SessionStore) {
  {
    const { raw, cuts } = finalCall();
    const finalReply: LoopbackReply = { content: [{ type: 'tool_use', name: 'respond', id: 'toolu_final', rawInput: raw }], split: cuts, pingEvery: 3, eventDelayMs: 2 };
    // what the server streams for call 3: many small input_json_delta chunks with pings between them
    const frames = buildFrames(finalReply, { model: 'claude-sonnet-4-6' }, 'msg_final');
    expect(frames.filter((f) => f.startsWith('event: content_block_delta')).length).toBeGreaterThan(80);
    expect(frames.filter((f) => f.startsWith('event: ping')).length).toBeGreaterThan(25);
    r = await rig({
      ...(store ? { runtime: { store } } : {}),
      script: [
        {
          content: [
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Looking up flights to Corfu.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'search_flights', id: 'toolu_search', input: { to: 'CFU' } },
          ],
          split: 7,
        },
        {
          content: [
            { type: 'tool_use', name: 'respond', id: 'toolu_thinking', input: { parts: [textPart('thinking', 'Filtering for direct options.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'filter_flights', id: 'toolu_filter', input: { direct: true } },
          ],
          split: 5,
        },
        finalReply,
      ],
    });
    const calls: string[] = [];
    r.rt.registries.tools.register({
      name: 'search_flights',
      description: 'Search flights to a destination airport.',
      inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
      scope: 'generalist',
      handler: async (a: { to: string }) => {
        calls.push(`search:${a.to}`);
        return FLIGHTS;
      },
    });
    r.rt.registries.tools.register({
      name: 'filter_flights',
      description: 'Filter the last search.',
      inputSchema: { type: 'object', properties: { direct: { type: 'boolean' } } },
      scope: 'generalist',
      handler: async (a: { direct?: boolean }) => {
        calls.push(`filter:${String(a.direct)}`);
        return { kept: 2 };
      },
    });
    r.rt.registries.actors.register({ name: 'sally', system: 'You are Sally, a travel agent.', tools: ['search_flights', 'filter_flights'] });
    const s = await r.rt.createSession({ actor: 'sally' });
    const rec = record(s, r.timeline);
    const out = await (await s.send('Direct flights to Corfu on 15 August?')).settled;

    expect(out.finalizedBy).toBe('complete');
    expect(calls).toEqual(['search:CFU', 'filter:true']);
    expect(r.server.requests).toHaveLength(3);
    expect(r.server.pending).toBe(0);

    // the routed tools ran through the router, each announced and answered
    expect(rec.of('tool.called').map((e) => [e.tool, e.routing, e.side])).toEqual([
      ['search_flights', 'routed', 'server'],
      ['filter_flights', 'routed', 'server'],
    ]);
    expect(rec.of('tool.result').map((e) => [e.callId, e.isError])).toEqual([
      ['toolu_search', false],
      ['toolu_filter', false],
    ]);

    // parts in order, each with the turn state of its call
    const received = rec.of('part.received');
    expect(received.map((e) => [e.callId, e.part.metadata.partType, e.turnState])).toEqual([
      ['toolu_ack', 'ack', 'awaiting'],
      ['toolu_thinking', 'thinking', 'awaiting'],
      ['toolu_final', 'response', 'complete'],
      ['toolu_final', 'domain-data', 'complete'],
    ]);
    expect(received[2]!.part.text).toBe(FINAL_TEXT);
    expect(received[3]!.part.data).toEqual(FLIGHTS);

    // seq order: ack < thinking < first delta of the final call < the final part.received
    const finalDeltas = rec.of('part.delta').filter((e) => e.callId === 'toolu_final');
    expect(finalDeltas.length).toBeGreaterThan(20);
    expect(received[0]!.seq).toBeLessThan(received[1]!.seq);
    expect(received[1]!.seq).toBeLessThan(finalDeltas[0]!.seq);
    expect(finalDeltas.at(-1)!.seq).toBeLessThan(received[2]!.seq);

    // against what the adapter yielded: ack and thinking were published before the final
    // respond() block started streaming; every delta of the final call before its block stopped,
    // and they interleave with the input chunks (not flushed at the end).
    const tl = r.timeline;
    const pos = (pred: (e: (typeof tl)[number]) => boolean) => tl.findIndex(pred);
    const lastPos = (pred: (e: (typeof tl)[number]) => boolean) => tl.length - 1 - [...tl].reverse().findIndex(pred);
    const finalStart = pos((e) => e.kind === 'model' && e.call === 2 && e.ev.type === 'block.start');
    const finalStop = pos((e) => e.kind === 'model' && e.call === 2 && e.ev.type === 'block.stop');
    const firstChunk = pos((e) => e.kind === 'model' && e.call === 2 && e.ev.type === 'input.delta');
    const lastChunk = lastPos((e) => e.kind === 'model' && e.call === 2 && e.ev.type === 'input.delta');
    expect(finalStart).toBeGreaterThan(0);
    const ackAt = pos((e) => e.kind === 'session' && e.ev.type === 'part.received' && e.ev.callId === 'toolu_ack');
    const thinkingAt = pos((e) => e.kind === 'session' && e.ev.type === 'part.received' && e.ev.callId === 'toolu_thinking');
    expect(ackAt).toBeGreaterThan(-1);
    expect(ackAt).toBeLessThan(thinkingAt);
    expect(thinkingAt).toBeLessThan(finalStart);
    const deltaPositions = tl.flatMap((e, i) => (e.kind === 'session' && e.ev.type === 'part.delta' && e.ev.callId === 'toolu_final' ? [i] : []));
    expect(deltaPositions).toHaveLength(finalDeltas.length);
    expect(Math.max(...deltaPositions)).toBeLessThan(finalStop);
    expect(Math.min(...deltaPositions)).toBeGreaterThan(firstChunk);
    expect(Math.min(...deltaPositions)).toBeLessThan(lastChunk);
    const finalReceivedAt = pos((e) => e.kind === 'session' && e.ev.type === 'part.received' && e.ev.callId === 'toolu_final');
    expect(finalReceivedAt).toBeGreaterThan(finalStop);

    // the deltas rebuild the text exactly; partType came after the text, so it is announced last
    const text0 = finalDeltas.filter((d) => d.index === 0);
    expect(text0.map((d) => d.text).join('')).toBe(FINAL_TEXT);
    expect(text0.at(-1)).toMatchObject({ text: '', partType: 'response' });
    expect(text0.slice(0, -1).every((d) => d.partType === undefined && d.text.length > 0)).toBe(true);
    // no delta ends in the first half of a surrogate pair
    for (const d of text0) {
      const last = d.text.charCodeAt(d.text.length - 1);
      expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
    }
    expect(finalDeltas.filter((d) => d.index === 1).map((d) => d.text).join('')).toBe('');

    // every streamed part of the earlier calls rebuilt too
    const joined = (callId: string) => rec.of('part.delta').filter((d) => d.callId === callId && d.index === 0).map((d) => d.text).join('');
    expect(joined('toolu_ack')).toBe('Looking up flights to Corfu.');
    expect(joined('toolu_thinking')).toBe('Filtering for direct options.');

    // the server streamed pings between the chunks; the SDK got all of it over HTTP
    expect(r.server.requests.every((q) => q.path === '/v1/messages' && q.body.stream === true)).toBe(true);

    // settlement: one domain-data object, the tool's record under its name merged with the actor's
    // own domain-data (spec 001 step 6); the final call's tool_result is never sent
    const env = rec.of('envelope.settled');
    expect(env).toHaveLength(1);
    expect(env[0]!.envelope.meta.finalizedBy).toBe('complete');
    expect(env[0]!.envelope.parts.filter((p) => p.metadata.partType === 'domain-data').map((p) => p.data)).toEqual([{ search_flights: FLIGHTS, filter_flights: { kept: 2 }, ...FLIGHTS }]);
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['ack', 'thinking', 'response', 'domain-data']);
    expect(rec.of('turn.settled')).toHaveLength(1);
    expect(rec.events.at(-1)!.type).toBe('turn.settled');

    // the third request carried both earlier exchanges
    const third = bodies(r.server)[2];
    const toolUseIds = third.messages.flatMap((m: any) => (m.role === 'assistant' ? m.content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.id) : []));
    expect(toolUseIds).toEqual(['toolu_ack', 'toolu_search', 'toolu_thinking', 'toolu_filter']);
    rec.stop();
    return { s, live: rec.events };
  }
}

describe('the Claude path: a three-call turn over the real SDK and the loopback server', () => {
  it('anthropic:three-call:progressive — ack and thinking reach subscribers before the final respond() streams; its part.delta text arrives before its block stops and concatenates to the final text', async () => {
    await threeCall();
  });

  it('anthropic:three-call:sqlite — the same on a SQLite file store (the serve default): as progressive, and the stored log is what subscribers saw', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-claude-'));
    try {
      const store = createSqliteStore({ path: join(dir, 'turnstate.db') });
      const { s, live } = await threeCall(store);
      const stored = await store.readEvents(s.id, 0);
      expect(stored.map((e) => [e.seq, e.type])).toEqual(live.map((e) => [e.seq, e.type]));
      expect(stored.filter((e) => e.type === 'part.delta').length).toBeGreaterThan(20);
    } finally {
      await r?.close();
      r = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
