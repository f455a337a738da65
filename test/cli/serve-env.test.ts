/**
 * `turnstate serve` and its environment: an empty variable is unset (not "every interface" nor
 * "the current directory"), and an address it cannot listen on is named as the --host it came from.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, runServe } from './run-serve.js';
import { serve } from '../../src/cli/serve.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-serve-env-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('serve and its environment', () => {
  it('cli:serve:empty-env-unset — "an empty variable (HOST=) counts as unset": HOST= TURNSTATE_DATA_DIR= serve on 127.0.0.1 (where the Host check applies) from ./.data, not on every interface from the current directory', async () => {
    const cwd = tempDir();
    const { out } = await runServe({ cwd, env: { HOST: '', TURNSTATE_DATA_DIR: '' } });
    expect(out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+\n/);
    expect(out).toContain(`data directory: ${join(cwd, '.data')} (`);
    expect(out).toMatch(/artifact links: http:\/\/127\.0\.0\.1:\d+\/artifacts\//);
    // Nothing of the server's in the current directory itself.
    expect(readdirSync(cwd)).toEqual(['.data']);
    expect(existsSync(join(cwd, '.data', 'turnstate.db'))).toBe(true);
    // The variables serve reads itself: a blank TURNSTATE_PUBLIC_URL is the listening URL, a blank TURNSTATE_API_KEYS no keys.
    const handle = await serve({ port: 0, host: '127.0.0.1', dataDir: join(cwd, 'd2'), env: { TURNSTATE_PUBLIC_URL: ' ', TURNSTATE_API_KEYS: ' ', ANTHROPIC_API_KEY: ' ' }, log: () => {} });
    try {
      expect(handle.artifactLinks.url('art_AAAAAAAAAAAAAAAAAAAAAA').startsWith(`${handle.url}/artifacts/`)).toBe(true);
      expect(handle.modelName).toMatch(/^scripted /);
      expect((await fetch(`${handle.url}/meta`)).status).toBe(200);
    } finally {
      await handle.close();
    }
  });

  it('cli:serve:host-named — "bad input gets a clear error that names what was wrong": a --host that does not resolve stops serve naming --host (or HOST), not only "getaddrinfo ENOTFOUND"', async () => {
    const dataDir = join(tempDir(), 'data');
    await expect(serve({ port: 0, host: 'no.such.host.invalid', dataDir, env: {}, log: () => {} })).rejects.toThrow(
      /^--host no\.such\.host\.invalid \(env HOST\): cannot listen on it, it is not an address of this machine \(getaddrinfo E[A-Z_]+ no\.such\.host\.invalid\)$/,
    );
    // The data directory is released for the next try.
    expect(existsSync(join(dataDir, 'turnstate.lock'))).toBe(false);
  });

  it('cli:serve:startup-doc — docs/guide/serve.md shows the startup output serve prints (its data directory, artifacts and artifact-links lines included), up to the paths, port and pid', async () => {
    const dataDir = join(tempDir(), '.data');
    mkdirSync(dataDir);
    const lines: string[] = [];
    const handle = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: (l) => lines.push(l) });
    await handle.close();
    const printed = lines
      .join('\n')
      .replaceAll(dataDir, '/home/me/turnstate/.data')
      .replaceAll(`127.0.0.1:${handle.port}`, '127.0.0.1:8787')
      .replace(/pid: +\d+/, 'pid:            41213');
    const doc = readFileSync(join(ROOT, 'docs', 'guide', 'serve.md'), 'utf8');
    const sample = /```console\n\$ npm start\n\.\.\.\n([\s\S]*?)\n```/.exec(doc)?.[1];
    expect(sample).toBe(printed);
  });
});
