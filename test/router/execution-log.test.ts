import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildExecutionRecord, MemoryExecutionLog, toJsonText, truncateJson, truncateResult } from '../../src/router/execution-log.js';

describe('execution log helpers', () => {
  it('router:execution:truncated — short results are kept whole, long ones cut and flagged', () => {
    expect(truncateResult({ a: 1 }, 100)).toEqual({ result: '{"a":1}', resultTruncated: false });
    expect(truncateResult({ a: 'xxxxxxxx' }, 7)).toEqual({ result: '{"a":"x', resultTruncated: true });
    expect(truncateResult('hi', 4)).toEqual({ result: '"hi"', resultTruncated: false });
    expect(truncateResult(undefined, 10)).toEqual({ result: 'null', resultTruncated: false });
    expect(truncateResult({ a: 1 }, 0)).toEqual({ result: '', resultTruncated: true });
    expect(() => truncateResult(1, -1)).toThrow(RangeError);
    expect(() => truncateResult(1, 1.5)).toThrow(/non-negative integer/);
  });

  it('router:execution:truncated — a surrogate pair is never split', () => {
    const s = JSON.stringify('ab😀c'); // "ab😀c" -> the emoji is two code units at 3..4
    expect(truncateJson(s, 4)).toEqual({ result: '"ab', resultTruncated: true });
    expect(truncateJson(s, 5)).toEqual({ result: '"ab😀', resultTruncated: true });
  });

  it('router:execution:truncated — property: the result is a prefix, within the cap, flagged iff cut', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(200), (v, max) => {
        const full = toJsonText(v);
        const { result, resultTruncated } = truncateResult(v, max);
        expect(full.startsWith(result)).toBe(true);
        expect(result.length).toBeLessThanOrEqual(max);
        expect(resultTruncated).toBe(full.length > max);
        if (resultTruncated) expect(result.length).toBeGreaterThanOrEqual(max - 1);
      }),
    );
  });

  it('router:execution:truncated — unserialisable values are logged as a JSON string saying why', () => {
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    expect(JSON.parse(toJsonText(cyc))).toMatch(/^\[unserialisable: .*circular/i);
    expect(JSON.parse(toJsonText({ n: 1n }))).toMatch(/^\[unserialisable: /);
  });

  it('router:execution:fields — buildExecutionRecord sets every field (attempt 1 and outcome by default); bypassReason iff bypass', () => {
    const base = {
      sessionId: 's', turnId: 't', actor: 'a', tool: 'x', callId: 'c', args: { q: 1 }, resultJson: '{"ok":true}',
      isError: false, durationMs: 1.5, startedAt: 0, scope: 'specialist' as const, maxResultChars: 100,
    };
    const routed = buildExecutionRecord({ ...base, routing: 'routed', bypassReason: undefined });
    expect(routed).toEqual({
      kind: 'specialist_execution', sessionId: 's', turnId: 't', actor: 'a', tool: 'x', callId: 'c', args: { q: 1 },
      result: '{"ok":true}', resultTruncated: false, isError: false, durationMs: 1.5, at: '1970-01-01T00:00:00.000Z',
      scope: 'specialist', routing: 'routed', attempt: 1, outcome: 'ok',
    });
    const bypass = buildExecutionRecord({ ...base, routing: 'bypass', bypassReason: 'latency', approvalId: 'ap' });
    expect(bypass).toMatchObject({ routing: 'bypass', bypassReason: 'latency', approvalId: 'ap' });
    expect(buildExecutionRecord({ ...base, scope: 'generalist', routing: 'routed' }).kind).toBe('generalist_execution');
  });

  it('router:execution:truncated — a record cut to maxResultChars is flagged and never splits a surrogate pair', () => {
    const base = {
      sessionId: 's', turnId: 't', actor: 'a', tool: 'x', callId: 'c', args: {}, isError: false, durationMs: 0, startedAt: 0,
      scope: 'generalist' as const, routing: 'routed' as const, resultJson: JSON.stringify('ab😀c'),
    };
    expect(buildExecutionRecord({ ...base, maxResultChars: 4 })).toMatchObject({ result: '"ab', resultTruncated: true });
    expect(buildExecutionRecord({ ...base, maxResultChars: 5 })).toMatchObject({ result: '"ab😀', resultTruncated: true });
    expect(buildExecutionRecord({ ...base, maxResultChars: 7 })).toMatchObject({ result: '"ab😀c"', resultTruncated: false });
    expect(() => buildExecutionRecord({ ...base, maxResultChars: -1 })).toThrow(/non-negative integer/);
  });

  it('router:every-call:logged — MemoryExecutionLog filters and honours its capacity', () => {
    const log = new MemoryExecutionLog(2);
    const mk = (sessionId: string, tool: string) =>
      buildExecutionRecord({
        sessionId, turnId: 't', actor: 'a', tool, callId: tool, args: {}, resultJson: '1', isError: false,
        durationMs: 0, startedAt: 0, scope: 'generalist', routing: 'routed', maxResultChars: 10,
      });
    log.append(mk('s1', 'a'));
    log.append(mk('s2', 'b'));
    log.append(mk('s1', 'c'));
    expect(log.size).toBe(2);
    expect(log.list().map((r) => r.tool)).toEqual(['b', 'c']);
    expect(log.list({ sessionId: 's1' }).map((r) => r.tool)).toEqual(['c']);
    log.clear();
    expect(log.size).toBe(0);
  });
});
