/**
 * The sources, tests, examples and scripts typecheck (`tsconfig.json`, strict). Vitest strips
 * types without checking them, so without this a type error in a test or an example would pass.
 */
import { describe, expect, it } from 'vitest';
import { runTsc } from './tsc.js';

describe('typecheck', () => {
  it('build:typecheck — tsc --noEmit over the whole project reports no error', async () => {
    const r = await runTsc('tsconfig.json', '--noEmit');
    expect(r.out.trim()).toBe('');
    expect(r.code).toBe(0);
  }, 200_000);
});
