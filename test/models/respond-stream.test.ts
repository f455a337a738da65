import { JSONParser } from '@streamparser/json';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelEvent } from '../../src/machines/ports.js';
import type { PartDelta } from '../../src/respond/types.js';
import { createRespondStreamParser } from '../../src/respond/stream.js';
import { collect, request, rig } from './helpers.js';
import type { Rig } from './helpers.js';

/* ------------------------------------------------------------------ generators */

interface GenPart {
  text?: string;
  partType?: string;
  data?: Record<string, unknown>;
  /** Key order of the part object. */
  order: Array<'text' | 'metadata' | 'data'>;
}

const TRICKY = ['\n', '"', '\\', '/', '\t', '\u0000', '\u001f', 'é', 'ß', '€', '中文', '😀', '👩‍👩‍👧', '\u2028', '\ufeff', '\ud800', '\udfff', '\ud83d', '\ude00', 'a', ' '];
const tricky = fc.array(fc.oneof(fc.constantFrom(...TRICKY), fc.string({ unit: 'binary', maxLength: 6 }), fc.string({ maxLength: 8 })), { maxLength: 24 }).map((xs) => xs.join(''));

const part: fc.Arbitrary<GenPart> = fc.record({
  text: fc.option(tricky, { nil: undefined }),
  partType: fc.option(fc.constantFrom('ack', 'response', 'thinking', 'domain-data', 'x.custom-type'), { nil: undefined }),
  data: fc.option(fc.dictionary(fc.constantFrom('text', 'partType', 'a'), fc.string({ maxLength: 5 }), { maxKeys: 2 }), { nil: undefined }),
  order: fc.shuffledSubarray(['text', 'metadata', 'data'] as Array<'text' | 'metadata' | 'data'>, { minLength: 3, maxLength: 3 }),
});

