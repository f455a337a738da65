import { randomFillSync } from 'node:crypto';

/** Time and ids for the host. ISO timestamps are cached per millisecond (a hot spot otherwise). */

export interface Clock {
  now(): number;
  iso(ms?: number): string;
}

export function createClock(now: () => number = Date.now): Clock {
  let lastMs = -1;
  let lastIso = '';
  return {
    now,
    iso(ms = now()) {
      if (ms !== lastMs) {
        lastMs = ms;
        lastIso = new Date(ms).toISOString();
      }
      return lastIso;
    },
  };
}

/** Random bytes drawn per refill; one `randomFillSync` call serves this many ids. */
const ID_BYTES = 16;
const IDS_PER_REFILL = 256;

/**
 * Unguessable ids: `<prefix>_` plus 128 random bits, base64url (22 characters). A session, turn or
 * approval id is a capability on the wire (anyone holding it can address the object), so ids
 * carry no counter, clock or process prefix and are not sortable. Bytes come from the CSPRNG in
 * batches so the per-id cost stays well under a microsecond.
 */
export function createIdSource(): (prefix: string) => string {
  const pool = Buffer.allocUnsafe(ID_BYTES * IDS_PER_REFILL);
  let at = pool.length;
  return (prefix) => {
    if (at === pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    const id = pool.toString('base64url', at, at + ID_BYTES);
    at += ID_BYTES;
    return `${prefix}_${id}`;
  };
}
