/**
 * docs/stores.md: "Opening a SQLite file fails with `store.open_failed`, naming the path and the
 * cause, for anything that keeps it from being a store", a file a writable store may read but
 * not write included (SQLite would open it read-only without a word, and every commit would fail).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/stores/sqlite.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'turnstate-sqlite-ro-'));
chmodSync(dir, 0o777);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Opens `path` in a child process (as nobody when this one is root, which ignores file modes). */
function openElsewhere(options: Record<string, unknown>): { opened: boolean; code?: string; message?: string; path?: unknown } {
  const source = join(ROOT, 'src', 'stores', 'sqlite.ts');
  const script = `
    const { createSqliteStore } = await import(${JSON.stringify(source)});
    try { const s = createSqliteStore(${JSON.stringify(options)}); await s.close(); console.log(JSON.stringify({ opened: true })); }
    catch (e) { console.log(JSON.stringify({ opened: false, code: e.code, message: e.message, path: e.details?.path })); }`;
  const as = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', ...as });
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

describe.runIf(process.platform !== 'win32')('SQLite store: a file it cannot write', () => {
  it('store:sqlite:open:not-writable — a writable store on a file this process may read but not write (mode 444, a read-only directory) is refused with store.open_failed naming the path, not opened to fail every commit; read-only it opens', async () => {
    const path = join(dir, 'ro.db');
    await createSqliteStore({ path }).close();
    chmodSync(path, 0o444);
    const refused = openElsewhere({ path });
    expect(refused).toMatchObject({ opened: false, code: 'store.open_failed', path });
    expect(refused.message).toMatch(new RegExp(`^cannot write SQLite store ${path}: attempt to write a readonly database \\(this process may not write the file or its directory`));
    expect(openElsewhere({ path, readonly: true })).toEqual({ opened: true });

    const sub = join(dir, 'ro-dir');
    mkdirSync(sub);
    const inside = join(sub, 'x.db');
    await createSqliteStore({ path: inside }).close();
    chmodSync(inside, 0o666);
    chmodSync(sub, 0o555);
    expect(openElsewhere({ path: inside })).toMatchObject({ opened: false, code: 'store.open_failed', path: inside, message: expect.stringContaining(`cannot write SQLite store ${inside}`) });
  });
});

describe('SQLite store: a file another connection is writing', () => {
  it('store:sqlite:open:busy-writer — a file another connection holds a write transaction on opens at once (it is writable); its first commit waits for the lock as before', async () => {
    const { default: Database } = await import('better-sqlite3');
    const path = join(dir, 'busy.db');
    await createSqliteStore({ path }).close();
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    let opened: Awaited<ReturnType<typeof createSqliteStore>> | undefined;
    try {
      opened = createSqliteStore({ path, busyTimeoutMs: 300 });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(opened).toBeDefined();
    await opened!.close();
  });
});
