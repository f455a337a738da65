/**
 * The sources, tests, examples and scripts typecheck (`tsconfig.json`, strict). Vitest strips
 * types without checking them, so without this a type error in a test or an example would pass.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('typecheck', () => {
  it('build:typecheck — tsc --noEmit over the whole project reports no error', async () => {
    const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
    const r = await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit', '--pretty', 'false'], {
      cwd: root,
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
    );
    expect(r.out.trim()).toBe('');
    expect(r.code).toBe(0);
  }, 200_000);
});
