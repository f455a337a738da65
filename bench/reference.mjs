// A reference build: the package as it was at an earlier commit, compiled from git with this
// checkout's TypeScript, so a benchmark can measure it side by side with the current build in one
// process (ratios from one run, not absolute figures carried over from another machine).
//   import { referenceDist } from '../reference.mjs'; const dist = referenceDist('1c0168a');
// The build lands in .scratch/ref/<commit>/dist (git-ignored) and is reused by later runs. Its
// imports resolve from the project's node_modules (the .scratch folder sits beside it).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The file URL (with a trailing slash) of the build being measured: TURNSTATE_DIST (bench/run.mjs
 * points it at a copy of dist/ taken when the run starts, so every job of one run measures the same
 * build), or the project's dist/.
 */
export function currentDist() {
  return process.env.TURNSTATE_DIST ? pathToFileURL(resolve(process.env.TURNSTATE_DIST)).href + '/' : pathToFileURL(join(ROOT, 'dist')).href + '/';
}

/**
 * A module of the build being measured, by its path inside dist/ (`'router/index.js'`); when that
 * build cannot load it, the source file it is compiled from (`src/router/index.ts`), which loads
 * under `node --import tsx` from a source checkout.
 */
export function loadBuild(modulePath) {
  return import(currentDist() + modulePath).catch(() => import(pathToFileURL(join(ROOT, 'src', modulePath.replace(/\.js$/, '.ts'))).href));
}

/**
 * The round's base: the last commit before the session host was split (issue 11). "No slower
 * than before" budgets compare against it.
 */
export const BASE_COMMIT = process.env.BENCH_REF ?? '1c0168a';

/**
 * The file URL of `commit`'s dist/ folder (with a trailing slash), built when missing; undefined,
 * with the reason on stderr, when this clone cannot build it (a shallow clone without the commit).
 */
export function referenceDist(commit = BASE_COMMIT) {
  const git = (...args) => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  let sha;
  try {
    sha = git('rev-parse', '--verify', '--quiet', `${commit}^{commit}`);
  } catch {
    console.error(`reference build: commit ${commit} is not in this clone (a shallow clone?); side-by-side rows are skipped`);
    return undefined;
  }
  const dir = join(ROOT, '.scratch', 'ref', sha);
  const dist = join(dir, 'dist');
  if (!existsSync(join(dist, '.complete'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    // package.json too: its "type": "module" makes node load the build as ES modules
    execFileSync('sh', ['-c', `git -C "${ROOT}" archive ${sha} src tsconfig.json tsconfig.build.json package.json | tar -x -C "${dir}"`], { stdio: 'inherit' });
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.build.json')], { stdio: 'inherit' });
    } catch (err) {
      // Type errors in old source against newer type packages still emit JavaScript; only a
      // build that emitted nothing is unusable.
      if (!existsSync(join(dist, 'runtime.js'))) throw err;
      console.error(`reference build: ${commit} compiled with type errors (ignored: its JavaScript was emitted)`);
    }
    writeFileSync(join(dist, '.complete'), '');
  }
  return pathToFileURL(dist).href + '/';
}

/**
 * A second, separate copy of a reference build (its own files, so its own module instances), given
 * the file URL `referenceDist` returned: a side-by-side suite that times the build against this
 * copy measures its own bias and noise, since the two run the same code. The copy's dist/ URL.
 */
export function referenceCopyDist(dist) {
  const refDir = resolve(fileURLToPath(dist), '..'); // .scratch/ref/<sha>
  const dir = `${refDir}-copy`;
  const copy = join(dir, 'dist');
  if (!existsSync(join(copy, '.complete'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    cpSync(join(refDir, 'package.json'), join(dir, 'package.json'));
    // The marker last: a copy cut short is made again by the next run.
    cpSync(join(refDir, 'dist'), copy, { recursive: true, filter: (src) => !src.endsWith('.complete') });
    writeFileSync(join(copy, '.complete'), '');
  }
  return pathToFileURL(copy).href + '/';
}
