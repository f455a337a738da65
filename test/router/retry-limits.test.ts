/**
 * Retry waits and the timer limit: a Node timer over 2^31-1 ms fires after 1 ms, so a retry policy
 * whose longest wait is over it would retry at once. Registration refuses one (tools.md
 * `tools:retry:longest-wait`); the router clamps a wait as well (router.md `router:retry:wait-capped`).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { compileApprovalPolicy } from '../../src/approvals/policy.js';
import { RegistrationError } from '../../src/errors.js';
import { ToolRegistry } from '../../src/registries/tools.js';
import type { RegisteredTool } from '../../src/registries/types.js';
import { EventRouter } from '../../src/router/router.js';
import { ctx, makeTool } from './fixtures.js';

const MAX = 2 ** 31 - 1;

function register(name: string, retry: Record<string, unknown>): RegisteredTool {
  return new ToolRegistry(compileApprovalPolicy).register({
    name,
    description: 'Current exchange rates.',
    inputSchema: { type: 'object' },
    scope: 'generalist',
    idempotent: true,
    retry: retry as never,
    handler: () => ({ ok: true }),
  });
}

describe('tools:retry:longest-wait', () => {
  it('tools:retry:longest-wait — "a retry policy whose longest wait (backoffMs * backoffFactor^(attempts-2)) exceeds 2^31-1 ms" is refused at registration, with a RegistrationError naming the numbers', () => {
    const refused: [Record<string, unknown>, string][] = [
      [{ attempts: 3, backoffMs: 900_000_000, backoffFactor: 3 }, '900000000 * 3^1 = 2700000000 ms'],
      [{ attempts: 10, backoffMs: 1_000, backoffFactor: 10 }, '1000 * 10^8 = 100000000000 ms'],
    ];
    for (const [retry, numbers] of refused) {
      let err: unknown;
      try {
        register('rates', retry);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RegistrationError);
      expect(err).toMatchObject({ code: 'registration.invalid', rule: 'tools:retry:longest-wait' });
      const msg = (err as Error).message;
      expect(msg).toContain(`tool 'rates' breaks tools:retry:longest-wait`);
      expect(msg).toContain(`before attempt ${String(retry.attempts)}`);
      expect(msg).toContain(numbers);
      expect(msg).toContain(String(MAX));
    }
    // At the limit, and policies whose waits stay under it, register.
    expect(register('at_limit', { attempts: 2, backoffMs: MAX, backoffFactor: 10 }).retry).toEqual({ attempts: 2, backoffMs: MAX, backoffFactor: 10 });
    expect(register('long_but_fine', { attempts: 3, backoffMs: 900_000_000, backoffFactor: 2 }).retry).toMatchObject({ attempts: 3 });
    expect(register('many', { attempts: 10, backoffMs: 10_000 }).retry).toMatchObject({ attempts: 10, backoffMs: 10_000, backoffFactor: 2 });
    expect(register('factor_one', { attempts: 10, backoffMs: MAX, backoffFactor: 1 }).retry).toMatchObject({ attempts: 10 });
  });
});

describe('router:retry:wait-capped', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('router:retry:wait-capped — "a wait is never longer than 2^31-1 ms": a retry policy built by hand past the limit waits 2^31-1 ms, not the 1 ms Node gives an overlong timer', async () => {
    const runs: number[] = [];
    const registered = makeTool({
      name: 'rates_by_hand', scope: 'generalist', extra: { idempotent: true, retry: { attempts: 3, backoffMs: 1_000 } },
      handler: async () => {
        runs.push(Date.now());
        throw new Error('upstream 503');
      },
    });
    // Not through the registry: a RegisteredTool whose policy was never checked.
    const tool = { ...registered, retry: { attempts: 3, backoffMs: 900_000_000, backoffFactor: 3 } } as RegisteredTool;
    const router = new EventRouter();
    const p = router.dispatchTool(tool, {}, ctx());
    await vi.advanceTimersByTimeAsync(900_000_000);
    expect(runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs).toHaveLength(2); // the second wait did not collapse to 1 ms
    await vi.advanceTimersByTimeAsync(MAX - 1_000);
    const out = await p;
    expect(runs).toHaveLength(3);
    expect(runs[2]! - runs[1]!).toBe(MAX);
    expect(out).toMatchObject({ isError: true, llmContent: 'tool "rates_by_hand" failed: upstream 503 (attempt 3 of 3)' });
  });
});
