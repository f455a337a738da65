/**
 * `turnstate serve --port 0` run from source as a child process, until it says "listening" (then
 * stopped) or exits: what the serve tests read of its start-up.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = resolve(import.meta.dirname, '..', '..');

/** Variables of this process's environment the command would read; the child starts without them. */
const READ_BY_SERVE = ['ANTHROPIC_API_KEY', 'TURNSTATE_API_KEYS', 'HOST', 'PORT', 'TURNSTATE_DATA_DIR', 'TURNSTATE_PUBLIC_URL'];

export function runServe(opts: { args?: string[]; cwd?: string; env?: Record<string, string>; as?: { uid: number; gid: number } } = {}): Promise<{ code: number | null; out: string }> {
  const env = { ...process.env };
  for (const name of READ_BY_SERVE) delete env[name];
  // tsx by its path: the cwd need not be the repository.
  const tsx = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  const child = spawn(process.execPath, ['--conditions=turnstate-source', '--import', tsx, join(ROOT, 'src', 'cli', 'main.ts'), 'serve', '--port', '0', ...(opts.args ?? [])], {
    cwd: opts.cwd ?? ROOT,
    env: { ...env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...opts.as,
  });
  let out = '';
  const onData = (b: Buffer): void => {
    out += b.toString();
    if (out.includes('listening on')) child.kill('SIGTERM');
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((r) => child.on('close', (code) => r({ code, out })));
}
