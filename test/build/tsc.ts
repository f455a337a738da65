/** Runs the project's TypeScript compiler on a tsconfig (from the repository root): its exit code and output. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

export function runTsc(project: string, ...flags: string[]): Promise<{ code: number; out: string }> {
  return promisify(execFile)(process.execPath, [tsc, '-p', project, ...flags, '--pretty', 'false'], {
    cwd: root,
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
  );
}
