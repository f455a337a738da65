/**
 * src/text.ts: cutting echoed text, well-formed messages.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clipForEcho, wellFormed } from '../src/text.js';

const hasLoneSurrogate = (s: string): boolean => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

describe('text helpers', () => {
  it('text:clip — "the cut never splits a surrogate pair", and the echo has a UTF-8 form', () => {
    expect(clipForEcho('abc', 40)).toBe('abc');
    expect(clipForEcho('a'.repeat(38) + '😀', 40)).toBe('a'.repeat(38) + '😀');
    expect(clipForEcho('a'.repeat(39) + '😀x', 40)).toBe('a'.repeat(39) + '…');
    expect(clipForEcho('a\ud800b', 40)).toBe('a\ufffdb');
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.integer({ min: 1, max: 50 }), (s, max) => {
        const out = clipForEcho(s, max);
        expect(hasLoneSurrogate(out)).toBe(false);
        expect(out.length).toBeLessThanOrEqual(max + 1);
      }),
    );
  });

  it('text:well-formed — "every lone surrogate replaced by U+FFFD (as String.prototype.toWellFormed)"', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(wellFormed(s)).toBe((s as string & { toWellFormed(): string }).toWellFormed());
      }),
    );
    expect(wellFormed('\udc00\ud83d\ude00\ud83d')).toBe('\ufffd😀\ufffd');
  });
});
