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

/** Short unique ids: a random per-process prefix plus a counter (cheap, sortable within a process). */
export function createIdSource(): (prefix: string) => string {
  const base = Math.floor(Math.random() * 36 ** 6).toString(36).padStart(6, '0');
  let n = 0;
  return (prefix) => `${prefix}_${base}${(++n).toString(36).padStart(4, '0')}`;
}
