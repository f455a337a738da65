import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { annotate, audienceIncludes, isAnnotatedRecord, type Audience } from '../../src/router/annotated.js';
import { filterView } from '../../src/router/filter-distribute.js';
import { TurnstateError } from '../../src/errors.js';

interface Offer {
  flights: { id: string; supplierRef: string; price: number }[];
  internalCost: number;
  pricePerPerson: number;
  'a/b'?: string;
}

const offer: Offer = {
  flights: [
    { id: 'F1', supplierRef: 'S-991', price: 120 },
    { id: 'F2', supplierRef: 'S-992', price: 140 },
  ],
  internalCost: 412.5,
  pricePerPerson: 129,
};

describe('annotate()', () => {
  it('router:annotated:json-safe — the record is plain JSON and is recognised after a JSON round trip', () => {
    const rec = annotate(offer, { kind: 'flights', fields: { '/internalCost': ['audit'] }, default: ['llm-session'] });
    const back: unknown = JSON.parse(JSON.stringify(rec));
    expect(isAnnotatedRecord(rec)).toBe(true);
    expect(isAnnotatedRecord(back)).toBe(true);
    expect(back).toEqual({
      kind: 'annotated-record',
      data: offer,
      fields: { '/internalCost': ['audit'] },
      default: ['llm-session'],
      dataKind: 'flights',
    });
    // The restored record filters exactly like the original.
    if (!isAnnotatedRecord(back)) throw new Error('unreachable');
    expect(filterView(back, 'llm-session')).toEqual(filterView(rec, 'llm-session'));
    expect(filterView(back, 'audit')).toEqual(filterView(rec, 'audit'));
  });

  it('router:annotated:json-safe — isAnnotatedRecord rejects look-alikes', () => {
    expect(isAnnotatedRecord(null)).toBe(false);
    expect(isAnnotatedRecord('annotated-record')).toBe(false);
    expect(isAnnotatedRecord({ kind: 'annotated-record' })).toBe(false);
    expect(isAnnotatedRecord({ kind: 'annotated-record', data: 1, default: 'x' })).toBe(false);
    expect(isAnnotatedRecord({ kind: 'flights', data: 1, default: [] })).toBe(false);
    expect(isAnnotatedRecord({ kind: 'annotated-record', data: null, fields: {}, default: [] })).toBe(true);
  });

  it('router:annotated:pointer-validated — a path that is not a JSON Pointer is rejected, naming it', () => {
    const bad = () => annotate({ a: 1 } as unknown, { fields: { internalCost: ['audit'] } });
    expect(bad).toThrow(TurnstateError);
    expect(bad).toThrow(/"internalCost" is not a JSON Pointer/);
    expect(() => annotate({} as unknown, { fields: { '/a~2b': ['audit'] } })).toThrow(/"\/a~2b".*~0.*~1/);
  });

  it('router:annotated:pointer-validated — an audience must be a list of non-empty ids', () => {
    expect(() => annotate({ a: 1 }, { fields: { '/a': 'audit' as unknown as Audience } })).toThrow(/audience of "\/a" must be an array/);
    expect(() => annotate({ a: 1 }, { fields: { '/a': ['audit', ''] } })).toThrow(/audience of "\/a" contains ""/);
    expect(() => annotate({ a: 1 }, { default: [3 as unknown as string] })).toThrow(/audience of `default` contains 3/);
    expect(() => annotate({ a: 1 }, { kind: '' })).toThrow(/`kind` must be a non-empty string/);
  });

  it('router:annotated:pointer-validated — typed paths: a misspelt path is a compile error', () => {
    // @ts-expect-error '/internalCots' is not a path of Offer
    const rec = () => annotate(offer, { fields: { '/internalCots': ['audit'] } });
    expect(rec).not.toThrow(); // valid JSON Pointer at run time; the type system catches the typo
    const ok = annotate(offer, { fields: { '/flights/*/supplierRef': ['audit'], '/flights/0/id': ['ui-stream'], '/a~1b': ['x'] } });
    expect(Object.keys(ok.fields)).toHaveLength(3);
  });

  it('router:annotated:default-audience — without `default`, unannotated nodes are visible everywhere', () => {
    const rec = annotate(offer, { fields: { '/internalCost': ['audit'] } });
    expect(rec.default).toEqual(['*']);
    expect(filterView(rec, 'formatter:sms')).toEqual({ flights: offer.flights, pricePerPerson: 129 });
    expect(filterView(rec, 'audit')).toEqual(offer);
  });

  it('router:annotated:most-specific-wins — longer path beats shorter; literal beats * ; ancestors inherit', () => {
    const rec = annotate(offer, {
      fields: {
        '/flights': ['audit'],
        '/flights/*/price': ['llm-session', 'audit'],
        '/flights/1/price': ['audit'],
        '/flights/*/id': ['llm-session', 'audit'],
      },
      default: ['llm-session', 'ui-stream'],
    });
    expect(filterView(rec, 'llm-session')).toEqual({
      flights: [{ id: 'F1', price: 120 }, { id: 'F2' }],
      internalCost: 412.5,
      pricePerPerson: 129,
    });
    // ui-stream may see nothing under /flights, so the list disappears entirely.
    expect(filterView(rec, 'ui-stream')).toEqual({ internalCost: 412.5, pricePerPerson: 129 });
    expect(filterView(rec, 'audit')).toEqual({ flights: offer.flights });
  });

  it('router:annotated:most-specific-wins — among equal lengths, the earlier literal segment wins', () => {
    const data = { a: { b: 1, c: 2 }, x: { b: 3 } };
    const rec = annotate(data, { fields: { '/a/*': ['p'], '/*/b': ['q'] }, default: [] });
    expect(filterView(rec, 'p')).toEqual({ a: { b: 1, c: 2 } });
    expect(filterView(rec, 'q')).toEqual({ x: { b: 3 } });
  });

  it('router:annotated:filtered-per-destination — hidden array elements are removed; root annotation', () => {
    const rec = annotate([{ v: 1 }, { v: 2 }, { v: 3 }], { fields: { '/1': ['audit'] }, default: ['ui-stream'] });
    expect(filterView(rec, 'ui-stream')).toEqual([{ v: 1 }, { v: 3 }]);
    expect(filterView(rec, 'audit')).toEqual([{ v: 2 }]);
    expect(filterView(rec, 'cache')).toBeUndefined();
    const root = annotate({ secret: 1 }, { fields: { '': ['audit'] } });
    expect(filterView(root, 'llm-session')).toBeUndefined();
    expect(filterView(root, 'audit')).toEqual({ secret: 1 });
  });

  it('router:annotated:filtered-per-destination — escaped keys and own __proto__ keys are filtered as data', () => {
    const data = JSON.parse('{"a/b":1,"t~x":2,"__proto__":{"polluted":true},"keep":3}') as Record<string, unknown>;
    const rec = annotate(data, { fields: { '/a~1b': ['audit'], '/t~0x': ['audit'], '/keep': ['audit'] }, default: ['llm-session'] });
    const llm = filterView(rec, 'llm-session') as Record<string, unknown>;
    expect(Object.keys(llm)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(llm)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(filterView(rec, 'audit')).toEqual({ 'a/b': 1, 't~x': 2, keep: 3 });
  });

  it('router:annotated:filtered-per-destination — audience patterns: id, *, prefix:*', () => {
    expect(audienceIncludes(['formatter:*'], 'formatter:email')).toBe(true);
    expect(audienceIncludes(['formatter:*'], 'formatter')).toBe(false);
    expect(audienceIncludes(['formatter:*'], 'ui-stream')).toBe(false);
    expect(audienceIncludes(['*'], 'anything')).toBe(true);
    expect(audienceIncludes(['audit'], 'audit')).toBe(true);
    expect(audienceIncludes([], 'audit')).toBe(false);
  });

  /* Property: the view equals a brute-force reference computed from the rule text. */
  const dests = ['llm-session', 'ui-stream', 'audit', 'formatter:email'] as const;
  const audienceArb = fc.subarray([...dests, '*', 'formatter:*']);
  const keyArb = fc.constantFrom('a', 'b', 'c');
  type Tree = number | { [k: string]: Tree };
  const treeArb: fc.Arbitrary<Tree> = fc.letrec<{ t: Tree }>((tie) => ({
    t: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.integer(), fc.dictionary(keyArb, tie('t'), { maxKeys: 3 })),
  })).t;
  const pointerArb = fc.array(fc.constantFrom('a', 'b', 'c', '*'), { maxLength: 3 }).map((s) => (s.length ? '/' + s.join('/') : ''));

  function better(p: string[], q: string[]): boolean {
    if (p.length !== q.length) return p.length > q.length;
    for (let i = 0; i < p.length; i++) if (p[i] !== q[i]) return p[i] !== '*';
    return false;
  }
  function audienceAt(path: string[], fields: Record<string, Audience>, dflt: Audience): Audience {
    let best: string[] | undefined;
    let aud: Audience = dflt;
    for (const [ptr, a] of Object.entries(fields)) {
      const segs = ptr === '' ? [] : ptr.slice(1).split('/');
      if (segs.length > path.length) continue;
      if (!segs.every((s, i) => s === '*' || s === path[i])) continue;
      if (best === undefined || better(segs, best)) {
        best = segs;
        aud = a;
      }
    }
    return aud;
  }
  const HIDE = Symbol('hide');
  function reference(v: Tree, path: string[], fields: Record<string, Audience>, dflt: Audience, dest: string): unknown {
    const visible = audienceIncludes(audienceAt(path, fields, dflt), dest);
    if (typeof v !== 'object') return visible ? v : HIDE;
    const out: Record<string, unknown> = {};
    let any = false;
    for (const [k, c] of Object.entries(v)) {
      const r = reference(c, [...path, k], fields, dflt, dest);
      if (r !== HIDE) {
        out[k] = r;
        any = true;
      }
    }
    return visible || any ? out : HIDE;
  }

  it('router:annotated:filtered-per-destination — property: every view equals the rule applied node by node', () => {
    fc.assert(
      fc.property(treeArb, fc.dictionary(pointerArb, audienceArb, { maxKeys: 5 }), audienceArb, (data, fields, dflt) => {
        const rec = annotate(data as unknown, { fields, default: dflt });
        for (const d of dests) {
          const ref = reference(data, [], fields, dflt, d);
          expect(filterView(rec, d)).toEqual(ref === HIDE ? undefined : ref);
        }
      }),
      { numRuns: 500 },
    );
  });
});
