/**
 * Artifacts as parts: the writer a tool handler gets (`ctx.artifacts`) and the respond() check
 * of `artifact` parts (`{ artifactId, mimeType, sizeBytes, name? }`).
 *
 * Contract: a part may only name an artifact its own session's tools put, with exactly the fields
 * the store recorded. An artifact of another session or tenant is reported exactly like a missing
 * one, so a model (or a user steering it) learns nothing about ids it does not own.
 */
import type { ArtifactRecord, ArtifactStore } from '../api.js';
import { TurnstateError } from '../errors.js';
import { clipForEcho } from '../text.js';
import type { ArtifactRef, ToolArtifacts } from '../registries/types.js';
import type { PartCheck, PartCheckContext } from '../registries/types.js';
import { isObject, type Obj } from './json-object.js';
import { escapeSegment } from './pointer.js';

const encoder = new TextEncoder();

/**
 * The `ctx.artifacts` of one tool call: puts into `store` for this session and tenant while
 * `stopped()` is false. A handler still running when its session is deleted (or the runtime
 * closes) has its put refused; one that was writing then has what it wrote deleted again, so no
 * artifact outlives its session.
 */
export function toolArtifacts(store: ArtifactStore, sessionId: string, tenantId: string | undefined, stopped: () => boolean = () => false): ToolArtifacts {
  const gone = () => new TurnstateError('artifact.session_gone', `session ${sessionId} was deleted or closed while the tool ran: the artifact was not kept`);
  return {
    async put(input) {
      if (stopped()) throw gone();
      const data = typeof input?.data === 'string' ? encoder.encode(input.data) : input?.data;
      const r = await store.put({
        data: data as Uint8Array,
        mimeType: input?.mimeType,
        ...(input?.name !== undefined ? { name: input.name } : {}),
        sessionId,
        ...(tenantId !== undefined ? { tenantId } : {}),
      });
      if (stopped()) {
        await store.delete?.(r.artifactId);
        throw gone();
      }
      return partData(r);
    },
  };
}


/** The fields an artifact part carries: the stored record's, nothing else. */
const PART_FIELDS: readonly string[] = ['artifactId', 'mimeType', 'sizeBytes', 'name'];

/** A JSON Pointer token for a field name (RFC 6901). */
const pointer = (key: string): string => `/${escapeSegment(key)}`;

const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(clipForEcho(v, 64)) : clipForEcho(String(JSON.stringify(v) ?? typeof v), 64));

/** What a part naming `r` carries: exactly its record's fields. */
function partData(r: ArtifactRecord): ArtifactRef {
  const ref: ArtifactRef = { artifactId: r.artifactId, mimeType: r.mimeType, sizeBytes: r.sizeBytes };
  if (r.name !== undefined) ref.name = r.name;
  return ref;
}

/**
 * The respond() check of `artifact` parts against `store` (rule `respond:artifact:known`): the
 * artifact is one its own session's tools put (another session's, another tenant's and a missing
 * one are reported alike), and the part carries that record's `artifactId`, `mimeType`,
 * `sizeBytes` and `name` (which may be left out) and nothing else: a `url` or a `name` of the
 * model's own never reaches a channel. The delivered part carries the record's fields.
 */
export function artifactPartCheck(store: ArtifactStore): PartCheck {
  return {
    rule: 'respond:artifact:known',
    check(data: unknown, ctx: PartCheckContext) {
      if (!isObject(data)) return [{ path: '', message: 'an artifact part carries { artifactId, mimeType, sizeBytes, name? }' }];
      const out: { path: string; message: string }[] = [];
      for (const key of Object.keys(data)) {
        if (PART_FIELDS.includes(key)) continue;
        out.push({
          path: pointer(key),
          message: `${JSON.stringify(clipForEcho(key, 64))} is not a field of an artifact part: give only { artifactId, mimeType, sizeBytes, name } exactly as the tool returned them (a link to the file is added when it is delivered)`,
        });
      }
      const { artifactId, mimeType, sizeBytes } = data;
      if (typeof artifactId !== 'string') out.push({ path: '/artifactId', message: 'artifactId is missing: give the artifactId a tool returned' });
      if (typeof mimeType !== 'string') out.push({ path: '/mimeType', message: 'mimeType is missing: give the mimeType the tool returned with the artifactId' });
      if (typeof sizeBytes !== 'number') out.push({ path: '/sizeBytes', message: 'sizeBytes is missing: give the sizeBytes the tool returned with the artifactId' });
      if (typeof artifactId !== 'string') return out;
      const r = store.head(artifactId);
      if (r === undefined || (r.tenantId ?? undefined) !== (ctx.tenantId ?? undefined) || r.sessionId !== ctx.sessionId) {
        out.push({ path: '/artifactId', message: `no artifact ${JSON.stringify(clipForEcho(artifactId, 64))} exists in this conversation: name only an artifactId a tool returned in this conversation` });
        return out;
      }
      if (typeof mimeType === 'string' && mimeType !== r.mimeType) {
        out.push({ path: '/mimeType', message: `artifact ${artifactId} is ${JSON.stringify(r.mimeType)}, not ${show(mimeType)}` });
      }
      if (typeof sizeBytes === 'number' && sizeBytes !== r.sizeBytes) {
        out.push({ path: '/sizeBytes', message: `artifact ${artifactId} is ${r.sizeBytes} bytes, not ${sizeBytes}` });
      }
      if ('name' in data && data.name !== r.name) {
        const is = r.name === undefined ? 'has no name: leave name out' : `is named ${JSON.stringify(r.name)}`;
        out.push({ path: '/name', message: `artifact ${artifactId} ${is}, not ${show(data.name)}: give the name the tool returned, or none` });
      }
      return out;
    },
    normalize(data) {
      const r = typeof data.artifactId === 'string' ? store.head(data.artifactId) : undefined;
      if (r === undefined) return undefined;
      const want = partData(r);
      const same = Object.keys(data).length === Object.keys(want).length && data.name === want.name;
      return same ? undefined : { ...want };
    },
  };
}