/** JSON.stringify, optionally with every non-ASCII code unit written as a \uXXXX escape. */
function str(s: string, asciiOnly: boolean): string {
  const j = JSON.stringify(s);
  if (!asciiOnly) return j;
  return j.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function serialise(parts: GenPart[], turnFirst: boolean, asciiOnly: boolean, ws: string): string {
  const ps = parts.map((p) => {
    const fields: string[] = [];
    for (const k of p.order) {
      if (k === 'text' && p.text !== undefined) fields.push(`"text":${ws}${str(p.text, asciiOnly)}`);
      if (k === 'data' && p.data !== undefined) fields.push(`"data":${ws}${JSON.stringify(p.data)}`);
      if (k === 'metadata') fields.push(`"metadata":${ws}{${p.partType !== undefined ? `"partType":${ws}${str(p.partType, asciiOnly)}` : '"x":1'}}`);
    }
    return `{${ws}${fields.join(`,${ws}`)}${ws}}`;
  });
  const partsJson = `"parts":${ws}[${ps.join(`,${ws}`)}]`;
  const turn = `"turnState":${ws}"complete"`;
  return `{${ws}${turnFirst ? `${turn},${ws}${partsJson}` : `${partsJson},${ws}${turn}`}${ws}}`;
}

function cut<T extends { length: number; slice(a: number, b?: number): T }>(s: T, points: number[]): T[] {
  const cuts = [...new Set(points.map((p) => p % (s.length + 1)))].sort((a, b) => a - b);
  const out: T[] = [];
  let from = 0;
  for (const c of cuts) {
    out.push(s.slice(from, c));
    from = c;
  }
  out.push(s.slice(from));
  return out;
}

function checkDeltas(parts: GenPart[], deltas: PartDelta[]): void {
  parts.forEach((p, i) => {
    const mine = deltas.filter((d) => d.index === i);
    expect(mine.map((d) => d.text).join('')).toBe(p.text ?? '');
    // once a delta carries partType, every later delta of the part carries the same one
    const firstTyped = mine.findIndex((d) => d.partType !== undefined);
    if (firstTyped >= 0) {
      for (const d of mine.slice(firstTyped)) expect(d.partType).toBe(p.partType);
    }
    if (p.text !== undefined && p.text.length > 0 && p.partType !== undefined) {
      expect(mine.at(-1)?.partType).toBe(p.partType);
    }
    if (p.partType === undefined) expect(firstTyped).toBe(-1);
    // a delta never ends in the first half of a surrogate pair that continues in the next delta
    const texts = mine.map((d) => d.text).filter((t) => t.length > 0);
    texts.slice(0, -1).forEach((t, k) => {
      const last = t.charCodeAt(t.length - 1);
      const next = texts[k + 1]!.charCodeAt(0);
      expect(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff).toBe(false);
    });
  });
  for (const d of deltas) expect(d.index).toBeLessThan(parts.length);
}

/**
 * The prompt test's oracle, @streamparser/json, decodes a string's bytes with a TextDecoder left at
 * its default `ignoreBOM: false`, so a U+FEFF that starts a decoded run (written raw or as
 * `\ufeff`) is dropped from the value it reports; JSON.parse keeps it. The oracle is compared
 * with U+FEFF removed on both sides; the other properties check U+FEFF exactly.
 */
const withoutBom = (s: string): string => s.replaceAll('\ufeff', '');

/* ------------------------------------------------------------------ tests */

describe('respond stream parser', () => {
  it('respond:stream:concat — deltas per part concatenate to the final text for any chunking (string chunks)', () => {
    fc.assert(
      fc.property(
        fc.array(part, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom('', ' ', '\n  '),
        fc.array(fc.nat(), { maxLength: 40 }),
        (parts, turnFirst, asciiOnly, ws, points) => {
          const json = serialise(parts, turnFirst, asciiOnly, ws);
          expect(JSON.parse(json).parts.map((p: { text?: string }) => p.text)).toEqual(parts.map((p) => p.text));
          const deltas: PartDelta[] = [];
          const errors: Error[] = [];
          const parser = createRespondStreamParser((d) => deltas.push(d), { onError: (e) => errors.push(e) });
          for (const c of cut(json, points)) parser.push(c);
          parser.end();
          expect(errors).toEqual([]);
          expect(parser.failed).toBe(false);
          checkDeltas(parts, deltas);
        },
      ),
      { numRuns: 600 },
    );
  });

  it('respond:stream:concat-bytes — the same over UTF-8 byte chunks split inside multi-byte characters', () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(), { maxLength: 40 }), (parts, points) => {
        const json = serialise(parts, false, false, '');
        const bytes = enc.encode(json);
        // raw lone surrogates cannot be UTF-8 encoded; JSON.stringify escapes them, so none remain
        const deltas: PartDelta[] = [];
        const parser = createRespondStreamParser((d) => deltas.push(d));
        for (const c of cut(bytes, points)) parser.push(c);
        parser.end();
        expect(parser.failed).toBe(false);
        checkDeltas(parts, deltas);
      }),
      { numRuns: 400 },
    );
  });

  it('respond:stream:prompt — after every chunk, each part has received at least the text @streamparser/json has read so far', () => {
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 3 }), fc.boolean(), fc.array(fc.nat(), { maxLength: 30 }), (parts, asciiOnly, points) => {
        const json = serialise(parts, false, asciiOnly, '');
        const got: string[] = [];
        const parser = createRespondStreamParser((d) => {
          got[d.index] = (got[d.index] ?? '') + d.text;
        });
        // The oracle: a general streaming JSON parser reporting partial values by path.
        const seen: string[] = [];
        const oracle = new JSONParser({ emitPartialTokens: true, emitPartialValues: true, paths: ['$.parts.*.text'] });
        oracle.onValue = (info) => {
          const i = info.stack[2]?.key;
          if (typeof i === 'number' && typeof info.value === 'string') seen[i] = info.value;
        };
        for (const c of cut(json, points)) {
          parser.push(c);
          oracle.write(c);
          parts.forEach((p, i) => {
            // at least as prompt as the oracle (which reports nothing while a chunk ends inside an
            // escape), and never ahead of the document
            expect(withoutBom(got[i] ?? '').startsWith(withoutBom(seen[i] ?? ''))).toBe(true);
            expect((p.text ?? '').startsWith(got[i] ?? '')).toBe(true);
          });
        }
      }),
      // The counterexample that found the oracle's U+FEFF deviation, run every time.
      { numRuns: 400, examples: [[[{ text: '\ufeff\u0000', order: ['metadata', 'data', 'text'] }], false, []]] },
    );
  });

  it('respond:stream:grammar — after end(), failed is true exactly when JSON.parse rejects the input', () => {
    const valid = fc.tuple(fc.array(part, { minLength: 1, maxLength: 2 }), fc.boolean()).map(([ps, t]) => serialise(ps, t, false, ' '));
    const mutated = fc
      .tuple(valid, fc.nat(), fc.constantFrom('', '{', '}', '[', ']', ',', ':', '"', '\\', 'x', '1', '-', '.', 'e', 'n', 't', ' ', '\n', '\u0001', '\ufeff'), fc.boolean())
      .map(([j, at, ins, del]) => {
        const k = at % (j.length + 1);
        return j.slice(0, k) + ins + j.slice(del ? k + 1 : k);
      });
    const literals = fc.constantFrom('', ' ', '1', '-0', '01', '1.', '1e5', '-1.5E-3', 'tru', 'true', 'nul', 'null ', '[]', '[1,]', '{}', '{"a":}', '"x"', '"\\u12"', '{"parts":[]} x');
    const enc = new TextEncoder();
    fc.assert(
      // Over text chunks and over UTF-8 byte chunks alike. Only a deletion inside a string can leave a lone
      // surrogate, which the bytes carry as U+FFFD: valid there as well.
      fc.property(fc.oneof(mutated, literals), fc.array(fc.nat(), { maxLength: 10 }), fc.boolean(), (json, points, asBytes) => {
        let valid: boolean;
        try {
          JSON.parse(json);
          valid = true;
        } catch {
          valid = false;
        }
        const p = createRespondStreamParser(() => {});
        for (const c of asBytes ? cut(enc.encode(json), points) : cut(json, points)) p.push(c);
        p.end();
        expect(p.failed).toBe(!valid);
      }),
      // A byte order mark before the document: JSON.parse refuses it, over bytes as over text.
      { numRuns: 1500, examples: [['\ufeff{"parts":[{"text":"a","metadata":{"partType":"ack"}}],"turnState":"complete"}', [], true]] },
    );
  });

  it('respond:stream:invalid-json-named — a byte order mark, control character or emoji where JSON allows none is refused over bytes as over text, the error naming its code point', () => {
    const doc = '{"parts":[{"text":"a","metadata":{"partType":"ack"}}],"turnState":"complete"}';
    for (const [json, named] of [
      [`\ufeff${doc}`, 'U+FEFF'],
      [`{\u0001${doc.slice(1)}`, 'U+0001'],
      [`{"parts":x${doc.slice(10)}`, "'x'"],
      [`{"parts":😀${doc.slice(10)}`, 'U+1F600'],
    ] as const) {
      expect(() => JSON.parse(json)).toThrow();
      for (const chunk of [json, new TextEncoder().encode(json)]) {
        const errors: Error[] = [];
        const p = createRespondStreamParser(() => {}, { onError: (e) => errors.push(e) });
        p.push(chunk);
        p.end();
        expect(p.failed).toBe(true);
        expect(errors.map((e) => e.message)).toEqual([`unexpected ${named} in the respond() input JSON`]);
      }
    }
  });

  it('respond:stream:partType-last — partType after the text: an empty delta announces it, later deltas carry it', () => {
    const deltas: PartDelta[] = [];
    const p = createRespondStreamParser((d) => deltas.push(d));
    for (const c of ['{"parts":[{"text":"Hel', 'lo', '","metadata":{"partT', 'ype":"resp', 'onse"}},{"text":"a', '"', ',"metadata":{"partType":"ack"}}],"turnState":"complete"}']) {
      p.push(c);
    }
    p.end();
    expect(deltas).toEqual([
      { index: 0, text: 'Hel' },
      { index: 0, text: 'lo' },
      { index: 0, partType: 'response', text: '' },
      { index: 1, text: 'a' },
      { index: 1, partType: 'ack', text: '' },
    ]);
  });

  it('respond:stream:partType-first — partType before the text rides on every text delta, no empty delta', () => {
    const deltas: PartDelta[] = [];
    const p = createRespondStreamParser((d) => deltas.push(d));
    for (const c of ['{"parts":[{"metadata":{"partType":"ack"},"text":"Loo', 'king', ' up."}]', ',"turnState":"awaiting"}']) p.push(c);
    p.end();
    expect(deltas).toEqual([
      { index: 0, partType: 'ack', text: 'Loo' },
      { index: 0, partType: 'ack', text: 'king' },
      { index: 0, partType: 'ack', text: ' up.' },
    ]);
  });

  it('respond:stream:escapes-split — chunks split inside \\n, \\", \\uXXXX and surrogate-pair escapes', () => {
    const json = '{"parts":[{"metadata":{"partType":"response"},"text":"a\\nb\\"c\\u00e9d\\ud83d\\ude00e\\\\f"}],"turnState":"complete"}';
    const expected = 'a\nb"céd😀e\\f';
    for (let i = 1; i < json.length; i++) {
      for (let j = i + 1; j < Math.min(json.length, i + 9); j++) {
        const deltas: PartDelta[] = [];
        const p = createRespondStreamParser((d) => deltas.push(d));
        p.push(json.slice(0, i));
        p.push(json.slice(i, j));
        p.push(json.slice(j));
        p.end();
        expect(deltas.map((d) => d.text).join('')).toBe(expected);
        expect(deltas.some((d) => d.text.length > 0 && d.text.charCodeAt(d.text.length - 1) === 0xd83d)).toBe(false);
      }
    }
  });

  it('respond:stream:nested-text-ignored — a "text" key inside data or at other depths is not a part text', () => {
    const deltas: PartDelta[] = [];
    const p = createRespondStreamParser((d) => deltas.push(d));
    p.push('{"text":"top","parts":[{"data":{"text":"inner","metadata":{"partType":"no"}},"metadata":{"partType":"domain-data","text":"meta"}},{"text":"real","metadata":{"partType":"response"}}],"turnState":"complete"}');
    p.end();
    expect(deltas).toEqual([{ index: 1, text: 'real' }, { index: 1, partType: 'response', text: '' }]);
  });

  it('respond:stream:malformed — malformed input never throws; the first error is reported once, later input ignored', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 12 }), { maxLength: 12 }), (chunks) => {
        const errors: Error[] = [];
        const p = createRespondStreamParser(() => {}, { onError: (e) => errors.push(e) });
        expect(() => {
          for (const c of chunks) p.push(c);
          p.end();
          p.push('more');
          p.end();
        }).not.toThrow();
        expect(errors.length).toBeLessThanOrEqual(1);
        expect(p.failed).toBe(errors.length === 1);
      }),
      { numRuns: 300 },
    );
    const errors: Error[] = [];
    const p = createRespondStreamParser(() => {}, { onError: (e) => errors.push(e) });
    p.push('{"parts":[{"text":"ok"}]}');
    p.push(' } trailing');
    p.push('{"x":1}');
    expect(errors).toHaveLength(1);
    expect(p.failed).toBe(true);
  });

  it('respond:stream:consumer-throws — an exception from onDelta surfaces from push', () => {
    const p = createRespondStreamParser(() => {
      throw new Error('consumer bug');
    });
    expect(() => p.push('{"parts":[{"text":"x')).toThrow('consumer bug');
  });
});

