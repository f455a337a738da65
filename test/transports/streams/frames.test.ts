import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseClientFrame } from '../../../src/transports/streams/frames.js';

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
