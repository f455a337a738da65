/**
 * An ArtifactStore on the file system: `<dir>/<id>.bin` holds the bytes, `<id>.json` the record,
 * and `<dir>/sessions/<sha-256 of the session id>` the ids each session put, one a line (what
 * `deleteSession` removes). The default of `turnstate serve` (under its data directory).
 *
 * Contract:
 * - put() writes the session's index line, then the bytes, then the record, each file to a
 *   temporary name that is fsynced and renamed, then fsyncs the directory: it resolves once the
 *   artifact is durable, and a record exists only for complete bytes. A put that fails removes
 *   what it wrote (an index line naming nothing is harmless) and rejects with
 *   `store.write_failed`. The bytes are copied before put() first awaits, so the caller may
 *   reuse its buffer at once.
 * - Opening the store sweeps what a crash can leave: temporaries (`*.tmp`) and bytes without
 *   their record. One store per directory at a time (`turnstate serve` holds the data-dir lock):
 *   a second one opened while the first writes would sweep its temporaries.
 * - Ids are checked against their form before any path is built, so no id reaches outside `dir`.
 *   `head` reads the small record synchronously (a bounded cache keeps recent ones, each hit
 *   checked against the file, so a record removed by hand is gone); `open` streams the file.
 *   `read` and `open` serve only bytes of the recorded size: bytes changed by hand to another
 *   size are not the artifact, and it is unknown (undefined).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TurnstateError } from '../errors.js';
import type { ArtifactPut, ArtifactRecord, ArtifactStore } from '../api.js';
import { ARTIFACT_ID, artifactIdTaken, artifactMint, artifactRecord, maxArtifactBytes, type ArtifactStoreOptions } from './artifact-common.js';

const CACHE_SIZE = 1024;
const SESSIONS = 'sessions';
const TMP = '.tmp';

/** The index file of a session: a hash, so any session id makes a safe, fixed-length name. */
const indexName = (sessionId: string): string => createHash('sha256').update(sessionId).digest('hex');

/** fsync a directory, so the names created or renamed in it survive a crash (not supported on Windows). */
async function syncDir(path: string): Promise<void> {
  if (process.platform === 'win32') return;
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Writes `data` to `<path>.tmp`, fsyncs it and renames it into place; records each name it made in `made`. */
async function writeDurable(path: string, data: Uint8Array | string, made: string[]): Promise<void> {
  const tmp = `${path}${TMP}`;
  const fh = await open(tmp, 'wx');
  made.push(tmp);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  made.push(path);
}

/**
 * What a crash can leave, removed when the store opens: temporaries, and bytes whose record was
 * never renamed into place. A directory of artifacts written before the session index existed
 * gets its index (built aside, then renamed, so a crash midway builds it again).
 */
function sweep(dir: string): void {
  const names = readdirSync(dir);
  const records = new Set(names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)));
  for (const n of names) {
    const orphan = n.endsWith('.bin') && !records.has(n.slice(0, -4));
    if (n.endsWith(TMP) || orphan) rmSync(join(dir, n), { recursive: true, force: true });
  }
  if (existsSync(join(dir, SESSIONS))) return;
  const building = join(dir, `${SESSIONS}${TMP}`);
  mkdirSync(building);
  const lines = new Map<string, string[]>();
  for (const id of records) {
    if (!ARTIFACT_ID.test(id)) continue;
    try {
      const r = JSON.parse(readFileSync(join(dir, `${id}.json`), 'utf8')) as ArtifactRecord;
      const file = indexName(r.sessionId);
      lines.set(file, [...(lines.get(file) ?? []), id]);
    } catch {
      // An unreadable record is served by nobody; it has no session to be deleted with.
    }
  }
  for (const [file, ids] of lines) writeFileSync(join(building, file), `${ids.join('\n')}\n`);
  renameSync(building, join(dir, SESSIONS));
}

