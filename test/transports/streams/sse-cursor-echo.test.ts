/**
 * A refused SSE resume cursor echoes what the client sent, cut without splitting a character.
 */
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/transports/http.js';
import { parseCursor } from '../../../src/transports/streams/sse.js';

const hasLoneSurrogate = (s: string): boolean => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

function refusal(raw: string): HttpError {
  try {
    parseCursor(raw, '?after');
  } catch (e) {
    return e as HttpError;
  }
  throw new Error(`cursor ${JSON.stringify(raw)} was accepted`);
}

describe('SSE cursor echo', () => {
  it('sse:cursor:echo-whole-characters — "A refusal echoes at most 40 UTF-16 code units of it, never half a surrogate pair"', () => {
    const e = refusal('1'.repeat(39) + '😀x');
    expect(e).toMatchObject({ status: 400, code: 'cursor.invalid' });
    expect(hasLoneSurrogate(e.message)).toBe(false);
    expect(e.message).toBe(`?after must be a non-negative integer seq, got "${'1'.repeat(39)}…"`);
    // Exactly 40 units: echoed whole.
    expect(refusal('1'.repeat(38) + '😀').message).toContain(`"${'1'.repeat(38)}😀"`);
  });
});
