/**
 * What every ArtifactStore shares: id minting (128 random bits), the id form, and the checks a
 * put must pass. One place, so the memory and file stores cannot drift apart.
 */
import { randomBytes } from 'node:crypto';
import { TurnstateError } from '../errors.js';
import type { ArtifactPut, ArtifactRecord } from '../api.js';

/** `art_` and 22 base64url characters (16 random bytes). */
export const ARTIFACT_ID = /^art_[A-Za-z0-9_-]{22}$/;

/**
 * A MIME type `type/subtype` with optional parameters; nothing that could break a header (only
 * spaces and tabs around `;`: `\s` would let CR, LF and Unicode spaces in).
 */
export const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(?:[ \t]*;[ \t]*[a-z0-9!#$&^_.+-]+=(?:[a-z0-9!#$&^_.+-]+|"[^"\r\n\\\x00-\x08\x0a-\x1f\x7f]*"))*$/i;

/** A UTF-16 surrogate without its pair: not text (no UTF-8 form, no header, no URI). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A store's `maxBytes` option: a positive integer (NaN or a negative number would turn the limit off). */
export function maxArtifactBytes(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_ARTIFACT_BYTES;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TurnstateError('store.invalid_argument', `artifact store: maxBytes must be a positive integer, got ${String(value)}`);
  }
  return value;
}

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
  if (input.name !== undefined && (typeof input.name !== 'string' || !goodName(input.name))) {
    bad('name', 'must be a non-empty string of at most 255 characters without control characters or unpaired surrogates');
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

/** 1-255 characters (code points: an emoji is one), no control character, well-formed UTF-16. */
function goodName(name: string): boolean {
  if (name.length === 0 || name.length > 510 || /[\u0000-\u001f\u007f]/.test(name) || LONE_SURROGATE.test(name)) return false;
  let n = 0;
  for (const _ of name) if (++n > 255) return false;
  return true;
}
