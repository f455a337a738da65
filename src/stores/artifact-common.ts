/**
 * What every ArtifactStore shares: id minting (128 random bits), the id form, and the checks a
 * put must pass. One place, so the memory and file stores cannot drift apart.
 */
import { randomBytes } from 'node:crypto';
import { TurnstateError } from '../errors.js';
import type { ArtifactPut, ArtifactRecord } from '../api.js';

/** `art_` and 22 base64url characters (16 random bytes). */
export const ARTIFACT_ID = /^art_[A-Za-z0-9_-]{22}$/;

/** A MIME type `type/subtype` with optional parameters; nothing that could break a header. */
export const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(?:\s*;\s*[a-z0-9!#$&^_.+-]+=(?:[a-z0-9!#$&^_.+-]+|"[^"\r\n\\]*"))*$/i;

/** Default cap on one artifact's size (25 MiB). */
export const DEFAULT_MAX_ARTIFACT_BYTES = 25 * 1024 * 1024;

export function newArtifactId(): string {
  return `art_${randomBytes(16).toString('base64url')}`;
}

/** Checks a put and returns the record to store; throws `artifact.invalid` naming the field. */
export function artifactRecord(input: ArtifactPut, maxBytes: number, createdAt: string): ArtifactRecord {
  const bad = (field: string, message: string): never => {
    throw new TurnstateError('artifact.invalid', `artifact ${field}: ${message}`, { details: { field } });
  };
  if (input === null || typeof input !== 'object') bad('input', 'put() takes { data, mimeType, name?, sessionId, tenantId? }');
  if (!(input.data instanceof Uint8Array)) bad('data', 'must be a Uint8Array (or a string, through ctx.artifacts.put)');
  if (typeof input.mimeType !== 'string' || !MIME_TYPE.test(input.mimeType)) {
    bad('mimeType', `${JSON.stringify(input.mimeType)} is not a MIME type like "text/csv" or "image/png"`);
  }
  if (input.data.byteLength > maxBytes) bad('data', `${input.data.byteLength} bytes is over this store's limit of ${maxBytes} bytes`);
  if (input.name !== undefined && (typeof input.name !== 'string' || input.name.length === 0 || input.name.length > 255 || /[\u0000-\u001f\u007f]/.test(input.name))) {
    bad('name', 'must be a non-empty string of at most 255 characters without control characters');
  }
  if (typeof input.sessionId !== 'string' || input.sessionId === '') bad('sessionId', 'must name the session the artifact belongs to');
  if (input.tenantId !== undefined && typeof input.tenantId !== 'string') bad('tenantId', 'must be a string');
  return {
    artifactId: newArtifactId(),
    mimeType: input.mimeType,
    sizeBytes: input.data.byteLength,
    ...(input.name !== undefined ? { name: input.name } : {}),
    sessionId: input.sessionId,
    ...(input.tenantId !== undefined ? { tenantId: input.tenantId } : {}),
    createdAt,
  };
}
