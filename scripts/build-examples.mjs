/**
 * Compiles the travel desk (the demo `turnstate serve` runs) to dist/examples/travel-desk, so the
 * published package's command loads it as JavaScript (no tsx, no src/ in the tarball). It imports
 * only `turnstate`, which here resolves to the package's own dist/ (built first).
 *
 *   node scripts/build-examples.mjs      (part of `npm run build`)
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}dist/examples`;
rmSync(OUT, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', `${ROOT}tsconfig.examples.json`], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
// app.ts reads its script beside itself (new URL('./script.json', import.meta.url)).
mkdirSync(`${OUT}/travel-desk`, { recursive: true });
copyFileSync(`${ROOT}examples/travel-desk/script.json`, `${OUT}/travel-desk/script.json`);
