// Builds the demo page's A2UI renderer (web/src/surfaces.js) into web/dist/surfaces.js with
// esbuild. Run by `npm run build:web` (which `npm start`, `npm test` and `npm pack` run first);
// the output is generated, never committed. Also importable: `buildWeb()` resolves when done.
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const WEB_BUNDLE = join(ROOT, 'web', 'dist', 'surfaces.js');

export async function buildWeb() {
  await build({
    entryPoints: [join(ROOT, 'web', 'src', 'surfaces.js')],
    outfile: WEB_BUNDLE,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: true,
    legalComments: 'linked',
    logLevel: 'warning',
  });
  return WEB_BUNDLE;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = await buildWeb();
  console.log(`built ${out}`);
}
