import { defineConfig } from 'vitest/config';

export default defineConfig({
  // `turnstate` (the examples import the package by name) resolves to src/, as for tsc
  // (tsconfig.json customConditions), so a test and the code it imports share one module graph.
  // The rest are Vite's default server conditions (which setting conditions replaces).
  ssr: { resolve: { conditions: ['turnstate-source', 'module', 'node', 'development|production'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
