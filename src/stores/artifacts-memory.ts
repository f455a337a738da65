/** An in-memory ArtifactStore, for tests and embedding. Holds a copy of each artifact's bytes. */
import type { ArtifactPut, ArtifactRecord, ArtifactStore } from '../api.js';
import { artifactRecord, DEFAULT_MAX_ARTIFACT_BYTES } from './artifact-common.js';

export function createMemoryArtifactStore(opts: { maxBytes?: number } = {}): ArtifactStore {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
  const items = new Map<string, { record: ArtifactRecord; data: Uint8Array }>();
  return {
    kind: 'memory',
    async put(input: ArtifactPut) {
      const record = artifactRecord(input, maxBytes, new Date().toISOString());
      items.set(record.artifactId, { record, data: input.data.slice() });
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
