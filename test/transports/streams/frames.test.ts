import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseClientFrame } from '../../../src/transports/streams/frames.js';

const hasLoneSurrogate = (s: string): boolean => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
const parse = (v: unknown, max = 4096) => parseClientFrame(Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)), false, max);

describe('streams: WebSocket client frame validation', () => {
  it('ws:frames:valid — every frame type is accepted with exactly its fields, ref echoed', () => {
    expect(parse({ type: 'subscribe', sessionId: 's', resumeFrom: 3, ref: 1 })).toEqual({ ok: true, frame: { type: 'subscribe', sessionId: 's', resumeFrom: 3, ref: 1 } });
    expect(parse({ type: 'subscribe', sessionId: 's' })).toEqual({ ok: true, frame: { type: 'subscribe', sessionId: 's' } });
    expect(parse({ type: 'unsubscribe', sessionId: 's' })).toEqual({ ok: true, frame: { type: 'unsubscribe', sessionId: 's' } });
    expect(parse({ type: 'send', sessionId: 's', text: 'hi' })).toEqual({ ok: true, frame: { type: 'send', sessionId: 's', text: 'hi' } });
    expect(parse({ type: 'approve', approvalId: 'a', reason: 'ok', ref: 'r' })).toEqual({ ok: true, frame: { type: 'approve', approvalId: 'a', reason: 'ok', ref: 'r' } });
    expect(parse({ type: 'deny', approvalId: 'a', sessionId: 's' })).toEqual({ ok: true, frame: { type: 'deny', approvalId: 'a', sessionId: 's' } });
    expect(parse({ type: 'ping' })).toEqual({ ok: true, frame: { type: 'ping' } });
  });

  it('ws:frames:invalid — the error names the field and keeps the ref when it could be read', () => {
    expect(parse({ type: 'subscribe', sessionId: 's', resumeFrom: 1.5, ref: 'x' })).toMatchObject({ ok: false, code: 'cursor.invalid', ref: 'x', message: expect.stringContaining('/resumeFrom') });
    expect(parse({ type: 'deny', approvalId: 'a', reason: 'r'.repeat(2001) })).toMatchObject({ ok: false, message: expect.stringContaining('/reason') });
    expect(parse({ type: 'send', sessionId: 'x'.repeat(257), text: 'hi' })).toMatchObject({ ok: false, message: expect.stringContaining('/sessionId') });
    expect(parse('null')).toMatchObject({ ok: false, message: expect.stringContaining('got null') });
    expect(parse('x'.repeat(5000))).toMatchObject({ ok: false, code: 'frame.too_large' });
    expect(parseClientFrame(Buffer.from('{}'), true, 100)).toMatchObject({ ok: false, code: 'frame.binary' });
  });

  it('ws:frames:action — a surface click { name, surfaceId, sourceComponentId, context } is accepted; a malformed one names the field', () => {
    const action = { name: 'approve', surfaceId: 'approval:book_flight:c1', sourceComponentId: 'approve', timestamp: '2026-06-01T10:00:00Z', context: { approvalId: 'appr_1' } };
    expect(parse({ type: 'action', sessionId: 's', action, ref: 'r' })).toEqual({ ok: true, frame: { type: 'action', sessionId: 's', action, ref: 'r' } });
    expect(parse({ type: 'action', sessionId: 's', action: { ...action, context: undefined } })).toMatchObject({ ok: true, frame: { action: { context: {} } } });
    expect(parse({ type: 'action', sessionId: 's', action: { ...action, name: '' } })).toMatchObject({ ok: false, message: expect.stringContaining('/action/name') });
    expect(parse({ type: 'action', sessionId: 's', action: { ...action, context: [1] } })).toMatchObject({ ok: false, message: expect.stringContaining('/action/context must be an object') });
    expect(parse({ type: 'action', sessionId: 's', action: 'approve' })).toMatchObject({ ok: false, message: expect.stringContaining('/action must be an A2UI action') });
  });

  it('ws:frames:echo-whole-characters — "the message quotes at most 40 UTF-16 code units of it, as it does an unknown field\'s name, never cutting a character in two"', () => {
    const type = 'a'.repeat(39) + '😀tail';
    const t = parse({ type });
    expect(t).toMatchObject({ ok: false, code: 'frame.unknown_type' });
    const tm = (t as { message: string }).message;
    expect(hasLoneSurrogate(tm)).toBe(false);
    expect(tm).toContain(`'${'a'.repeat(39)}…'`);
    const key = 'k'.repeat(39) + '👨‍👩‍👧';
    const k = parse({ type: 'ping', [key]: 1 });
    expect(k).toMatchObject({ ok: false, code: 'frame.invalid' });
    expect(hasLoneSurrogate((k as { message: string }).message)).toBe(false);
    expect((k as { message: string }).message).toContain(`/${'k'.repeat(39)}…`);
    // 40 units exactly: echoed whole, the emoji included.
    expect((parse({ type: 'a'.repeat(38) + '😀' }) as { message: string }).message).toContain(`'${'a'.repeat(38)}😀'`);
  });

  it('ws:frames:invalid-json-well-formed — frame.invalid_json carries "the JSON parser\'s message, with any unpaired surrogate in it replaced by U+FFFD"', () => {
    const r = parse('😀');
    expect(r).toMatchObject({ ok: false, code: 'frame.invalid_json' });
    const m = (r as { message: string }).message;
    expect(hasLoneSurrogate(m)).toBe(false);
    expect(m).toContain("Unexpected token '\ufffd'");
    expect(m).toContain('"😀" is not valid JSON');
  });

  it('ws:frames:limits-utf16 — "Characters are UTF-16 code units (String.length) in every length limit of a frame: a character outside the Basic Multilingual Plane counts 2"; the error message says the unit', () => {
    expect(parse({ type: 'ping', ref: '😀'.repeat(64) })).toEqual({ ok: true, frame: { type: 'ping', ref: '😀'.repeat(64) } });
    expect(parse({ type: 'ping', ref: '😀'.repeat(65) })).toEqual({ ok: false, code: 'frame.invalid', message: '/ref must be a string of at most 128 UTF-16 code units (an emoji counts 2) or a finite number' });
    expect(parse({ type: 'subscribe', sessionId: '😀'.repeat(128) })).toMatchObject({ ok: true });
    expect(parse({ type: 'subscribe', sessionId: '😀'.repeat(129) })).toMatchObject({ ok: false, message: '/sessionId must be a non-empty string of at most 256 UTF-16 code units (an emoji counts 2)' });
    expect(parse({ type: 'send', sessionId: 's', text: 'hi', consumes: ['😀'.repeat(128)] })).toMatchObject({ ok: true });
    expect(parse({ type: 'send', sessionId: 's', text: 'hi', consumes: ['😀'.repeat(129)] })).toMatchObject({ ok: false, code: 'message.invalid_consumes', message: expect.stringContaining('256 UTF-16 code units') });
    expect(parse({ type: 'deny', approvalId: 'a', reason: '😀'.repeat(1000) })).toMatchObject({ ok: true });
    expect(parse({ type: 'deny', approvalId: 'a', reason: '😀'.repeat(1001) })).toMatchObject({ ok: false, code: 'approval.invalid', message: expect.stringContaining('2000 UTF-16 code units') });
  });

  it('ws:frames:total — any input is answered with a frame or an error, never an exception', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify(v)), fc.record({ type: fc.constantFrom('subscribe', 'send', 'approve', 'ping', 'x'), sessionId: fc.anything(), text: fc.anything(), ref: fc.anything() }).map((v) => JSON.stringify(v) ?? '')), (s) => {
        const r = parse(s);
        if (!r.ok) expect(r.message.length).toBeGreaterThan(0);
        else expect(typeof r.frame.type).toBe('string');
      }),
      { numRuns: 500 },
    );
  });
});
