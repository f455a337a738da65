/**
 * `turnstate serve --port 0` run from source as a child process, until it says "listening" (then
 * stopped) or exits: what the serve tests read of its start-up. `spawnServe` and `listeningUrl`
 * are the pieces the longer-running children (serve-child.ts, npm start) share.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';

export const ROOT = resolve(import.meta.dirname, '..', '..');

/** Variables of this process's environment the command would read; the child starts without them. */
const READ_BY_SERVE = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'TURNSTATE_API_KEYS', 'HOST', 'PORT', 'TURNSTATE_DATA_DIR', 'TURNSTATE_PUBLIC_URL'];

export interface ServeSpawn {
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  as?: { uid: number; gid: number };
}

/** `turnstate serve --port 0 <args>` from source, started without READ_BY_SERVE (then with `env`). */
export function spawnServe(opts: ServeSpawn = {}): ChildProcessByStdio<null, Readable, Readable> {
  const env = { ...process.env };
  for (const name of READ_BY_SERVE) delete env[name];
  // tsx by its path: the cwd need not be the repository.
  const tsx = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  return spawn(process.execPath, ['--conditions=turnstate-source', '--import', tsx, join(ROOT, 'src', 'cli', 'main.ts'), 'serve', '--port', '0', ...(opts.args ?? [])], {
    cwd: opts.cwd ?? ROOT,
    env: { ...env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...opts.as,
  });
}

/**
 * The URL of the "listening on" line once `output()` holds it (checked as `stdout` sends data);
 * rejects, showing the output, when `exited` settles first or after `timeoutMs`.
 */
export function listeningUrl(stdout: Readable, output: () => string, exited: Promise<unknown>, timeoutMs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within ${timeoutMs / 1000} s:\n${output()}`)), timeoutMs);
    const check = (): void => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(output());
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    stdout.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before listening:\n${output()}`));
    });
  });
}

export function runServe(opts: ServeSpawn = {}): Promise<{ code: number | null; out: string }> {
  const child = spawnServe(opts);
  let out = '';
  const onData = (b: Buffer): void => {
    out += b.toString();
    if (out.includes('listening on')) child.kill('SIGTERM');
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((r) => child.on('close', (code) => r({ code, out })));
}
