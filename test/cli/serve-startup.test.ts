/**
 * `turnstate serve` refuses, at startup and naming the path, a data directory it cannot use:
 * "bad input gets a clear error that names what was wrong", not a server that says "listening"
 * and then fails every turn.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runServe } from './run-serve.js';
import { serve } from '../../src/cli/serve.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-startup-'));
  chmodSync(d, 0o777);
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('serve startup checks', () => {
  it('cli:serve:data-dir-not-a-directory — "--data-dir <dir>: created when missing": a path that is a file (or under one) is refused naming it as not a directory, not with EEXIST from mkdir', async () => {
    const dir = tempDir();
    const file = join(dir, 'afile');
    writeFileSync(file, 'x');
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir: file, env: {}, log: () => {} })).rejects.toThrow(`--data-dir ${file} is not a directory`);
    await expect(serve({ port: 0, host: '127.0.0.1', dataDir: join(file, 'data'), env: {}, log: () => {} })).rejects.toThrow(
      `--data-dir ${join(file, 'data')} is not a directory (${file} is a file)`,
    );
  });

  it.runIf(process.platform !== 'win32')(
    'cli:serve:db-not-writable — "every failure to open is a store.open_failed naming the path": a turnstate.db this process cannot write stops serve at startup naming the file, instead of listening and answering every turn with 500 store.write_failed',
    async () => {
      const dir = tempDir();
      const dataDir = join(dir, 'data');
      mkdirSync(dataDir);
      chmodSync(dataDir, 0o777);
      // Create the store, then make its file read-only (root ignores modes: run as nobody then).
      const first = await serve({ port: 0, host: '127.0.0.1', dataDir, env: {}, log: () => {} });
      await first.close();
      const db = join(dataDir, 'turnstate.db');
      expect(existsSync(`${db}-wal`)).toBe(false);
      chmodSync(db, 0o444);
      const as = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
      const { code, out } = await runServe({ args: ['--data-dir', dataDir], as });
      expect(out).not.toContain('listening');
      expect(out).toContain(`turnstate: cannot write SQLite store ${db}`);
      expect(code).toBe(1);
      // The lock is released: the directory is usable once the file is writable again.
      expect(existsSync(join(dataDir, 'turnstate.lock'))).toBe(false);
    },
  );
});
