/**
 * An ArtifactStore on the file system: `<dir>/<id>.bin` holds the bytes, `<id>.json` the record.
 * The default of `turnstate serve` (under its data directory).
 *
 * Contract: both files are written to a temporary name and renamed, bytes first, so a record
 * exists only for complete bytes and a crash leaves no half artifact. The bytes are copied before
 * put() first awaits, so the caller may reuse its buffer at once. Ids are checked against
 * their form before any path is built, so no id reaches outside `dir`. `head` reads the small
 * record synchronously (a bounded cache keeps recent ones).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArtifactPut, ArtifactRecord, ArtifactStore } from '../api.js';
import { ARTIFACT_ID, artifactRecord, maxArtifactBytes } from './artifact-common.js';

const CACHE_SIZE = 1024;

export function createFileArtifactStore(opts: { dir: string; maxBytes?: number }): ArtifactStore {
  const dir = opts.dir;
  const maxBytes = maxArtifactBytes(opts.maxBytes);
  mkdirSync(dir, { recursive: true });
  const cache = new Map<string, ArtifactRecord>();
  const remember = (r: ArtifactRecord): void => {
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(r.artifactId, r);
  };
  const writeAtomic = async (path: string, data: Uint8Array | string): Promise<void> => {
    const tmp = `${path}.tmp`;
    await writeFile(tmp, data, { flag: 'wx' });
    await rename(tmp, path);
  };
  const head = (id: string): ArtifactRecord | undefined => {
    if (typeof id !== 'string' || !ARTIFACT_ID.test(id)) return undefined;
    const hit = cache.get(id);
    if (hit) return hit;
    let record: ArtifactRecord;
    try {
      record = JSON.parse(readFileSync(join(dir, `${id}.json`), 'utf8')) as ArtifactRecord;
    } catch {
      return undefined;
    }
    remember(record);
    return record;
  };
  return {
    kind: 'file',
    async put(input: ArtifactPut) {
      const record = artifactRecord(input, maxBytes, new Date().toISOString());
      // A copy, before the first await: the caller may reuse its buffer as soon as put() returns
      // (a Buffer's slice() is a view, so `new Uint8Array(...)`, which copies).
      const bytes = new Uint8Array(input.data);
      await writeAtomic(join(dir, `${record.artifactId}.bin`), bytes);
      await writeAtomic(join(dir, `${record.artifactId}.json`), JSON.stringify(record));
      remember(record);
      return record;
    },
    head,
    async read(id) {
      if (head(id) === undefined) return undefined;
      try {
        return new Uint8Array(await readFile(join(dir, `${id}.bin`)));
      } catch {
        return undefined;
      }
    },
  };
}
