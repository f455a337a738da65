/**
 * `turnstate serve --port 0` from source as a child process that keeps running: its stdout and
 * stderr apart, its URL once it listens, and its exit (code or signal).
 */
import type { ChildProcess } from 'node:child_process';
import { listeningUrl, spawnServe } from './run-serve.js';

export interface ServeChild {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startServeChild(args: string[], env: Record<string, string> = {}): Promise<ServeChild> {
  const child = spawnServe({ args, env });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('close', (code, signal) => r({ code, signal })));
  const url = await listeningUrl(child.stdout, () => `${out}\n${err}`, exited, 30_000);
  return { child, url, stdout: () => out, stderr: () => err, exited };
}
