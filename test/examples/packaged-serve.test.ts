/**
 * The published package: `npm install turnstate && npx turnstate serve` starts the travel desk.
 * The tarball (`npm pack`) has no src/, and tsx is a devDependency an installer does not get, so
 * the command must load the demo as JavaScript that imports only the package's public entries.
 *
 * Packs the current build (`npm pack --ignore-scripts`: `npm run build` made dist/, as
 * `npm ci` does through `prepare`), unpacks it as node_modules/turnstate of an app whose other
 * node_modules are the repository's (its production dependencies among them) except tsx.
 * Also what the package promises any consumer: it loads from CommonJS too, ships no source maps
 * pointing at files it does not ship, and its .d.ts files name only packages it depends on.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Unpacks `npm pack` into <tmp>/app/node_modules/turnstate beside links to the repository's node_modules, tsx left out. */
async function installPacked(): Promise<string> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is not built: run `npm run build` first');
  const tmp = mkdtempSync(join(tmpdir(), 'turnstate-pack-'));
  dirs.push(tmp);
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], { cwd: ROOT, timeout: 60_000 });
  const { filename } = (JSON.parse(stdout) as [{ filename: string }])[0];
  const app = join(tmp, 'app');
  const pkg = join(app, 'node_modules', 'turnstate');
  mkdirSync(pkg, { recursive: true });
  await run('tar', ['-xzf', join(tmp, filename), '-C', pkg, '--strip-components=1']);
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name.startsWith('.') || name === 'tsx' || name === 'turnstate') continue;
    symlinkSync(join(ROOT, 'node_modules', name), join(app, 'node_modules', name));
  }
  return app;
}

interface Started {
  url: string;
  output: () => string;
  stop: () => Promise<number | null>;
}

/** Starts `node node_modules/turnstate/dist/cli/main.js serve --port 0` (what the `turnstate` bin runs) in `app`. */
async function startInstalled(app: string, dataDir: string): Promise<Started> {
  const env = { ...process.env };
  for (const name of ['ANTHROPIC_API_KEY', 'TURNSTATE_API_KEYS', 'NODE_OPTIONS', 'HOST', 'PORT', 'TURNSTATE_DATA_DIR']) delete env[name];
  const child = spawn(process.execPath, [join(app, 'node_modules', 'turnstate', 'dist', 'cli', 'main.js'), 'serve', '--port', '0', '--data-dir', dataDir], {
    cwd: app,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const check = (): void => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    child.stdout.on('data', check);
    void closed.then((code) => reject(new Error(`the installed turnstate serve exited (${code}) before listening:\n${out}`)));
  });
  return {
    url,
    output: () => out,
    stop: () => {
      child.kill('SIGTERM');
      return closed;
    },
  };
}

async function post(base: string, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

describe('the published package', () => {
  it('cli:serve:packaged — "`turnstate serve` runs the embedded default: ... the travel desk demo app": the packed package, installed without tsx, starts the travel desk and answers a turn over AAP', async () => {
    const app = await installPacked();
    // The installation is what an installer gets: no tsx to load TypeScript with.
    expect(() => createRequire(join(app, 'index.js')).resolve('tsx')).toThrow(/Cannot find module 'tsx'/);

    const server = await startInstalled(app, join(app, 'data'));
    try {
      expect(server.output()).toContain('model:          scripted (travel desk demo script');
      expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ ok: true });
      const meta = await (await fetch(`${server.url}/meta`)).json();
      expect(meta.agents.map((a: { name: string }) => a.name)).toEqual(['triage']);
      // One turn of the travel desk's own script (script.json found beside the compiled app).
      const created = await post(server.url, '/sessions', { agent: { name: 'triage' } });
      expect(created.status).toBe(201);
      const turn = await post(server.url, `/sessions/${created.json.sessionId}/turns`, { messages: [{ role: 'user', content: 'flights to Corfu' }] });
      expect(turn.json.stopReason).toBe('end_turn');
      expect(turn.json.messages.at(-1).content).toMatch(/^I found 2 direct flights to Corfu: TS205 at EUR 42/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);

  it('package:require — the package is ESM, and `require()` (Node 20.19+ loads ESM synchronously) gets the same entries: the exports map has a default condition', async () => {
    const app = await installPacked();
    const code = "const t = require('turnstate'); const s = require('turnstate/sqlite'); console.log(typeof t.createRuntime, typeof s.createSqliteStore)";
    const { stdout } = await run(process.execPath, ['-e', code], { cwd: app, timeout: 30_000 });
    expect(stdout.trim()).toBe('function function');
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules', 'turnstate', 'package.json'), 'utf8')) as { files: string[]; engines: { node: string } };
    // require(esm) without a flag: Node 20.19 (what @marcbachmann/cel-js needs too).
    expect(manifest.engines.node).toBe('>=20.19');
    // No *.map ships: each named ../src/*.ts, which does not.
    const maps: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.name.endsWith('.map')) maps.push(join(dir, e.name));
      }
    };
    walk(join(app, 'node_modules', 'turnstate'));
    expect(maps).toEqual([]);
  }, 60_000);

  it('package:types — the published .d.ts files name only Node built-ins and packages the package depends on (with their types: a package without its own ships its @types as a dependency)', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const deps = new Set(Object.keys(manifest.dependencies));
    const named = new Map<string, string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith('.d.ts')) {
          for (const m of readFileSync(path, 'utf8').matchAll(/(?:from\s+|import\()\s*['"]([^'"]+)['"]/g)) {
            const spec = m[1]!;
            if (spec.startsWith('.') || spec.startsWith('node:')) continue;
            const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
            named.set(pkg, path.slice(ROOT.length + 1));
          }
        }
      }
    };
    walk(join(ROOT, 'dist'));
    expect(named.size).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const [pkg, where] of named) {
      if (!deps.has(pkg)) {
        problems.push(`${where} names ${pkg}, which is not a dependency`);
        continue;
      }
      const own = JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as Record<string, unknown>;
      const typed = own.types !== undefined || own.typings !== undefined || existsSync(join(ROOT, 'node_modules', pkg, 'index.d.ts')) || JSON.stringify(own.exports ?? {}).includes('"types"');
      const atTypes = `@types/${pkg.replace(/^@/, '').replace('/', '__')}`;
      if (!typed && !deps.has(atTypes)) problems.push(`${where} names ${pkg}, whose types (${atTypes}) are not a dependency`);
    }
    expect(problems).toEqual([]);
  });
});
