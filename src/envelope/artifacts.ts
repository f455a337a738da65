/**
 * Artifacts as parts: the writer a tool handler gets (`ctx.artifacts`) and the respond() check
 * of `artifact` parts (`{ artifactId, mimeType, sizeBytes, name? }`).
 *
 * Contract: a part may only name an artifact of its own session's tenant, with the mime type and
 * size the store recorded. An artifact of another tenant is reported exactly like a missing one,
 * so a model (or a user steering it) learns nothing about ids it does not own.
 */
import type { ArtifactStore } from '../api.js';
import type { ArtifactRef, ToolArtifacts } from '../registries/types.js';
import type { PartCheck, PartCheckContext } from '../registries/types.js';

const encoder = new TextEncoder();

/** The `ctx.artifacts` of one tool call: puts into `store` for this session and tenant. */
export function toolArtifacts(store: ArtifactStore, sessionId: string, tenantId: string | undefined): ToolArtifacts {
  return {
    async put(input) {
      const data = typeof input?.data === 'string' ? encoder.encode(input.data) : input?.data;
      const r = await store.put({
        data: data as Uint8Array,
        mimeType: input?.mimeType,
        ...(input?.name !== undefined ? { name: input.name } : {}),
        sessionId,
        ...(tenantId !== undefined ? { tenantId } : {}),
      });
      const ref: ArtifactRef = { artifactId: r.artifactId, mimeType: r.mimeType, sizeBytes: r.sizeBytes };
      if (r.name !== undefined) ref.name = r.name;
      return ref;
    },
  };
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The respond() check of `artifact` parts against `store` (rule `respond:artifact:known`). */
export function artifactPartCheck(store: ArtifactStore): PartCheck {
  return {
    rule: 'respond:artifact:known',
    check(data: unknown, ctx: PartCheckContext) {
      if (!isObject(data)) return [{ path: '', message: 'an artifact part carries { artifactId, mimeType, sizeBytes }' }];
      const out: { path: string; message: string }[] = [];
      const { artifactId, mimeType, sizeBytes } = data;
      if (typeof artifactId !== 'string') out.push({ path: '/artifactId', message: 'artifactId is missing: give the artifactId a tool returned' });
      if (typeof mimeType !== 'string') out.push({ path: '/mimeType', message: 'mimeType is missing: give the mimeType the tool returned with the artifactId' });
      if (typeof sizeBytes !== 'number') out.push({ path: '/sizeBytes', message: 'sizeBytes is missing: give the sizeBytes the tool returned with the artifactId' });
      if (typeof artifactId !== 'string') return out;
      const r = store.head(artifactId);
      if (r === undefined || (r.tenantId ?? undefined) !== (ctx.tenantId ?? undefined)) {
        out.push({ path: '/artifactId', message: `no artifact ${JSON.stringify(artifactId.slice(0, 64))} exists: name only an artifactId a tool returned in this conversation` });
        return out;
      }
      if (typeof mimeType === 'string' && mimeType !== r.mimeType) {
        out.push({ path: '/mimeType', message: `artifact ${artifactId} is ${JSON.stringify(r.mimeType)}, not ${JSON.stringify(mimeType.slice(0, 64))}` });
      }
      if (typeof sizeBytes === 'number' && sizeBytes !== r.sizeBytes) {
        out.push({ path: '/sizeBytes', message: `artifact ${artifactId} is ${r.sizeBytes} bytes, not ${sizeBytes}` });
      }
      return out;
    },
  };
}
