/**
 * An in-memory ArtifactStore, for tests and embedding. Holds a copy of each artifact's bytes;
 * `open` hands that one buffer to a server (no copy per download), `read` a copy.
 */
import type { ArtifactPut, ArtifactRecord, ArtifactStore } from '../api.js';
import { artifactIdTaken, artifactMint, artifactRecord, maxArtifactBytes, type ArtifactStoreOptions } from './artifact-common.js';

/** `now` and `newId` (ArtifactStoreOptions) make `createdAt` and ids deterministic; the runtime's default store gets the runtime's. */
export function createMemoryArtifactStore(opts: ArtifactStoreOptions = {}): ArtifactStore {
  const maxBytes = maxArtifactBytes(opts.maxBytes);
  const mint = artifactMint(opts);
  const items = new Map<string, { record: ArtifactRecord; data: Uint8Array }>();
  const bySession = new Map<string, Set<string>>();
  const remove = (id: string): boolean => {
    const item = items.get(id);
    if (item === undefined) return false;
    items.delete(id);
    const ids = bySession.get(item.record.sessionId);
    ids?.delete(id);
    if (ids?.size === 0) bySession.delete(item.record.sessionId);
    return true;
  };
  return {
    kind: 'memory',
    async put(input: ArtifactPut) {
      const record = artifactRecord(input, maxBytes, mint);
      if (items.has(record.artifactId)) throw artifactIdTaken(record.artifactId);
      // A copy: a Buffer's slice() is a view, and the caller may reuse its buffer after put().
      items.set(record.artifactId, { record, data: new Uint8Array(input.data) });
      let ids = bySession.get(record.sessionId);
      if (ids === undefined) bySession.set(record.sessionId, (ids = new Set()));
      ids.add(record.artifactId);
      return record;
    },
    head(id) {
      return items.get(id)?.record;
    },
    async read(id) {
      return items.get(id)?.data.slice();
    },
    async open(id) {
      const item = items.get(id);
      return item === undefined ? undefined : { record: item.record, data: item.data };
    },
    async delete(id) {
      return remove(id);
    },
    async deleteSession(sessionId) {
      const ids = [...(bySession.get(sessionId) ?? [])];
      for (const id of ids) remove(id);
      return ids.length;
    },
    close() {
      items.clear();
      bySession.clear();
    },
  };
}
