/**
 * The ArtifactStore contract (src/machines/ports.ts), run against every implementation:
 * memory and the file system.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../src/machines/ports.js';
import { createFileArtifactStore } from '../../src/stores/artifacts-fs.js';
import { createMemoryArtifactStore } from '../../src/stores/artifacts-memory.js';
import type { ArtifactStoreOptions } from '../../src/stores/artifact-common.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'turnstate-artifacts-'));
  dirs.push(d);
  return d;
};
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

const stores: [string, (maxBytes?: number) => ArtifactStore, (opts: ArtifactStoreOptions) => ArtifactStore][] = [
  ['memory', (maxBytes) => createMemoryArtifactStore(maxBytes === undefined ? {} : { maxBytes }), (opts) => createMemoryArtifactStore(opts)],
  ['file', (maxBytes) => createFileArtifactStore({ dir: tempDir(), ...(maxBytes === undefined ? {} : { maxBytes }) }), (opts) => createFileArtifactStore({ dir: tempDir(), ...opts })],
];

/** A counter clock and id source, as a deterministic test injects them. */
function counters(): Required<Pick<ArtifactStoreOptions, 'now' | 'newId'>> {
  let t = 1_700_000_000_000;
  let n = 0;
  return { now: () => (t += 1000), newId: (prefix) => `${prefix}_${String(++n).padStart(6, '0')}` };
}
const ART_FORM = /^art_[A-Za-z0-9_-]{22}$/;

