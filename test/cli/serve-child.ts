/**
 * `turnstate serve --port 0` from source as a child process that keeps running: its stdout and
 * stderr apart, its URL once it listens, and its exit (code or signal).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './run-serve.js';

const READ_BY_SERVE = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'TURNSTATE_API_KEYS', 'HOST', 'PORT', 'TURNSTATE_DATA_DIR', 'TURNSTATE_PUBLIC_URL'];

export interface ServeChild {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startServeChild(args: string[], env: Record<string, string> = {}): Promise<ServeChild> {
  const base = { ...process.env };
  for (const name of READ_BY_SERVE) delete base[name];
  const tsx = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  const child = spawn(process.execPath, ['--conditions=turnstate-source', '--import', tsx, join(ROOT, 'src', 'cli', 'main.ts'), 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('close', (code, signal) => r({ code, signal })));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 30 s:\n${out}\n${err}`)), 30_000);
    const check = (): void => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before listening:\n${out}\n${err}`));
    });
  });
  return { child, url, stdout: () => out, stderr: () => err, exited };
}
