/**
 * The dependency direction of docs/architecture.md ("Layers"), as `.dependency-cruiser.cjs`
 * encodes it, holds for src/; and the rules catch a violation (a fixture tree that breaks each).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkDependencies } from '../../scripts/depcruise.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/layer-violations/', import.meta.url));

describe('dependency rules', () => {
  it('build:dependencies — src/ breaks no layer rule and has no import cycle', async () => {
    const { violations, cruised, report } = await checkDependencies();
    expect(cruised).toBeGreaterThan(50);
    // The report names every violation (rule, from -> to, the cycle) when there is any.
    expect(report).toBe('');
    expect(violations).toEqual([]);
  }, 60_000);

  it('build:dependencies:caught — an injected violation of each kind fails the check', async () => {
    const { violations } = await checkDependencies({ baseDir: FIXTURE });
    // Paths out of the fixture tree (the repository's node_modules) are shown from node_modules/ on,
    // wherever it resolves (a worktree's node_modules may be a symlink into another checkout).
    const found = violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to.replace(/^.*?(?=node_modules\/)|^(\.\.\/)+/, '')}`);
    expect(found).toEqual(
      expect.arrayContaining([
        'registries-are-a-leaf: src/registries/tools.ts -> src/approvals/policy.ts',
        'no-circular: src/stores/a.ts -> src/stores/b.ts',
        'transports-use-the-session-api: src/transports/reads-store.ts -> src/stores/a.ts',
        'machines-use-ports-only: src/machines/session.machine.ts -> src/router/router.ts',
        'host-executes-machines: src/host/session-host.ts -> src/runtime.ts',
        'only-apps-compose-the-runtime: src/host/session-host.ts -> src/runtime.ts',
        'heavy-only-in-subpath-export: src/transports/sqlite.ts -> node_modules/better-sqlite3/lib/index.js',
        'core-reaches-no-heavy-package: src/index.ts -> node_modules/better-sqlite3/lib/index.js',
      ]),
    );
  }, 60_000);
});