for (const [kind, make, makeWith] of stores) {
  describe(`artifact store contract: ${kind}`, () => {
    it('artifacts:store:injected-id — "An id of the artifact form is used as it is; any other string is wrapped: `art_` + the first 16 bytes of its SHA-256": two stores with the same counter `newId` mint the same ids, each of the artifact form, and serve them', async () => {
      const put = (s: ArtifactStore, i: number) => s.put({ data: bytes(`row ${i}`), mimeType: 'text/csv', sessionId: 's' });
      const a = makeWith(counters());
      const b = makeWith(counters());
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const [ra, rb] = [await put(a, i), await put(b, i)];
        expect(ra).toEqual(rb);
        expect(ra.artifactId).toMatch(ART_FORM);
        expect(a.head(ra.artifactId)).toEqual(ra);
        ids.push(ra.artifactId);
      }
      expect(ids[0]).toBe(`art_${createHash('sha256').update('art_000001').digest().subarray(0, 16).toString('base64url')}`);
      expect(new Set(ids).size).toBe(3);
      // An id that already has the form is used as it is.
      const own = makeWith({ newId: () => 'art_AAAAAAAAAAAAAAAAAAAAAB' });
      expect((await put(own, 0)).artifactId).toBe('art_AAAAAAAAAAAAAAAAAAAAAB');
    });

    it('artifacts:store:injected-clock — "`createdAt` is `new Date(now()).toISOString()`": the injected clock stamps every record', async () => {
      const s = makeWith(counters());
      const r1 = await s.put({ data: bytes('a'), mimeType: 'text/plain', sessionId: 's' });
      const r2 = await s.put({ data: bytes('b'), mimeType: 'text/plain', sessionId: 's' });
      expect([r1.createdAt, r2.createdAt]).toEqual([new Date(1_700_000_001_000).toISOString(), new Date(1_700_000_002_000).toISOString()]);
      expect(s.head(r2.artifactId)?.createdAt).toBe(r2.createdAt);
    });

    it('artifacts:store:id-taken — "an id the store already holds, or is writing, is refused with `artifact.id_taken`": a repeating `newId` never replaces an artifact', async () => {
      const s = makeWith({ newId: () => 'art_000001' });
      const first = await s.put({ data: bytes('first'), mimeType: 'text/plain', sessionId: 's1' });
      const [again, racing] = await Promise.allSettled([
        s.put({ data: bytes('second'), mimeType: 'text/plain', sessionId: 's2' }),
        s.put({ data: bytes('third'), mimeType: 'text/plain', sessionId: 's3' }),
      ]);
      for (const r of [again, racing]) expect(r).toMatchObject({ status: 'rejected', reason: { code: 'artifact.id_taken' } });
      expect(s.head(first.artifactId)).toEqual(first);
      expect(Buffer.from((await s.read(first.artifactId))!).toString()).toBe('first');
      // Two puts in flight with one id (the file store writes for a while): one wins, the other is refused.
      const t = makeWith({ newId: () => 'art_000002' });
      const both = await Promise.allSettled([1, 2].map((i) => t.put({ data: bytes(`x${i}`), mimeType: 'text/plain', sessionId: 's' })));
      expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    });

    it('artifacts:store:injected-options — `now` and `newId` must be functions (store.invalid_argument when the store is made); a `newId` returning no non-empty string or a `now` returning no finite number fails the put; an invalid put draws no id', async () => {
      for (const bad of [{ now: 5 }, { newId: 'art_x' }, { now: null }] as unknown as ArtifactStoreOptions[]) {
        expect(() => makeWith(bad)).toThrow(expect.objectContaining({ code: 'store.invalid_argument' }));
      }
      const ok = { data: bytes('a'), mimeType: 'text/plain', sessionId: 's' };
      await expect(makeWith({ newId: () => '' }).put(ok)).rejects.toMatchObject({ code: 'store.invalid_argument', message: expect.stringContaining("newId('art') must return a non-empty string") });
      await expect(makeWith({ now: () => Number.NaN }).put(ok)).rejects.toMatchObject({ code: 'store.invalid_argument', message: expect.stringContaining('now() must return epoch milliseconds') });
      let drawn = 0;
      const s = makeWith({ newId: (p) => `${p}_${++drawn}` });
      await expect(s.put({ ...ok, mimeType: 'not a type' })).rejects.toMatchObject({ code: 'artifact.invalid' });
      expect(drawn).toBe(0);
    });

    it('artifacts:store:round-trip — put returns the record (128-bit id, mime type, size, name, session, tenant); head and read give it back; the bytes are a copy', async () => {
      const s = make();
      const data = bytes('id,price\nTS205,42\n');
      const r = await s.put({ data, mimeType: 'text/csv; charset=utf-8', name: 'fares.csv', sessionId: 'sess_1', tenantId: 'acme' });
      expect(r).toEqual({ artifactId: expect.stringMatching(/^art_[A-Za-z0-9_-]{22}$/), mimeType: 'text/csv; charset=utf-8', sizeBytes: data.byteLength, name: 'fares.csv', sessionId: 'sess_1', tenantId: 'acme', createdAt: expect.any(String) });
      data[0] = 0;
      // A Buffer's slice() is a view: a caller that reuses its Buffer must not change what was stored.
      const buf = Buffer.from('hello');
      const rb = await s.put({ data: buf, mimeType: 'text/plain', sessionId: 'sess_1' });
      buf.write('HACKD');
      expect(Buffer.from((await s.read(rb.artifactId))!).toString()).toBe('hello');
      expect(s.head(r.artifactId)).toEqual(r);
      const read = (await s.read(r.artifactId))!;
      expect(new TextDecoder().decode(read)).toBe('id,price\nTS205,42\n');
      read[0] = 0;
      expect(new TextDecoder().decode((await s.read(r.artifactId))!)).toBe('id,price\nTS205,42\n');
    });

    it('artifacts:tool:put — "bytes are copied, so the caller may reuse its buffer": a buffer changed right after put() is called, before its promise settles, changes nothing stored', async () => {
      const s = make();
      const data = bytes('id,fare\n1,129\n');
      const pending = s.put({ data, mimeType: 'text/csv', name: 'fares.csv', sessionId: 'sess_1' });
      data.fill(0x21); // the caller reuses its buffer for the next chunk
      const buf = Buffer.from('hello, world');
      const view = buf.subarray(0, 5);
      const pendingView = s.put({ data: view, mimeType: 'text/plain', sessionId: 'sess_1' });
      buf.write('HACKD');
      const [r, rv] = await Promise.all([pending, pendingView]);
      expect(r.sizeBytes).toBe(14);
      expect(new TextDecoder().decode((await s.read(r.artifactId))!)).toBe('id,fare\n1,129\n');
      expect(Buffer.from((await s.read(rv.artifactId))!).toString()).toBe('hello');
    });

    it('artifacts:store:ids — ids are distinct and unguessable; an unknown or malformed id is unknown', async () => {
      const s = make();
      const ids = new Set<string>();
      for (let i = 0; i < 200; i++) ids.add((await s.put({ data: bytes(String(i)), mimeType: 'text/plain', sessionId: 's' })).artifactId);
      expect(ids.size).toBe(200);
      for (const id of ['art_AAAAAAAAAAAAAAAAAAAAAA', '../x', 'art_../../etc/passwd', '']) {
        expect(s.head(id)).toBeUndefined();
        expect(await s.read(id)).toBeUndefined();
      }
    });

    it('artifacts:store:invalid — a bad mime type, name, session or an oversize body is refused with artifact.invalid naming the field; nothing is stored', async () => {
      const s = make(16);
      const ok = { data: bytes('x'), mimeType: 'text/plain', sessionId: 's' };
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ mimeType: 'csv' }, /^artifact mimeType: "csv" is not a MIME type/],
        [{ mimeType: 'text/html\r\nset-cookie: a=b' }, /^artifact mimeType: /],
        [{ data: 'not bytes' }, /^artifact data: must be a Uint8Array/],
        [{ data: new Uint8Array(17) }, /^artifact data: 17 bytes is over this store's limit of 16 bytes/],
        [{ name: '' }, /^artifact name: must be a non-empty string/],
        [{ name: 'a\nb' }, /^artifact name: .*without control characters/],
        // Header breakers inside parameters (CR, LF, Unicode line and no-break spaces): such a type could never be served.
        [{ mimeType: 'text/plain\r\n;x=y' }, /^artifact mimeType: /],
        [{ mimeType: 'text/plain\u2028;x=y' }, /^artifact mimeType: /],
        [{ mimeType: 'text/plain\u00a0; charset=utf-8' }, /^artifact mimeType: /],
        [{ name: 'fares\uD800.csv' }, /^artifact name: .*unpaired surrogates/],
        [{ name: 'x'.repeat(256) }, /^artifact name: .*at most 255 characters/],
        [{ sessionId: '' }, /^artifact sessionId: must name the session/],
      ];
      for (const [patch, message] of cases) {
        await expect(s.put({ ...ok, ...patch } as never)).rejects.toMatchObject({ code: 'artifact.invalid', message: expect.stringMatching(message) });
      }
      // Characters, not UTF-16 units: 255 emoji are a good name; parameters with spaces and tabs are a good type.
      await expect(s.put({ ...ok, data: bytes('y'), name: '😀'.repeat(255) })).resolves.toMatchObject({ name: '😀'.repeat(255) });
      await expect(s.put({ ...ok, data: bytes('z'), mimeType: 'text/plain ;\tcharset=utf-8' })).resolves.toMatchObject({ mimeType: 'text/plain ;\tcharset=utf-8' });
    });

    it('artifacts:store:max-bytes — maxBytes must be a positive integer: NaN, a negative or a fraction is refused when the store is made (it would turn the limit off)', () => {
      for (const bad of [Number.NaN, -1, 0, 1.5, Number.POSITIVE_INFINITY]) {
        expect(() => make(bad)).toThrow(expect.objectContaining({ code: 'store.invalid_argument', message: expect.stringContaining('maxBytes must be a positive integer') }));
      }
    });

    it('artifacts:store:max-bytes-shown — "a refusal shows the value received": a string is shown quoted and -0 as -0, not as the number String() makes of them', () => {
      for (const [bad, shown] of [['1000', '"1000"'], [-0, '-0'], [Number.NaN, 'NaN'], [2 ** 53 + 2, '9007199254740994']] as const) {
        expect(() => make(bad as number), shown).toThrow(expect.objectContaining({ code: 'store.invalid_argument', message: `artifact store: maxBytes must be a positive integer, got ${shown}` }));
      }
    });
  });
}

describe('artifact store: file', () => {
  it('artifacts:store:file — artifacts survive a reopen of the directory; only complete <id>.bin + <id>.json pairs are left', async () => {
    const dir = tempDir();
    const a = createFileArtifactStore({ dir });
    const r = await a.put({ data: bytes('ticket'), mimeType: 'application/pdf', name: 'ticket.pdf', sessionId: 's1', tenantId: 't' });
    const b = createFileArtifactStore({ dir });
    expect(b.head(r.artifactId)).toEqual(r);
    expect(new TextDecoder().decode((await b.read(r.artifactId))!)).toBe('ticket');
    expect(readdirSync(dir).sort()).toEqual([`${r.artifactId}.bin`, `${r.artifactId}.json`, 'sessions']);
  });
});
