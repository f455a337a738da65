/**
 * Envelope assembly at settlement (spec 001 "Assembly and delivery" step 6, "Partial envelopes";
 * docs/concepts/envelope.md).
 */
import { describe, expect, it } from 'vitest';
import { assembleEnvelope, mergeDomainData, peerData } from '../../src/envelope/assemble.js';
import { createRegistries } from '../../src/create-registries.js';
import type { MailboxEntry, Part } from '../../src/types.js';

const partTypes = createRegistries().partTypes;
const T = 'turn_2';
const at = '2026-04-20T09:50:00.000Z';
const text = (partType: string, t: string): Part => ({ text: t, metadata: { partType } });
const data = (partType: string, d: Record<string, unknown>): Part => ({ data: d, metadata: { partType } });
const record = (tool: string, callId: string, d: unknown, turnId = T): MailboxEntry => ({ kind: 'data', turnId, at, actor: 'sally', callId, tool, data: d });
const toolResult = (tool: string, callId: string): MailboxEntry => ({ kind: 'tool_result', turnId: T, at, actor: 'sally', callId, tool, content: '{}', isError: false });

function assemble(parts: Part[], mailbox: MailboxEntry[] = []) {
  return assembleEnvelope({ partTypes, parts, mailbox, sessionId: 'sess_abc123', turnId: T, producedAt: at, finalizedBy: 'complete' });
}

