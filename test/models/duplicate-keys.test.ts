import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { firstDuplicateKey } from '../../src/models/duplicate-keys.js';

describe('firstDuplicateKey', () => {
  it('respond:json:duplicate-key — names the first repeated key as a JSON Pointer, at any depth', () => {
    expect(firstDuplicateKey('{"parts":[{"metadata":{"partType":"response"},"text":"a","text":"b"}],"turnState":"complete"}')).toBe('/parts/0/text');
    expect(firstDuplicateKey('{"a":1,"a":2}')).toBe('/a');
    expect(firstDuplicateKey('{"parts":[{},{"x":{"y":1,"y":2}}]}')).toBe('/parts/1/x/y');
    expect(firstDuplicateKey('{"a/b":1,"a/b":2}')).toBe('/a~1b');
    // Compared decoded: an escaped spelling of the same key is the same key.
    expect(firstDuplicateKey('{"text":"a","te\\u0078t":"b"}')).toBe('/te\\u0078t'.replace('\\u0078', 'x'));
  });

  it('respond:json:duplicate-key — equal keys in different objects, keys equal to string values, and escaped quotes are not duplicates', () => {
    expect(firstDuplicateKey('{"parts":[{"text":"a"},{"text":"b"}]}')).toBeUndefined();
    expect(firstDuplicateKey('{"text":"text","t":{"text":"\\"text\\":"}}')).toBeUndefined();
    expect(firstDuplicateKey('{"a":"x\\\\","b":"y"}')).toBeUndefined();
    expect(firstDuplicateKey('[{"a":1},{"a":1}]')).toBeUndefined();
    expect(firstDuplicateKey('"text"')).toBeUndefined();
  });

  it('respond:json:duplicate-key — agrees with a reference on arbitrary JSON (stringify never repeats a key)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), (v) => {
        expect(firstDuplicateKey(JSON.stringify(v))).toBeUndefined();
        if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
          const [k] = Object.keys(v);
          const text = JSON.stringify(v);
          const repeated = `${text.slice(0, -1)},${JSON.stringify(k)}:0}`;
          expect(firstDuplicateKey(repeated)).toBe(`/${k!.replace(/~/g, '~0').replace(/\//g, '~1')}`);
        }
      }),
      { numRuns: 300 },
    );
  });
});
