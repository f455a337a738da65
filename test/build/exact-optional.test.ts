/**
 * A consumer compiling with `exactOptionalPropertyTypes: true` (@tsconfig/strictest) can pass a
 * possibly-undefined value to any optional property of a public input type: every one is declared
 * `x?: T | undefined`. test/build/fixtures/exact-optional/consumer.ts gives each such property a
 * `T | undefined` value; its tsconfig resolves 'turnstate' to src/ (the `turnstate-source`
 * condition). Only the consumer's diagnostics count: src/ itself is compiled with the project's
 * tsconfig (build:typecheck), and a real consumer reads its .d.ts with skipLibCheck.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixture = 'test/build/fixtures/exact-optional';

describe('exact optional property types', () => {
  it('types:exact-optional — a consumer with exactOptionalPropertyTypes passes a possibly-undefined value to any optional option', async () => {
    const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
    const r = await promisify(execFile)(process.execPath, [tsc, '-p', fixture, '--pretty', 'false'], {
      cwd: root,
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
    );
    // A diagnostic of the consumer starts with its path; continuation lines are indented.
    const lines = r.out.split('\n').filter((l) => l.trim() !== '');
    const ours = lines.filter((l) => l.startsWith(fixture) || !/^\S+\(\d+,\d+\): error/.test(l) && !/^\s/.test(l));
    expect(ours).toEqual([]);
    // tsc ran (a missing fixture or a config error would print no src diagnostic either).
    expect(r.code === 0 || lines.some((l) => /^src\/\S+\(\d+,\d+\): error/.test(l))).toBe(true);
  }, 200_000);
});
