/**
 * The ArtifactStore contract beyond put/head/read (docs/concepts/artifacts.md "Stores"): deleting
 * one artifact or a session's, handing the bytes to a server without a copy, what a put may name
 * (header-safe mime types, names without invisible controls), and what the file store does when
 * it opens a directory a crash or an operator left behind. Run against both stores.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../src/api.js';
import { createFileArtifactStore } from '../../src/stores/artifacts-fs.js';
import { createMemoryArtifactStore } from '../../src/stores/artifacts-memory.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-artifacts-life-'));
  dirs.push(d);
  return d;
};
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

async function drain(data: Uint8Array | Readable): Promise<Buffer> {
  if (data instanceof Uint8Array) return Buffer.from(data);
  const chunks: Buffer[] = [];
  for await (const c of data) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const stores: [string, () => ArtifactStore][] = [
  ['memory', () => createMemoryArtifactStore()],
  ['file', () => createFileArtifactStore({ dir: tempDir() })],
];

for (const [kind, make] of stores) {
  describe(`artifact store lifecycle: ${kind}`, () => {
    it('artifacts:session:owns — "deleting the session deletes its artifacts, bytes and records": deleteSession removes every artifact of that session and no other; delete removes one', async () => {
      const s = make();
      const a1 = await s.put({ data: bytes('a1'), mimeType: 'text/plain', sessionId: 'sess_a', tenantId: 't' });
      const a2 = await s.put({ data: bytes('a2'), mimeType: 'text/plain', sessionId: 'sess_a', tenantId: 't' });
      const b1 = await s.put({ data: bytes('b1'), mimeType: 'text/plain', sessionId: 'sess_b', tenantId: 't' });
      const b2 = await s.put({ data: bytes('b2'), mimeType: 'text/plain', sessionId: 'sess_b', tenantId: 't' });
      expect(s.deleteSession).toBeTypeOf('function');
      expect(await s.deleteSession!('sess_a')).toBe(2);
      for (const id of [a1.artifactId, a2.artifactId]) {
        expect(s.head(id)).toBeUndefined();
        expect(await s.read(id)).toBeUndefined();
        expect(await s.open!(id)).toBeUndefined();
      }
      expect(s.head(b1.artifactId)).toEqual(b1);
      expect(await s.deleteSession!('sess_a')).toBe(0);
      expect(await s.deleteSession!('no-such-session')).toBe(0);
      expect(await s.delete!(b1.artifactId)).toBe(true);
      expect(await s.delete!(b1.artifactId)).toBe(false);
      expect(s.head(b1.artifactId)).toBeUndefined();
      expect(Buffer.from((await s.read(b2.artifactId))!).toString()).toBe('b2');
    });

    it('artifacts:http:stream — "the file store reads the file as the client takes it, the memory store sends its one buffer without a copy": open() gives the record and the bytes', async () => {
      const s = make();
      const r = await s.put({ data: bytes('x'.repeat(100_000)), mimeType: 'application/octet-stream', sessionId: 's' });
      const first = await s.open!(r.artifactId);
      expect(first?.record).toEqual(r);
      if (kind === 'file') expect(first!.data).toBeInstanceOf(Readable);
      else expect((await s.open!(r.artifactId))!.data).toBe(first!.data); // the one stored buffer, not a copy each time
      expect((await drain(first!.data)).toString()).toBe('x'.repeat(100_000));
      expect(await s.open!('art_AAAAAAAAAAAAAAAAAAAAAA')).toBeUndefined();
      expect(await s.open!('../etc/passwd')).toBeUndefined();
    });

    it('artifacts:tool:put — "a quoted value of tab and printable ASCII only: nothing a header cannot carry": a mime type with a character above U+007E in a parameter is refused at put, naming the field and the character', async () => {
      const s = make();
      const ok = { data: bytes('a,b\n'), sessionId: 's', tenantId: 'A' };
      for (const [mimeType, char] of [['text/csv; title="Fares €"', 'U+20AC'], ['text/plain; x="\u2028"', 'U+2028'], ['text/plain; a="é"', 'U+00E9'], ['text/plain; a="\u0085"', 'U+0085']] as const) {
        await expect(s.put({ ...ok, mimeType })).rejects.toMatchObject({
          code: 'artifact.invalid',
          details: { field: 'mimeType' },
          message: expect.stringMatching(new RegExp(`^artifact mimeType: .* it holds ${char.replace('+', '\\+')}, and a Content-Type header carries only tab and printable ASCII`, 's')),
        });
      }
      await expect(s.put({ ...ok, mimeType: 'text/csv; title="Fares (EUR)\t2025"' })).resolves.toMatchObject({ mimeType: 'text/csv; title="Fares (EUR)\t2025"' });
    });

    it('artifacts:tool:put — "a name that holds control characters (C0, DEL, C1), bidirectional controls, a line or paragraph separator is refused with artifact.invalid naming the field"', async () => {
      const s = make();
      const ok = { data: bytes('x'), mimeType: 'application/octet-stream', sessionId: 's' };
      const bad: [string, string][] = [
        ['invoice\u202Efdp.exe', 'U+202E'],
        ['a\u0085b', 'U+0085'],
        ['a\u009fb', 'U+009F'],
        ['x\u202Ay', 'U+202A'],
        ['x\u2066y.pdf', 'U+2066'],
        ['x\u2069y.pdf', 'U+2069'],
        ['line\u2028break', 'U+2028'],
        ['para\u2029break', 'U+2029'],
        ['rlm\u200Fx', 'U+200F'],
      ];
      for (const [name, char] of bad) {
        await expect(s.put({ ...ok, name }), name).rejects.toMatchObject({
          code: 'artifact.invalid',
          details: { field: 'name' },
          message: expect.stringMatching(new RegExp(`^artifact name: .*without control characters .*; it holds ${char.replace('+', '\\+')}$`)),
        });
      }
      // Letters of any script, emoji and ordinary punctuation stay good names.
      for (const name of ['日本語.csv', 'rép "quoted".csv', 'שלום.txt', '😀 fares.csv']) await expect(s.put({ ...ok, name })).resolves.toMatchObject({ name });
    });
  });
}

describe('artifact store: file, opening a directory', () => {
  it('artifacts:store:sweep — "opening the store removes what a crash can leave (temporaries, bytes without their record)"; complete artifacts stay', async () => {
    const dir = tempDir();
    const a = createFileArtifactStore({ dir });
    const kept = await a.put({ data: bytes('kept'), mimeType: 'text/plain', sessionId: 's' });
    writeFileSync(join(dir, 'art_AAAAAAAAAAAAAAAAAAAAAA.bin.tmp'), 'half');
    writeFileSync(join(dir, 'art_BBBBBBBBBBBBBBBBBBBBBB.json.tmp'), '{');
    writeFileSync(join(dir, 'art_CCCCCCCCCCCCCCCCCCCCCC.bin'), 'bytes whose record was never renamed');
    const b = createFileArtifactStore({ dir });
    expect(readdirSync(dir).sort()).toEqual([`${kept.artifactId}.bin`, `${kept.artifactId}.json`, 'sessions']);
    expect(Buffer.from((await b.read(kept.artifactId))!).toString()).toBe('kept');
  });

  it('artifacts:session:owns — a directory written before the session index existed gets one when opened: deleting a session then deletes its old artifacts too', async () => {
    const dir = tempDir();
    const old = createFileArtifactStore({ dir });
    const mine = await old.put({ data: bytes('mine'), mimeType: 'text/plain', sessionId: 'sess_old' });
    const other = await old.put({ data: bytes('other'), mimeType: 'text/plain', sessionId: 'sess_other' });
    rmSync(join(dir, 'sessions'), { recursive: true }); // as an older turnstate left it
    const reopened = createFileArtifactStore({ dir });
    expect(await reopened.deleteSession!('sess_old')).toBe(1);
    expect(existsSync(join(dir, `${mine.artifactId}.bin`))).toBe(false);
    expect(existsSync(join(dir, `${mine.artifactId}.json`))).toBe(false);
    expect(reopened.head(other.artifactId)).toEqual(other);
  });

  it('artifacts:store:file — "a record exists only for complete bytes": a record whose files an operator removed by hand is gone for head, read and open at once (no cached record outlives its file)', async () => {
    const dir = tempDir();
    const s = createFileArtifactStore({ dir });
    const r = await s.put({ data: bytes('x,y\n'), mimeType: 'text/csv', sessionId: 's', tenantId: 'A' });
    expect(s.head(r.artifactId)).toEqual(r);
    for (const f of readdirSync(dir)) rmSync(join(dir, f), { recursive: true });
    expect(s.head(r.artifactId)).toBeUndefined();
    expect(await s.read(r.artifactId)).toBeUndefined();
    expect(await s.open!(r.artifactId)).toBeUndefined();
  });

  it('artifacts:store:file — "a record exists only for complete bytes": bytes an operator cut short or grew by hand (not the recorded size) are unknown to read, as they are to open', async () => {
    const dir = tempDir();
    const s = createFileArtifactStore({ dir });
    const r = await s.put({ data: bytes('a,b\n1,2\n'), mimeType: 'text/csv', sessionId: 's' });
    truncateSync(join(dir, `${r.artifactId}.bin`), 3);
    expect(await s.read(r.artifactId)).toBeUndefined();
    expect(await s.open!(r.artifactId)).toBeUndefined();
    writeFileSync(join(dir, `${r.artifactId}.bin`), 'a,b\n1,2\n3,4\n');
    expect(await s.read(r.artifactId)).toBeUndefined();
    expect(await s.open!(r.artifactId)).toBeUndefined();
    // Bytes of the recorded size are served again.
    writeFileSync(join(dir, `${r.artifactId}.bin`), 'a,b\n1,2\n');
    expect(Buffer.from((await s.read(r.artifactId))!).toString()).toBe('a,b\n1,2\n');
    expect((await drain((await s.open!(r.artifactId))!.data)).toString()).toBe('a,b\n1,2\n');
  });

  it('artifacts:session:owns — deleteSession waits for the session\'s puts in flight, so none lands after it', async () => {
    const dir = tempDir();
    const s = createFileArtifactStore({ dir });
    const pending = s.put({ data: new Uint8Array(2 * 1024 * 1024).fill(1), mimeType: 'application/octet-stream', sessionId: 'sess_busy' });
    const deleted = s.deleteSession!('sess_busy');
    const r = await pending;
    expect(await deleted).toBe(1);
    expect(s.head(r.artifactId)).toBeUndefined();
    expect(readdirSync(dir)).toEqual(['sessions']);
  });
});