/** `now` and `newId` (ArtifactStoreOptions) make `createdAt` and ids deterministic. */
export function createFileArtifactStore(opts: { dir: string } & ArtifactStoreOptions): ArtifactStore {
  const dir = opts.dir;
  const maxBytes = maxArtifactBytes(opts.maxBytes);
  const mint = artifactMint(opts);
  mkdirSync(dir, { recursive: true });
  sweep(dir);
  const sessionsDir = join(dir, SESSIONS);
  const bin = (id: string): string => join(dir, `${id}.bin`);
  const json = (id: string): string => join(dir, `${id}.json`);
  const cache = new Map<string, ArtifactRecord>();
  const remember = (r: ArtifactRecord): void => {
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(r.artifactId, r);
  };
  // Puts still writing, per session: deleteSession waits for them, so none lands after it.
  const inFlight = new Map<string, Set<Promise<unknown>>>();
  // The ids of those puts: an injected newId that repeats one is refused, as one already stored is.
  const writing = new Set<string>();

  const head = (id: string): ArtifactRecord | undefined => {
    if (typeof id !== 'string' || !ARTIFACT_ID.test(id)) return undefined;
    const hit = cache.get(id);
    if (hit) {
      if (existsSync(json(id))) return hit;
      cache.delete(id);
      return undefined;
    }
    let record: ArtifactRecord;
    try {
      record = JSON.parse(readFileSync(json(id), 'utf8')) as ArtifactRecord;
    } catch {
      return undefined;
    }
    remember(record);
    return record;
  };

  /** Appends the id to its session's index (fsynced; the directory too when the file is new). */
  const index = async (record: ArtifactRecord): Promise<void> => {
    const fh = await open(join(sessionsDir, indexName(record.sessionId)), 'a');
    let created: boolean;
    try {
      created = (await fh.stat()).size === 0;
      await fh.write(`${record.artifactId}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (created) await syncDir(sessionsDir);
  };

  const write = async (record: ArtifactRecord, bytes: Uint8Array): Promise<void> => {
    const made: string[] = [];
    try {
      await index(record);
      await writeDurable(bin(record.artifactId), bytes, made);
      await writeDurable(json(record.artifactId), JSON.stringify(record), made);
      await syncDir(dir);
    } catch (err) {
      await Promise.all(made.map((p) => rm(p, { force: true }).catch(() => undefined)));
      const why = (err as Error).message;
      throw new TurnstateError('store.write_failed', `artifact store: could not store ${record.artifactId} (${bytes.byteLength} bytes) in ${dir}: ${why}; the files it wrote were removed`, {
        cause: err,
        details: { artifactId: record.artifactId },
      });
    }
  };

  /** Removes the record, then the bytes; true when the record was there. */
  const remove = async (id: string): Promise<boolean> => {
    cache.delete(id);
    const had = existsSync(json(id));
    await rm(json(id), { force: true });
    await rm(bin(id), { force: true });
    return had;
  };

  return {
    kind: 'file',
    async put(input: ArtifactPut) {
      const record = artifactRecord(input, maxBytes, mint);
      // Never over another artifact's files (a rename would replace them): an id must be new.
      if (writing.has(record.artifactId) || head(record.artifactId) !== undefined) throw artifactIdTaken(record.artifactId);
      // A copy, before the first await: the caller may reuse its buffer as soon as put() returns
      // (a Buffer's slice() is a view, so `new Uint8Array(...)`, which copies).
      const bytes = new Uint8Array(input.data);
      writing.add(record.artifactId);
      const job = write(record, bytes);
      let jobs = inFlight.get(record.sessionId);
      if (jobs === undefined) inFlight.set(record.sessionId, (jobs = new Set()));
      jobs.add(job);
      try {
        await job;
      } finally {
        writing.delete(record.artifactId);
        jobs.delete(job);
        if (jobs.size === 0 && inFlight.get(record.sessionId) === jobs) inFlight.delete(record.sessionId);
      }
      remember(record);
      return record;
    },
    head,
    async read(id) {
      const record = head(id);
      if (record === undefined) return undefined;
      let data: Buffer;
      try {
        data = await readFile(bin(id));
      } catch {
        return undefined;
      }
      // As open(): bytes that are not the recorded size are not the artifact (changed by hand).
      return data.byteLength === record.sizeBytes ? new Uint8Array(data) : undefined;
    },
    async open(id) {
      const record = head(id);
      if (record === undefined) return undefined;
      let fh;
      try {
        fh = await open(bin(id), 'r');
      } catch {
        return undefined;
      }
      // Bytes that are not the recorded size are not the artifact (changed by hand): unknown.
      let size: number | undefined;
      try {
        size = (await fh.stat()).size;
      } catch {
        size = undefined;
      }
      if (size !== record.sizeBytes) {
        await fh.close();
        return undefined;
      }
      return { record, data: fh.createReadStream() };
    },
    async delete(id) {
      if (head(id) === undefined) return false;
      const had = await remove(id);
      await syncDir(dir);
      return had;
    },
    async deleteSession(sessionId) {
      await Promise.allSettled([...(inFlight.get(sessionId) ?? [])]);
      const path = join(sessionsDir, indexName(sessionId));
      let listed: string[];
      try {
        listed = (await readFile(path, 'utf8')).split('\n');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw err;
      }
      let n = 0;
      for (const id of new Set(listed)) {
        // Only this session's: the index is a hint, the record says whose an artifact is.
        if (head(id)?.sessionId === sessionId && (await remove(id))) n++;
      }
      await rm(path, { force: true });
      await syncDir(dir);
      return n;
    },
    async close() {
      await Promise.allSettled([...inFlight.values()].flatMap((jobs) => [...jobs]));
    },
  };
}
