import { describe, expect, it } from 'vitest';
import { createRespondParser, RespondRule } from '../../src/respond/parse.js';
import type { RespondResult } from '../../src/respond/types.js';
import type { Registries, Violation } from '../../src/registries/types.js';
import { AUDIO_META, CTX, makeRegistries } from './helpers.js';

const parser = createRespondParser(makeRegistries());
const text = (partType: string, t = 'Some text.') => ({ text: t, metadata: { partType } });
const data = (partType: string, d: Record<string, unknown> = { k: 1 }) => ({ data: d, metadata: { partType } });

function rejected(r: RespondResult): { violations: Violation[]; message: string } {
  if (r.ok) throw new Error(`expected a rejection, got ${JSON.stringify(r.events)}`);
  return r;
}
function has(r: RespondResult, rule: string, path: string): boolean {
  return rejected(r).violations.some((v) => v.rule === rule && v.path === path);
}

describe('respond() parser: rules', () => {
  it('respond:parse:echo-whole-characters — a value or property name the model sent is echoed cut at whole characters: the refusal sent back to the model never holds half of an emoji', () => {
    const long = 'a'.repeat(59) + '😀tail';
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    for (const input of [{ parts: [text('response')], turnState: long }, { parts: [text('response')], turnState: 'complete', [long]: 1 }]) {
      const r = rejected(parser.parse(input, CTX));
      expect(r.message).toContain(`"${'a'.repeat(59)}…"`);
      expect(lone.test(r.message)).toBe(false);
    }
  });

  it('respond:parse:never-throws — any input gets a result', () => {
    const weird: unknown[] = [
      null, undefined, 0, -0, NaN, '', 'respond', true, [], [1, 2], {}, Symbol('x'), () => 1, 10n,
      { parts: null, turnState: null }, { parts: [null, 1, 'x', [], {}], turnState: 'complete' },
      { parts: [{ metadata: null }], turnState: 'complete' }, { parts: [{ metadata: { partType: 5 } }], turnState: 7 },
      Object.create(null), { __proto__: null, parts: [] }, { toString: 1, valueOf: 2, parts: [{ metadata: { partType: { toString: 3 } } }] },
      JSON.parse('{"__proto__": {"x": 1}, "parts": [{"__proto__": 1, "metadata": {"partType": "response"}, "text": "a"}], "turnState": "complete"}'),
    ];
    for (const input of weird) {
      const r = parser.parse(input, CTX);
      expect(typeof r.ok).toBe('boolean');
      if (!r.ok) {
        expect(r.violations.length).toBeGreaterThan(0);
        expect(typeof r.message).toBe('string');
      }
    }
    // A broken context is tolerated as "no handoff targets".
    const r = parser.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'drafter' }, null as never);
    expect(has(r, RespondRule.passToDeclaredTarget, '/passTo')).toBe(true);
  });

  it('respond:parts:non-empty — a call has at least one part', () => {
    const r = parser.parse({ parts: [], turnState: 'complete' }, CTX);
    expect(rejected(r).violations).toEqual([{ path: '/parts', rule: 'respond:parts:non-empty', message: expect.stringContaining('at least one part') }]);
  });

  it('respond:partType:registered — an unregistered part type is named with the allowed values', () => {
    const r = parser.parse({ parts: [text('response'), text('summary')], turnState: 'complete' }, CTX);
    const v = rejected(r).violations;
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ path: '/parts/1/metadata/partType', rule: 'respond:partType:registered' });
    expect(v[0]!.message).toContain('"summary"');
    expect(v[0]!.message).toContain("'response'");
    expect(v[0]!.message).toContain("'domain-data'");
    expect(v[0]!.message).not.toContain("'approval-request'");
  });

  it('respond:turnState:registered — an unregistered turn state is named with the allowed values', () => {
    const r = parser.parse({ parts: [text('response')], turnState: 'done' }, CTX);
    const v = rejected(r).violations;
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ path: '/turnState', rule: 'respond:turnState:registered' });
    for (const s of ['awaiting', 'complete', 'clarifying', 'error', 'suspended', 'delegated', 'passed']) expect(v[0]!.message).toContain(`'${s}'`);
  });

  it('respond:approval-parts:not-from-model — approval-request and approval-response parts are rejected', () => {
    for (const pt of ['approval-request', 'approval-response']) {
      const r = parser.parse({ parts: [text('ack'), data(pt, { approvalId: 'a1', decision: 'approved' })], turnState: 'suspended' }, CTX);
      const v = rejected(r).violations;
      expect(v).toEqual([{ path: '/parts/1/metadata/partType', rule: 'respond:approval-parts:not-from-model', message: expect.stringContaining('runtime') }]);
    }
    // Any consumer type registered with modelEmittable: false is treated the same.
    const reg = makeRegistries();
    reg.partTypes.register({ id: 'audit-note', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery }, modelEmittable: false } });
    const r = createRespondParser(reg).parse({ parts: [data('audit-note')], turnState: 'complete' }, CTX);
    expect(has(r, 'respond:approval-parts:not-from-model', '/parts/0/metadata/partType')).toBe(true);
  });

  it('respond:part:text-xor-data — a part carries text or data, not both and not neither', () => {
    const both = parser.parse({ parts: [{ text: 'x', data: { a: 1 }, metadata: { partType: 'reasoning-trace' } }], turnState: 'complete' }, CTX);
    expect(rejected(both).violations).toEqual([{ path: '/parts/0', rule: 'respond:part:text-xor-data', message: expect.stringContaining('not both') }]);
    const neither = parser.parse({ parts: [text('ack'), { metadata: { partType: 'domain-data' } }], turnState: 'complete' }, CTX);
    expect(rejected(neither).violations).toEqual([{ path: '/parts/1', rule: 'respond:part:text-xor-data', message: expect.stringContaining('give data') }]);
    // 'either' types accept one of them.
    expect(parser.parse({ parts: [text('citation'), data('citation')], turnState: 'complete' }, CTX).ok).toBe(true);
  });

  it('respond:part:carries — text types carry text, data types carry data', () => {
    const r = parser.parse({ parts: [data('response'), text('domain-data'), text('a2ui-surface')], turnState: 'complete' }, CTX);
    const v = rejected(r).violations;
    expect(v.map((x) => [x.rule, x.path])).toEqual([
      ['respond:part:carries', '/parts/0/data'],
      ['respond:part:carries', '/parts/1/text'],
      ['respond:part:carries', '/parts/2/text'],
    ]);
    expect(v[1]!.message).toContain("'domain-data' parts carry data");
    // data must be an object, not an array or a string.
    const arr = parser.parse({ parts: [{ data: [1, 2], metadata: { partType: 'domain-data' } }], turnState: 'complete' }, CTX);
    expect(has(arr, 'schema:type', '/parts/0/data')).toBe(true);
  });

  it('respond:text:non-empty — text must have a non-whitespace character', () => {
    for (const t of ['', ' ', '\n\t  \r\n', '\u00a0\u2003']) {
      const r = parser.parse({ parts: [text('response', t)], turnState: 'complete' }, CTX);
      expect(rejected(r).violations).toEqual([{ path: '/parts/0/text', rule: 'respond:text:non-empty', message: expect.any(String) }]);
    }
    expect(parser.parse({ parts: [text('response', ' .')], turnState: 'complete' }, CTX).ok).toBe(true);
  });

  it('respond:clarifying:clarify-part — clarifying carries a clarify part and no response part', () => {
    const ok = parser.parse({ parts: [text('clarify', 'Gatwick or Heathrow?')], turnState: 'clarifying' }, CTX);
    expect(ok.ok).toBe(true);
    const noClarify = parser.parse({ parts: [text('ack')], turnState: 'clarifying' }, CTX);
    expect(rejected(noClarify).violations).toEqual([
      { path: '/parts', rule: 'respond:turnState:requires-part', message: expect.stringContaining("'clarify' part") },
    ]);
    const withResponse = parser.parse({ parts: [text('clarify'), text('response')], turnState: 'clarifying' }, CTX);
    expect(rejected(withResponse).violations).toEqual([
      { path: '/parts/1/metadata/partType', rule: 'respond:turnState:forbids-part', message: expect.stringContaining("'response'") },
    ]);
    const both = parser.parse({ parts: [text('response')], turnState: 'clarifying' }, CTX);
    expect(rejected(both).violations.map((v) => v.rule).sort()).toEqual(['respond:turnState:forbids-part', 'respond:turnState:requires-part']);
  });

  it('respond:turnState:requires-part — a consumer state requiring a part type needs one', () => {
    const reg = makeRegistries();
    reg.partTypes.register({ id: 'audio', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery } } });
    reg.turnStates.register({
      id: 'voicemail',
      meta: { description: 'Leaves a voice message and ends the turn.', isTerminal: true, emitsEnvelope: true, holdsActor: false, requires: { partTypes: ['audio', 'response'] } },
    });
    // Registration refuses a state requiring a part the model cannot emit
    // (turn-states:requires:not-model-emittable); registries assembled by hand may still hold one,
    // and respond() still says why no call can declare it.
    const audited = {
      id: 'audited',
      isCanonical: false,
      meta: { description: 'Needs an approval-request.', isTerminal: true, emitsEnvelope: false, holdsActor: false, requires: { partTypes: ['approval-request'] } },
    };
    expect(() => reg.turnStates.register({ id: audited.id, meta: audited.meta })).toThrow(/approval-request/);
    const states = reg.turnStates;
    const list = [...states.list(), audited];
    const ids = list.map((d) => d.id);
    const handMade: Registries = {
      ...reg,
      turnStates: { get: (id) => (id === 'audited' ? audited : states.get(id)), has: (id) => id === 'audited' || states.has(id), list: () => list, ids: () => ids, register: (d) => states.register(d) },
    };
    const p = createRespondParser(handMade);
    const r = p.parse({ parts: [text('response')], turnState: 'voicemail' }, CTX);
    expect(rejected(r).violations).toEqual([{ path: '/parts', rule: 'respond:turnState:requires-part', message: expect.stringContaining("'audio'") }]);
    expect(p.parse({ parts: [data('audio', { audio: 'AAAA', mimeType: 'audio/ogg' }), text('response')], turnState: 'voicemail' }, CTX).ok).toBe(true);
    const runtimeOnly = p.parse({ parts: [text('response')], turnState: 'audited' }, CTX);
    expect(rejected(runtimeOnly).violations[0]!.message).toContain('cannot declare this state through respond()');
  });

  it('respond:turnState:forbids-part — a consumer state forbidding a part type rejects it', () => {
    const reg = makeRegistries();
    reg.turnStates.register({
      id: 'silent-end',
      meta: { description: 'Ends without an answer.', isTerminal: true, emitsEnvelope: false, holdsActor: false, requires: { forbidsPartTypes: ['response', 'llm-context'] } },
    });
    const r = createRespondParser(reg).parse({ parts: [text('ack'), text('response'), text('llm-context')], turnState: 'silent-end' }, CTX);
    expect(rejected(r).violations.map((v) => [v.rule, v.path])).toEqual([
      ['respond:turnState:forbids-part', '/parts/1/metadata/partType'],
      ['respond:turnState:forbids-part', '/parts/2/metadata/partType'],
    ]);
  });

  it('respond:passTo:requires-passed — passTo present iff the turn state hands off', () => {
    const missing = parser.parse({ parts: [text('thinking', 'Handing off to the drafter.')], turnState: 'passed' }, CTX);
    expect(rejected(missing).violations).toEqual([{ path: '/passTo', rule: 'respond:passTo:requires-passed', message: expect.stringContaining("'drafter'") }]);
    const stray = parser.parse({ parts: [text('response')], turnState: 'complete', passTo: 'drafter' }, CTX);
    expect(rejected(stray).violations).toEqual([{ path: '/passTo', rule: 'respond:passTo:requires-passed', message: expect.stringContaining("'passed'") }]);
    const ok = parser.parse({ parts: [text('thinking', 'Handing off to the drafter.')], turnState: 'passed', passTo: 'drafter' }, CTX);
    expect(ok.ok).toBe(true);
    // Generalised: a consumer handoff state needs passTo too.
    const reg = makeRegistries();
    reg.turnStates.register({
      id: 'transferred',
      meta: { description: 'Transferred to a specialist.', isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true, requires: { passTo: true } },
    });
    const p = createRespondParser(reg);
    expect(has(p.parse({ parts: [text('ack')], turnState: 'transferred' }, CTX), 'respond:passTo:requires-passed', '/passTo')).toBe(true);
    expect(p.parse({ parts: [text('ack')], turnState: 'transferred', passTo: 'checker' }, CTX).ok).toBe(true);
  });

  it('respond:passTo:declared-target — passTo names a declared handoff target, never the actor itself', () => {
    const unknown = parser.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'billing' }, CTX);
    expect(rejected(unknown).violations).toEqual([{ path: '/passTo', rule: 'respond:passTo:declared-target', message: expect.stringContaining("'drafter', 'checker'") }]);
    const self = parser.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'planner' }, { actor: 'planner', handoffs: ['planner', 'drafter'] });
    expect(rejected(self).violations).toEqual([{ path: '/passTo', rule: 'respond:passTo:declared-target', message: expect.stringContaining('yourself') }]);
    const none = parser.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'drafter' }, { actor: 'solo', handoffs: [] });
    expect(rejected(none).violations[0]!.message).toContain('no handoff targets');
  });

  it('respond:clarify:terminal — "Replaces response when used ... Terminal for this turn; no envelope is built": a clarify part is refused in every canonical state but clarifying, pointing at turnState \'clarifying\'', () => {
    for (const turnState of ['awaiting', 'complete', 'error', 'delegated', 'passed']) {
      const call: Record<string, unknown> = { parts: [text('clarify', 'Gatwick or Heathrow?')], turnState };
      if (turnState === 'passed') call.passTo = 'drafter';
      const v = rejected(parser.parse(call, CTX)).violations;
      expect(v, turnState).toEqual([{ path: '/parts/0/metadata/partType', rule: 'respond:turnState:forbids-part', message: expect.stringContaining(`turnState '${turnState}' does not allow a 'clarify' part`) }]);
      expect(v[0]!.message, turnState).toContain("use turnState 'clarifying'");
    }
    // suspended is refused by the ordering rules too, but its metadata forbids clarify all the same.
    expect(has(parser.parse({ parts: [text('clarify')], turnState: 'suspended' }, CTX), 'respond:turnState:forbids-part', '/parts/0/metadata/partType')).toBe(true);
    expect(parser.parse({ parts: [text('clarify', 'Gatwick or Heathrow?')], turnState: 'clarifying' }, CTX).ok).toBe(true);
  });

  it('respond:passTo:registered-target — "names the actor to which this turn is handed off": a declared target that is not a registered actor is refused, naming it', () => {
    const reg = makeRegistries();
    reg.actors.register({ name: 'planner', handoffs: ['drafter', 'ghost'] });
    reg.actors.register({ name: 'drafter' });
    const p = createRespondParser(reg);
    const ctx = { actor: 'planner', handoffs: ['drafter', 'ghost'] };
    const ghost = rejected(p.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'ghost' }, ctx)).violations;
    expect(ghost).toEqual([{ path: '/passTo', rule: 'respond:passTo:registered-target', message: expect.stringContaining("'ghost' is not a registered actor") }]);
    expect(ghost[0]!.message).toContain("you may hand off to: 'drafter'");
    expect(p.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'drafter' }, ctx).ok).toBe(true);
    // A target registered later is accepted from then on.
    reg.actors.register({ name: 'ghost' });
    expect(p.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'ghost' }, ctx).ok).toBe(true);
    // A parser used outside a runtime, for a caller its registries do not hold, checks the declared targets only.
    expect(parser.parse({ parts: [text('thinking')], turnState: 'passed', passTo: 'drafter' }, CTX).ok).toBe(true);
  });

  it('respond:part-check:normalize — an accepted part whose check normalises its data is delivered normalised; the model\'s call is left as written', () => {
    const wrap = { rule: 'test:wrapped', check: () => [], normalize: (d: Readonly<Record<string, unknown>>) => ('list' in d ? undefined : { list: [d] }) };
    const p = createRespondParser(makeRegistries(), { partChecks: { 'domain-data': wrap } });
    const input = { parts: [text('response', 'Here.'), data('domain-data', { k: 1 }), data('domain-data', { list: [] })], turnState: 'complete' };
    const before = JSON.stringify(input);
    const r = p.parse(input, CTX);
    if (!r.ok) throw new Error(r.message);
    expect(r.call.parts.map((x) => x.data ?? x.text)).toEqual(['Here.', { list: [{ k: 1 }] }, { list: [] }]);
    expect(r.events.flatMap((e) => (e.type === 'part.received' ? [e.part] : []))).toEqual(r.call.parts);
    expect(r.call.parts[1]!.metadata).toBe(input.parts[1]!.metadata);
    expect(r.call.parts[2]).toBe(input.parts[2]);
    expect(JSON.stringify(input)).toBe(before);
    // Nothing to normalise: the input's own objects, as before.
    const plain = { parts: [data('domain-data', { list: [1] })], turnState: 'complete' };
    const q = p.parse(plain, CTX);
    expect(q.ok && q.call).toBe(plain);
  });

  it('respond:schema:shape — structural problems carry schema:* rule ids at their paths', () => {
    const r = parser.parse(
      { parts: [{ kind: 'text', text: 'x', metadata: { partType: 'response' } }, { text: 'y' }, { text: 5, metadata: {} }], passTo: 3, extra: true },
      CTX,
    );
    const got = rejected(r).violations.map((v) => [v.rule, v.path]);
    expect(got).toEqual(
      expect.arrayContaining([
        ['schema:required', '/turnState'],
        ['schema:additional-property', '/extra'],
        ['schema:additional-property', '/parts/0/kind'],
        ['schema:required', '/parts/1/metadata'],
        ['schema:type', '/parts/2/text'],
        ['schema:required', '/parts/2/metadata/partType'],
        ['schema:type', '/passTo'],
      ]),
    );
    expect(got).toHaveLength(7);
    // Extra tags inside metadata are fine and kept.
    const ok = parser.parse({ parts: [{ text: 'x', metadata: { partType: 'response', lang: 'en' } }], turnState: 'complete' }, CTX);
    expect(ok.ok && ok.events[0]!.type === 'part.received' && ok.events[0]!.part.metadata.lang).toBe('en');
    expect(rejected(parser.parse('respond', CTX)).violations).toEqual([{ path: '', rule: 'schema:type', message: expect.stringContaining('must be an object') }]);
  });

  it('respond:parse:events-order — n part.received carrying the turn state, then one turnState.changed', () => {
    const call = {
      parts: [text('response', 'Found 2 direct flights.'), data('domain-data', { flights: [] }), text('llm-context', 'EasyJet is cheaper.'), data('a2ui-surface', { version: 'v0.9' })],
      turnState: 'complete',
    };
    const r = parser.parse(call, CTX);
    expect(r).toEqual({
      ok: true,
      call,
      events: [
        { type: 'part.received', index: 0, part: call.parts[0], turnState: 'complete' },
        { type: 'part.received', index: 1, part: call.parts[1], turnState: 'complete' },
        { type: 'part.received', index: 2, part: call.parts[2], turnState: 'complete' },
        { type: 'part.received', index: 3, part: call.parts[3], turnState: 'complete' },
        { type: 'turnState.changed', to: 'complete' },
      ],
    });
    if (r.ok) expect(r.events[1]!.type === 'part.received' && r.events[1]!.part).toBe(call.parts[1]);
  });

  it('respond:parse:all-violations — every violation with its path; one line each, then the instruction', () => {
    const r = parser.parse(
      {
        parts: [text('summary'), { text: 'a', data: { b: 1 }, metadata: { partType: 'reasoning-trace' } }, text('response', '  '), data('approval-request')],
        turnState: 'complete',
        passTo: 'billing',
      },
      CTX,
    );
    const { violations, message } = rejected(r);
    expect(violations.map((v) => [v.path, v.rule])).toEqual([
      ['/parts/0/metadata/partType', 'respond:partType:registered'],
      ['/parts/1', 'respond:part:text-xor-data'],
      ['/parts/2/text', 'respond:text:non-empty'],
      ['/parts/3/metadata/partType', 'respond:approval-parts:not-from-model'],
      ['/passTo', 'respond:passTo:requires-passed'],
      ['/passTo', 'respond:passTo:declared-target'],
    ]);
    const lines = message.split('\n');
    expect(lines[0]).toBe('respond() call rejected, nothing from it was delivered: 6 problems.');
    expect(lines.slice(1, 7)).toEqual(violations.map((v) => `- ${v.path}: ${v.message} [${v.rule}]`));
    expect(lines[7]).toBe('Fix every problem listed and call respond() again with the whole corrected call.');
    expect(lines).toHaveLength(8);
  });

  it('respond:parse:all-violations — huge calls: all violations kept, the message capped', () => {
    const many = Array.from({ length: 20_000 }, () => text('nope'));
    const r = parser.parse({ parts: many, turnState: 'complete' }, CTX);
    const { violations, message } = rejected(r);
    expect(violations).toHaveLength(20_000);
    expect(violations[19_999]!.path).toBe('/parts/19999/metadata/partType');
    const lines = message.split('\n');
    expect(lines).toHaveLength(1 + 50 + 1 + 1);
    expect(lines[51]).toBe('- ... and 19950 more problems of the kinds above');
    const valid = Array.from({ length: 100_000 }, (_, i) => text('thinking', `step ${i}`));
    const ok = parser.parse({ parts: valid, turnState: 'awaiting' }, CTX);
    expect(ok.ok && ok.events.length).toBe(100_001);
  });
});