describe('respond stream parser over the real SDK', () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.server.close();
    r = undefined;
  });

  it('models:stream:part-deltas — input.delta events from the SDK feed part deltas that rebuild every part text', async () => {
    const input = {
      parts: [
        { text: 'Looking up flights 🛫 for "you"…\n', metadata: { partType: 'ack' } },
        { data: { flights: [{ n: 'EJ4521', price: 94 }] }, metadata: { partType: 'domain-data' } },
        { text: 'EasyJet £94pp at 06:15; BA £187pp at 08:45 — ½ the price.\tDone.', metadata: { partType: 'response' } },
      ],
      turnState: 'complete',
    };
    r = await rig([{ content: [{ type: 'tool_use', name: 'respond', input, id: 'toolu_p' }], split: { seed: 42, maxChunk: 4 } }]);
    const deltas: PartDelta[] = [];
    const parser = createRespondStreamParser((d) => deltas.push(d));
    let final: ModelEvent | undefined;
    const { error } = await collect(
      (async function* () {
        for await (const ev of r!.model.stream(request(), new AbortController().signal)) {
          if (ev.type === 'input.delta') parser.push(ev.partialJson);
          if (ev.type === 'block.stop') {
            parser.end();
            final = ev;
          }
          yield ev;
        }
      })(),
    );
    expect(error).toBeUndefined();
    expect(final).toBeDefined();
    const text = (i: number) => deltas.filter((d) => d.index === i).map((d) => d.text).join('');
    expect(text(0)).toBe(input.parts[0]!.text);
    expect(text(1)).toBe('');
    expect(text(2)).toBe(input.parts[2]!.text);
    // text comes before metadata here: the partType is announced after the text, with an empty delta
    expect(deltas.filter((d) => d.index === 0).at(-1)).toEqual({ index: 0, partType: 'ack', text: '' });
    expect(deltas.length).toBeGreaterThan(10);
  });
});
