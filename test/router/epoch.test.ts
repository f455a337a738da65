import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventRouter } from '../../src/router/router.js';
import { epochAt } from '../../src/router/epoch.js';
import { ToolRegistry } from '../../src/registries/tools.js';
import { compileApprovalPolicy } from '../../src/approvals/policy.js';

afterEach(() => vi.restoreAllMocks());

describe('router:execution-log:injected-clock: the default clock without a second clock read per call', () => {
  it("a record's `at` is the attempt's start on the wall clock (Date.now before and after the call bound it)", async () => {
    const reg = new ToolRegistry(compileApprovalPolicy);
    const tool = reg.register({ name: 't', description: 't', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => 'ok' });
    const router = new EventRouter();
    for (let i = 0; i < 50; i++) {
      const before = Date.now();
      const d = await router.dispatchTool(tool, {}, { actorName: 'a', sessionId: 's', turnId: 't', callId: `c${i}` });
      const after = Date.now();
      const at = Date.parse(d.execution.at);
      // Within a millisecond of Date.now() either side (clock slew over a second at most).
      expect(at).toBeGreaterThanOrEqual(before - 1);
      expect(at).toBeLessThanOrEqual(after + 1);
    }
  });

  it('epochAt is Date.now() at the reading, an integer', () => {
    const before = Date.now();
    const e = epochAt(performance.now());
    const after = Date.now();
    expect(Number.isInteger(e)).toBe(true);
    expect(e).toBeGreaterThanOrEqual(before - 1);
    expect(e).toBeLessThanOrEqual(after + 1);
  });

  it('a step of the system clock shows within a second of monotonic time, not before', () => {
    const real = Date.now();
    const spy = vi.spyOn(Date, 'now').mockReturnValue(real);
    const t = performance.now();
    // A replaced Date.now is read at once.
    expect(epochAt(t)).toBe(real);
    // (Readings a half ms off the whole: a difference of two readings is not exact in doubles.)
    // The clock steps an hour ahead: half a second later the old offset still holds...
    spy.mockReturnValue(real + 3_600_000);
    expect(epochAt(t + 500.5)).toBe(real + 500);
    // ...a second later the offset is read again.
    expect(epochAt(t + 1001)).toBe(real + 3_600_000);
    expect(epochAt(t + 1201.5)).toBe(real + 3_600_200);
  });

  it('a reading earlier than the last re-read (another timeline) reads the clock again', () => {
    const real = Date.now();
    const spy = vi.spyOn(Date, 'now').mockReturnValue(real);
    const t = performance.now();
    expect(epochAt(t)).toBe(real);
    spy.mockReturnValue(real + 50);
    expect(epochAt(t - 10)).toBe(real + 50);
  });
});