describe('envelope: one domain-data object (spec 001 step 6)', () => {
  it('envelope:domain-data:merge — two tools\' records and the actor\'s own domain-data become one domain-data part, each tool under its name', () => {
    const mailbox = [
      record('search_flights', 'c1', { flights: [{ id: 'EJ4521' }] }, 'turn_1'),
      toolResult('search_flights', 'c2'),
      record('search_flights', 'c2', { flights: [{ id: 'BA2043' }] }),
      record('check_prices', 'c3', { cheapest: 'BA2043' }),
    ];
    const env = assemble([text('response', 'Found one.'), data('domain-data', { route: { origin: 'LGW' } })], mailbox);
    expect(env.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data']);
    expect(env.parts[1]).toEqual({
      data: { search_flights: { flights: [{ id: 'BA2043' }] }, check_prices: { cheapest: 'BA2043' }, route: { origin: 'LGW' } },
      metadata: {
        partType: 'domain-data',
        sources: [
          { from: 'tool', tool: 'search_flights', callId: 'c2', pointer: '/search_flights' },
          { from: 'tool', tool: 'check_prices', callId: 'c3', pointer: '/check_prices' },
          { from: 'actor', part: 1, pointer: '' },
        ],
      },
    });
  });

  it('envelope:domain-data:repeated-tool — a tool that ran twice in the turn holds an array of its records in call order', () => {
    const m = mergeDomainData(
      [
        { tool: 'search_flights', callId: 'a', data: { to: 'CFU' } },
        { tool: 'search_flights', callId: 'b', data: { to: 'ATH' } },
      ],
      [],
    );
    expect(m.data).toEqual({ search_flights: [{ to: 'CFU' }, { to: 'ATH' }] });
    expect(m.sources.map((s) => s.pointer)).toEqual(['/search_flights/0', '/search_flights/1']);
  });

  it('envelope:domain-data:conflicts — objects merge member by member; a replaced value is a conflict naming the pointer, the tool it came from and the actor part; equal values are none', () => {
    const tool = { flights: [{ id: 'EJ4521', price: 94 }], currency: 'EUR', q: 'LGW-CFU' };
    const records = [{ tool: 'search_flights', callId: 'c1', data: tool }];
    const frozen = JSON.stringify(tool);
    const m = mergeDomainData(records, [
      { part: data('domain-data', { search_flights: { currency: 'GBP', q: 'LGW-CFU', note: 'converted' } }), index: 3 },
    ]);
    expect(m.data).toEqual({ search_flights: { flights: [{ id: 'EJ4521', price: 94 }], currency: 'GBP', q: 'LGW-CFU', note: 'converted' } });
    expect(m.conflicts).toEqual([
      {
        pointer: '/search_flights/currency',
        replaced: { from: 'tool', tool: 'search_flights', callId: 'c1', pointer: '/search_flights' },
        by: { from: 'actor', part: 3, pointer: '' },
      },
    ]);
    // The mailbox record is never mutated: the replaced value is still there for audit.
    expect(JSON.stringify(tool)).toBe(frozen);
  });

  it('envelope:domain-data:conflicts-replaced-source — "a replaced value is a conflict naming the pointer and both sources": `replaced` is the source that wrote the value, not an earlier actor part that never touched that key', () => {
    const m = mergeDomainData(
      [{ tool: 'search_flights', callId: 'toolu_1', data: { flights: ['TS205'] } }],
      [
        { part: data('domain-data', { route: { origin: 'LGW' } }), index: 1 },
        { part: data('domain-data', { search_flights: { flights: [] } }), index: 2 },
      ],
    );
    expect(m.conflicts).toEqual([
      {
        pointer: '/search_flights/flights',
        replaced: { from: 'tool', tool: 'search_flights', callId: 'toolu_1', pointer: '/search_flights' },
        by: { from: 'actor', part: 2, pointer: '' },
      },
    ]);
    // An earlier actor part that did write the key is the one named, over the tool under it;
    // escaped keys are matched as the merge escapes them.
    const again = mergeDomainData(
      [{ tool: 'a/b', callId: 'c1', data: { 'x~y': 1 } }],
      [
        { part: data('domain-data', { other: 1 }), index: 0 },
        { part: data('domain-data', { 'a/b': { 'x~y': 2 } }), index: 1 },
        { part: data('domain-data', { note: 'n' }), index: 2 },
        { part: data('domain-data', { 'a/b': { 'x~y': 3 } }), index: 3 },
      ],
    );
    expect(again.conflicts.map((c) => [c.pointer, c.replaced, c.by])).toEqual([
      ['/a~1b/x~0y', { from: 'tool', tool: 'a/b', callId: 'c1', pointer: '/a~1b' }, { from: 'actor', part: 1, pointer: '' }],
      ['/a~1b/x~0y', { from: 'actor', part: 1, pointer: '' }, { from: 'actor', part: 3, pointer: '' }],
    ]);
  });

  it('envelope:domain-data:conflicts-repeated-tool — "a replaced value is a conflict naming the pointer and both sources": a repeated tool\'s array replaced by the actor names the tool\'s last call as replaced, never the actor twice', () => {
    const m = mergeDomainData(
      [
        { tool: 'price', callId: 'c1', data: { p: 1 } },
        { tool: 'price', callId: 'c2', data: { p: 2 } },
      ],
      [{ part: data('domain-data', { price: { cheapest: 1 } }), index: 0 }],
    );
    expect(m.conflicts).toEqual([
      {
        pointer: '/price',
        replaced: { from: 'tool', tool: 'price', callId: 'c2', pointer: '/price/1' },
        by: { from: 'actor', part: 0, pointer: '' },
      },
    ]);
  });

  it('envelope:domain-data:actor-parts — two actor domain-data parts merge in order; the later one wins a conflict and it is recorded', () => {
    const env = assemble([data('domain-data', { a: 1, b: { c: 1 } }), text('response', 'ok'), data('domain-data', { a: 2, b: { d: 2 } })]);
    expect(env.parts.map((p) => p.metadata.partType)).toEqual(['domain-data', 'response']);
    expect(env.parts[0]!.data).toEqual({ a: 2, b: { c: 1, d: 2 } });
    expect(env.parts[0]!.metadata.conflicts).toEqual([{ pointer: '/a', replaced: { from: 'actor', part: 0, pointer: '' }, by: { from: 'actor', part: 2, pointer: '' } }]);
  });

  it('envelope:domain-data:proto-key — "nothing accepted is lost": a "__proto__" member of parsed data (a tool\'s or the actor\'s) stays a member of the merged domain-data, on the merge path and off it, and never becomes its prototype', () => {
    const actor = JSON.parse('{"__proto__": {"polluted": true}, "route": {"__proto__": {"x": 1}, "to": "CFU"}}') as Record<string, unknown>;
    const tool = JSON.parse('{"route": {"from": "LGW"}, "__proto__": {"y": 2}}') as Record<string, unknown>;
    for (const [records, what] of [
      [[], 'actor data alone'],
      [[{ tool: 'search', callId: 'c1', data: tool }], 'over a tool record'],
    ] as const) {
      const m = mergeDomainData(records, [{ part: data('domain-data', actor), index: 0 }]);
      expect(Object.getPrototypeOf(m.data), what).toBe(Object.prototype);
      expect((m.data as { polluted?: unknown }).polluted, what).toBeUndefined();
      expect(Object.keys(m.data), what).toContain('__proto__');
      expect(Object.getOwnPropertyDescriptor(m.data, '__proto__')?.value, what).toEqual({ polluted: true });
      const route = m.data.route as Record<string, unknown>;
      expect(Object.getOwnPropertyDescriptor(route, '__proto__')?.value, what).toEqual({ x: 1 });
      const actorJson = '"__proto__":{"polluted":true},"route":{"__proto__":{"x":1},"to":"CFU"}';
      expect(JSON.stringify(m.data), what).toBe(records.length ? `{"search":{"route":{"from":"LGW"},"__proto__":{"y":2}},${actorJson}}` : `{${actorJson}}`);
    }
    // A tool named __proto__ (a valid tool name) keeps its records under its name too, and an
    // actor's __proto__ member merges into them member by member, as any other key does.
    const named = mergeDomainData([{ tool: '__proto__', callId: 'c', data: { z: 3 } }], []);
    expect(Object.getOwnPropertyDescriptor(named.data, '__proto__')?.value).toEqual({ z: 3 });
    expect(Object.getPrototypeOf(named.data)).toBe(Object.prototype);
    const both = mergeDomainData([{ tool: '__proto__', callId: 'c', data: { z: 3 } }], [{ part: data('domain-data', actor), index: 1 }]);
    expect(Object.getOwnPropertyDescriptor(both.data, '__proto__')?.value).toEqual({ z: 3, polluted: true });
    expect(both.sources[0]).toEqual({ from: 'tool', tool: '__proto__', callId: 'c', pointer: '/__proto__' });
  });

  it('envelope:domain-data:peer — a peer envelope\'s domain-data is a data-bearing record of the turn: under /peer, by the tools\' rule, with its own source; the actor\'s data replaces it as it would a tool\'s', () => {
    const peer = peerData([text('response', 'EJ4521 £94'), data('domain-data', { fares: [{ id: 'EJ4521' }] }), data('domain-data', { currency: 'GBP' }), data('citation', { path: '/fares/0' })]);
    // A peer's several domain-data parts are one record (merged as an actor's are); no domain-data, no record.
    expect(peer).toEqual({ fares: [{ id: 'EJ4521' }], currency: 'GBP' });
    expect(peerData([text('response', 'nothing to add')])).toBeUndefined();
    const mailbox: MailboxEntry[] = [
      record('search_flights', 'c1', { flights: [] }),
      { kind: 'data', turnId: T, at, actor: 'sally', callId: `${T}:peer-envelope:0`, tool: 'peer', data: peer, from: 'peer' },
    ];
    const env = assemble([text('response', 'Found one.'), data('domain-data', { peer: { currency: 'EUR' } })], mailbox);
    expect(env.parts[1]).toEqual({
      data: { search_flights: { flights: [] }, peer: { fares: [{ id: 'EJ4521' }], currency: 'EUR' } },
      metadata: {
        partType: 'domain-data',
        sources: [
          { from: 'tool', tool: 'search_flights', callId: 'c1', pointer: '/search_flights' },
          { from: 'peer', callId: `${T}:peer-envelope:0`, pointer: '/peer' },
          { from: 'actor', part: 1, pointer: '' },
        ],
        conflicts: [{ pointer: '/peer/currency', replaced: { from: 'peer', callId: `${T}:peer-envelope:0`, pointer: '/peer' }, by: { from: 'actor', part: 1, pointer: '' } }],
      },
    });
  });

  it('envelope:domain-data:escaped-keys — tool names and keys with "/" or "~" are escaped in pointers (RFC 6901)', () => {
    const m = mergeDomainData([{ tool: 'a/b~c', callId: 'x', data: { v: 1 } }], [{ part: data('domain-data', { 'a/b~c': { v: 2 } }), index: 0 }]);
    expect(m.sources[0]!.pointer).toBe('/a~1b~0c');
    expect(m.conflicts[0]!.pointer).toBe('/a~1b~0c/v');
  });
});

describe('envelope: partial envelopes (spec 001 "Partial envelopes")', () => {
  it('envelope:partial:conversational — a turn with no data carries its response only, no domain-data', () => {
    const env = assemble([text('ack', 'On it.'), text('response', 'Hello!')]);
    expect(env.parts).toEqual([text('response', 'Hello!')]);
  });

  it('envelope:partial:no-surface — data without a surface: domain-data and llm-context, no a2ui-surface', () => {
    // llm-context is produced for a consumer only (spec 001): this turn's originator consumes it.
    const parts = [text('response', 'Two flights.'), data('domain-data', { n: 2 }), text('llm-context', 'Two direct flights.')];
    const env = assembleEnvelope({ partTypes, parts, mailbox: [], sessionId: 'sess_abc123', turnId: T, producedAt: at, finalizedBy: 'complete', consumesLlmContext: true });
    expect(env.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data', 'llm-context']);
  });

  it('envelope:partial:progress-only — progress, ack and thinking are streaming-only: an envelope of a progress-only turn has no parts', () => {
    const env = assemble([text('ack', 'Researching.'), data('progress', { done: 1, of: 3 }), text('thinking', 'Section two.')]);
    expect(env.parts).toEqual([]);
  });

  it('envelope:meta:fields — meta carries sessionId, turnId, producedAt and finalizedBy; warnings only when there are some', () => {
    expect(assemble([text('response', 'ok')]).meta).toEqual({ sessionId: 'sess_abc123', turnId: T, producedAt: at, finalizedBy: 'complete' });
  });

  it('envelope:llm-context:last — a translated llm-context part comes after the actor\'s parts and the merged domain-data', () => {
    const env = assembleEnvelope({
      partTypes,
      parts: [text('response', 'ok')],
      mailbox: [record('search_flights', 'c1', { n: 1 })],
      sessionId: 's',
      turnId: T,
      producedAt: at,
      finalizedBy: 'complete',
      llmContext: text('llm-context', 'dense'),
    });
    expect(env.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data', 'llm-context']);
  });
});

describe('envelope: citations bound to domain-data (spec 000 "citation")', () => {
  const mailbox = [record('search_flights', 'c1', { flights: [{ id: 'EJ4521' }] })];

  it('envelope:citation:bound — a citation whose data.path resolves in domain-data is kept', () => {
    const cite = data('citation', { path: '/search_flights/flights/0', url: 'https://fares.example' });
    const env = assemble([text('response', 'ok'), cite], mailbox);
    expect(env.parts).toContainEqual(cite);
    expect(env.meta.warnings).toBeUndefined();
  });

  it('envelope:citation:text — a text citation binds with metadata.path', () => {
    const cite: Part = { text: 'Fares from the search.', metadata: { partType: 'citation', path: '/search_flights/flights' } };
    expect(assemble([cite], mailbox).parts).toContainEqual(cite);
  });

  it('envelope:citation:unbound-dropped — a citation pointing at nothing is left out of the envelope and recorded in meta.warnings with the reason; the rest settles', () => {
    const bad = data('citation', { path: '/search_flights/flights/5', url: 'https://fares.example' });
    const env = assemble([text('response', 'ok'), bad], mailbox);
    expect(env.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data']);
    expect(env.meta.warnings).toEqual([{ code: 'citation.unbound', part: bad, message: expect.stringContaining('"/search_flights/flights/5" resolves to nothing') }]);
    expect(env.meta.warnings![0]!.message).toContain('array of 1');
  });

  it('envelope:citation:no-pointer — a citation without a pointer, or in a turn without domain-data, is left out with a warning saying what to set', () => {
    const bare = data('citation', { url: 'https://fares.example' });
    expect(assemble([bare], mailbox).meta.warnings![0]!.message).toContain('set data.path');
    const orphan = data('citation', { path: '/x' });
    expect(assemble([orphan]).meta.warnings![0]!.message).toContain('no domain-data');
  });

  it('envelope:citation:malformed — a pointer that is not RFC 6901 is reported, not thrown', () => {
    const env = assemble([data('citation', { path: 'search_flights' })], mailbox);
    expect(env.meta.warnings![0]!.message).toContain("must be '' or start with '/'");
  });
});
