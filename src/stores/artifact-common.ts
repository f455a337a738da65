/**
 * What every ArtifactStore shares: the options, id minting (128 random bits, or from an injected
 * `newId`), the id form, and the checks a put must pass. One place, so the memory and file stores
 * cannot drift apart.
 */
import { createHash, randomBytes } from 'node:crypto';
import { TurnstateError } from '../errors.js';
import { formatValue } from '../limits.js';
import type { ArtifactPut, ArtifactRecord } from '../api.js';

/** `art_` and 22 base64url characters (16 random bytes). */
export const ARTIFACT_ID = /^art_[A-Za-z0-9_-]{22}$/;

/**
 * A MIME type `type/subtype` with optional parameters; nothing that could break a header (only
 * spaces and tabs around `;`: `\s` would let CR, LF and Unicode spaces in). A quoted value holds
 * what a header can carry: tab and printable ASCII (`\x20-\x7e`) but `"` and `\`.
 */
export const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(?:[ \t]*;[ \t]*[a-z0-9!#$&^_.+-]+=(?:[a-z0-9!#$&^_.+-]+|"[\t\x20\x21\x23-\x5b\x5d-\x7e]*"))*$/i;

/** What no header value can hold: anything but tab and printable ASCII. */
const NOT_HEADER_TEXT = /[^\t\x20-\x7e]/;

/**
 * What a name may not hold: controls (C0, DEL, C1), bidirectional controls (U+061C, U+200E-U+200F,
 * U+202A-U+202E, U+2066-U+2069: they make `invoice\u202Efdp.exe` read as `invoiceexe.pdf`) and the
 * line and paragraph separators U+2028, U+2029.
 */
const NOT_NAME_TEXT = /[\p{Cc}\p{Bidi_Control}\u2028\u2029]/u;

/** A UTF-16 surrogate without its pair: not text (no UTF-8 form, no header, no URI). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A store's `maxBytes` option: a positive integer (NaN or a negative number would turn the limit off). */
export function maxArtifactBytes(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_ARTIFACT_BYTES;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TurnstateError('store.invalid_argument', `artifact store: maxBytes must be a positive integer, got ${formatValue(value)}`);
  }
  return value;
}

/** Default cap on one artifact's size (25 MiB). */
export const DEFAULT_MAX_ARTIFACT_BYTES = 25 * 1024 * 1024;

/** The options both built-in artifact stores take (the file store also its `dir`). */
export interface ArtifactStoreOptions {
  /** Cap on one artifact's size in bytes (default 25 MiB). */
  maxBytes?: number | undefined;
  /** Epoch-ms clock for each record's `createdAt` (default Date.now). */
  now?: (() => number) | undefined;
  /**
   * Id source, called as `newId('art')` once per put (default: 128 random bits). An id of the
   * artifact form (`art_` + 22 base64url characters) is used as it is; any other string is
   * wrapped: `art_` + the first 16 bytes of its SHA-256, base64url (the same string, the same
   * id). Ids are only as unguessable as what it returns: a counter is for tests and replays.
   */
  newId?: ((prefix: string) => string) | undefined;
}

/** What a store mints each put with: the record's id and its `createdAt`. */
export interface ArtifactMint {
  newId(): string;
  createdAt(): string;
}

const storeArgument = (message: string): TurnstateError => new TurnstateError('store.invalid_argument', `artifact store: ${message}`);

/** A store's `now` and `newId` options, checked when the store is made (functions, or absent for the defaults). */
export function artifactMint(opts: Pick<ArtifactStoreOptions, 'now' | 'newId'>): ArtifactMint {
  const { now, newId } = opts;
  if (now !== undefined && typeof now !== 'function') throw storeArgument(`now must be a function returning epoch milliseconds, got ${formatValue(now)}`);
  if (newId !== undefined && typeof newId !== 'function') throw storeArgument(`newId must be a function (prefix) => id, got ${formatValue(newId)}`);
  return {
    newId: newId === undefined ? newArtifactId : () => artifactIdFrom(newId('art')),
    createdAt() {
      if (now === undefined) return new Date().toISOString();
      const ms = now();
      if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw storeArgument(`now() must return epoch milliseconds (a finite number), got ${formatValue(ms)}`);
      return new Date(ms).toISOString();
    },
  };
}

export function newArtifactId(): string {
  return `art_${randomBytes(16).toString('base64url')}`;
}

/** An injected id as an artifact id: as it is when it has the form, else `art_` + 128 bits of its SHA-256. */
export function artifactIdFrom(id: unknown): string {
  if (typeof id !== 'string' || id === '') throw storeArgument(`newId('art') must return a non-empty string, got ${formatValue(id)}`);
  if (ARTIFACT_ID.test(id)) return id;
  return `art_${createHash('sha256').update(id).digest().subarray(0, 16).toString('base64url')}`;
}

/** An id a store already holds (or is writing): refused, so an injected id source that repeats never replaces an artifact. */
export function artifactIdTaken(id: string): TurnstateError {
  return new TurnstateError('artifact.id_taken', `artifact store: the id ${id} is already taken (the store's newId returned an id it gave before); nothing was stored`, {
    details: { artifactId: id },
  });
}

/** Checks a put and returns the record to store; throws `artifact.invalid` naming the field. */
export function artifactRecord(input: ArtifactPut, maxBytes: number, mint: ArtifactMint): ArtifactRecord {
  const bad = (field: string, message: string): never => {
    throw new TurnstateError('artifact.invalid', `artifact ${field}: ${message}`, { details: { field } });
  };
  if (input === null || typeof input !== 'object') bad('input', 'put() takes { data, mimeType, name?, sessionId, tenantId? }');
  if (!(input.data instanceof Uint8Array)) bad('data', 'must be a Uint8Array (or a string, through ctx.artifacts.put)');
  if (typeof input.mimeType !== 'string' || !MIME_TYPE.test(input.mimeType)) {
    const odd = typeof input.mimeType === 'string' ? NOT_HEADER_TEXT.exec(input.mimeType)?.[0] : undefined;
    const why = odd === undefined ? '' : `: it holds ${codePoint(odd)}, and a Content-Type header carries only tab and printable ASCII`;
    bad('mimeType', `${JSON.stringify(input.mimeType)} is not a MIME type like "text/csv" or "image/png"${why}`);
  }
  if (input.data.byteLength > maxBytes) bad('data', `${input.data.byteLength} bytes is over this store's limit of ${maxBytes} bytes`);
  if (input.name !== undefined && (typeof input.name !== 'string' || !goodName(input.name))) {
    const odd = typeof input.name === 'string' ? NOT_NAME_TEXT.exec(input.name)?.[0] : undefined;
    bad(
      'name',
      `must be a non-empty string of at most 255 characters without control characters (C0, C1), bidirectional controls, line or paragraph separators or unpaired surrogates${odd === undefined ? '' : `; it holds ${codePoint(odd)}`}`,
    );
  }
  if (typeof input.sessionId !== 'string' || input.sessionId === '') bad('sessionId', 'must name the session the artifact belongs to');
  if (input.tenantId !== undefined && typeof input.tenantId !== 'string') bad('tenantId', 'must be a string');
  const createdAt = mint.createdAt();
  return {
    artifactId: mint.newId(),
    mimeType: input.mimeType,
    sizeBytes: input.data.byteLength,
    ...(input.name !== undefined ? { name: input.name } : {}),
    sessionId: input.sessionId,
    ...(input.tenantId !== undefined ? { tenantId: input.tenantId } : {}),
    createdAt,
  };
}

/** `U+202E`: how a message names a character it refuses. */
function codePoint(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** 1-255 characters (code points: an emoji is one), nothing NOT_NAME_TEXT names, well-formed UTF-16. */
function goodName(name: string): boolean {
  if (name.length === 0 || name.length > 510 || NOT_NAME_TEXT.test(name) || LONE_SURROGATE.test(name)) return false;
  let n = 0;
  for (const _ of name) if (++n > 255) return false;
  return true;
}
