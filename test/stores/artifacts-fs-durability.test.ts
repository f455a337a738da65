/**
 * The file artifact store's writes (docs/concepts/artifacts.md "Stores"): each file is fsynced
 * before it is renamed into place and the directory after, so `put` resolves once the artifact
 * is durable; a put that fails leaves nothing behind. The store and the file system are real:
 * node:fs/promises is wrapped only to record the order of fsyncs and renames, and the artifact
 * id is fixed (node:crypto's randomBytes, once) so a test can put something in its way.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createFileArtifactStore } from '../../src/stores/artifacts-fs.js';

const journal: string[] = [];

vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  const wrapped = {
    ...fs,
    async open(path: string, ...rest: unknown[]) {
      const fh = await (fs.open as (...a: unknown[]) => Promise<import('node:fs/promises').FileHandle>)(path, ...rest);
      const sync = fh.sync.bind(fh);
      fh.sync = async () => {
        journal.push(`fsync ${basename(String(path))}`);
        return sync();
      };
      return fh;
    },
    async rename(from: string, to: string) {
      journal.push(`rename ${basename(String(from))} -> ${basename(String(to))}`);
      return fs.rename(from, to);
    },
  };
  return { ...wrapped, default: wrapped };
});

vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return { ...crypto, randomBytes: vi.fn(crypto.randomBytes) };
});

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-artifacts-fsync-'));
  dirs.push(d);
  return d;
};

describe('artifact store: file, durability', () => {
  it('artifacts:tool:put — "resolve once the bytes are durable": the bytes and the record are each fsynced before their rename, and the directory after it, before put() resolves', async () => {
    const dir = tempDir();
    const store = createFileArtifactStore({ dir });
    journal.length = 0;
    const r = await store.put({ data: new Uint8Array(1000).fill(1), mimeType: 'application/octet-stream', sessionId: 's' });
    const id = r.artifactId;
    const at = (entry: string): number => {
      const i = journal.indexOf(entry);
      expect(i, `${entry} in ${JSON.stringify(journal)}`).toBeGreaterThanOrEqual(0);
      return i;
    };
    expect(at(`fsync ${id}.bin.tmp`)).toBeLessThan(at(`rename ${id}.bin.tmp -> ${id}.bin`));
    expect(at(`rename ${id}.bin.tmp -> ${id}.bin`)).toBeLessThan(at(`fsync ${id}.json.tmp`));
    expect(at(`fsync ${id}.json.tmp`)).toBeLessThan(at(`rename ${id}.json.tmp -> ${id}.json`));
    expect(at(`rename ${id}.json.tmp -> ${id}.json`)).toBeLessThan(journal.lastIndexOf(`fsync ${basename(dir)}`));
  });

  it('artifacts:store:failed-put — "a put that fails removes what it wrote and rejects with store.write_failed": bytes renamed into place, then a record that cannot be, leave no .bin, .bin.tmp or .json.tmp', async () => {
    const { randomBytes } = await import('node:crypto');
    const dir = tempDir();
    const store = createFileArtifactStore({ dir });
    const fixed = Buffer.alloc(16, 7);
    const id = `art_${fixed.toString('base64url')}`;
    // A directory where the record goes: the bytes are written and renamed, the record's rename fails.
    mkdirSync(join(dir, `${id}.json`));
    writeFileSync(join(dir, `${id}.json`, 'in-the-way'), '');
    vi.mocked(randomBytes).mockReturnValueOnce(fixed as never);
    const failed: unknown = await store.put({ data: new Uint8Array(100).fill(65), mimeType: 'application/octet-stream', sessionId: 's', tenantId: 'A' }).catch((e: unknown) => e);
    expect(readdirSync(dir).sort()).toEqual([`${id}.json`, 'sessions']);
    expect(store.head(id)).toBeUndefined();
    expect(failed).toMatchObject({
      code: 'store.write_failed',
      message: expect.stringMatching(new RegExp(`^artifact store: could not store ${id} \\(100 bytes\\) in .*: .*; the files it wrote were removed$`)),
    });
  });
});
