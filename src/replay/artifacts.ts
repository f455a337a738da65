/**
 * The artifacts a replay knows: the ones the recorded session's `artifact` parts named. Tool
 * handlers do not run in a replay (their results are served from the recording), so nothing is
 * stored; the respond() artifact check then accepts what the recording accepted and rejects an
 * id the recording never named (what another model under replay might invent). A known
 * artifact carries the fields the delivered part did (its `name` too), all of the recorded
 * session's.
 */
import { TurnstateError } from '../errors.js';
import type { ArtifactRecord, ArtifactStore } from '../machines/ports.js';
import type { Recording } from './recording.js';

export function recordedArtifacts(rec: Recording): ArtifactStore {
  const known = new Map<string, ArtifactRecord>();
  for (const e of rec.events) {
    if (e.type !== 'part.received' || e.part.metadata.partType !== 'artifact') continue;
    const d = e.part.data ?? {};
    if (typeof d.artifactId !== 'string' || typeof d.mimeType !== 'string' || typeof d.sizeBytes !== 'number') continue;
    known.set(d.artifactId, {
      artifactId: d.artifactId,
      mimeType: d.mimeType,
      sizeBytes: d.sizeBytes,
      ...(typeof d.name === 'string' ? { name: d.name } : {}),
      sessionId: rec.record.id,
      ...(rec.record.tenantId !== undefined ? { tenantId: rec.record.tenantId } : {}),
      createdAt: e.at,
    });
  }
  return {
    kind: 'replay',
    async put() {
      throw new TurnstateError('replay.artifacts', 'a replay stores no artifacts: tool results are served from the recording');
    },
    head: (id) => known.get(id),
    read: async () => undefined,
  };
}
