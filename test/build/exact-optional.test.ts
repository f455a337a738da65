/**
 * A consumer compiling with `exactOptionalPropertyTypes: true` (@tsconfig/strictest) can pass a
 * possibly-undefined value to any optional property of a public input type: every one is declared
 * `x?: T | undefined`. test/build/fixtures/exact-optional/consumer.ts gives each such property a
 * `T | undefined` value; its tsconfig resolves 'turnstate' to src/ (the `turnstate-source`
 * condition). Only the consumer's diagnostics count: src/ itself is compiled with the project's
 * tsconfig (build:typecheck), and a real consumer reads its .d.ts with skipLibCheck.
 */
import { describe, expect, it } from 'vitest';
import { runTsc } from './tsc.js';

const fixture = 'test/build/fixtures/exact-optional';

describe('exact optional property types', () => {
  it('types:exact-optional — a consumer with exactOptionalPropertyTypes passes a possibly-undefined value to any optional option', async () => {
    const r = await runTsc(fixture);
    // A diagnostic of the consumer starts with its path; continuation lines are indented.
    const lines = r.out.split('\n').filter((l) => l.trim() !== '');
    const ours = lines.filter((l) => l.startsWith(fixture) || !/^\S+\(\d+,\d+\): error/.test(l) && !/^\s/.test(l));
    expect(ours).toEqual([]);
    // tsc ran (a missing fixture or a config error would print no src diagnostic either).
    expect(r.code === 0 || lines.some((l) => /^src\/\S+\(\d+,\d+\): error/.test(l))).toBe(true);
  }, 200_000);
});
