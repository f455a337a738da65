/** An in-memory ArtifactStore, for tests and embedding. Holds a copy of each artifact's bytes. */
import type { ArtifactPut, ArtifactRecord, ArtifactStore } from '../api.js';
import { artifactRecord, maxArtifactBytes } from './artifact-common.js';

export function createMemoryArtifactStore(opts: { maxBytes?: number } = {}): ArtifactStore {
  const maxBytes = maxArtifactBytes(opts.maxBytes);
  const items = new Map<string, { record: ArtifactRecord; data: Uint8Array }>();
  return {
    kind: 'memory',
    async put(input: ArtifactPut) {
      const record = artifactRecord(input, maxBytes, new Date().toISOString());
      // A copy: a Buffer's slice() is a view, and the caller may reuse its buffer after put().
      items.set(record.artifactId, { record, data: new Uint8Array(input.data) });
      return record;
    },
    head(id) {
      return items.get(id)?.record;
    },
    async read(id) {
      return items.get(id)?.data.slice();
    },
    close() {
      items.clear();
    },
  };
}
