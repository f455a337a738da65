/**
 * RFC 6901 JSON Pointers into assembled domain-data: parse, escape, resolve.
 *
 * Contract: `resolvePointer` never throws; it answers `{ found: false, reason }` for a pointer
 * that is malformed or leads nowhere (a missing member, an index past the end, `-`, a step into
 * a scalar).
 */

/** One segment escaped for a pointer: `~` as `~0`, `/` as `~1`. */
export function escapeSegment(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

export type Resolved = { found: true; value: unknown } | { found: false; reason: string };

export function resolvePointer(root: unknown, pointer: string): Resolved {
  if (pointer === '') return { found: true, value: root };
  if (pointer[0] !== '/') return { found: false, reason: `"${pointer}" is not a JSON Pointer: it must be '' or start with '/'` };
  let at: unknown = root;
  let walked = '';
  for (const raw of pointer.slice(1).split('/')) {
    if (/~(?![01])/.test(raw)) return { found: false, reason: `"${pointer}" has a '~' not followed by 0 or 1` };
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) {
      if (!/^(0|[1-9][0-9]*)$/.test(seg) || Number(seg) >= at.length) {
        return { found: false, reason: `${walked || '/'} is an array of ${at.length}; it has no element "${seg}"` };
      }
      at = at[Number(seg)];
    } else if (at !== null && typeof at === 'object') {
      if (!Object.prototype.hasOwnProperty.call(at, seg)) return { found: false, reason: `${walked || '/'} has no member "${seg}"` };
      at = (at as Record<string, unknown>)[seg];
    } else {
      return { found: false, reason: `${walked || '/'} is ${at === null ? 'null' : typeof at}, not an object or array` };
    }
    walked += `/${raw}`;
  }
  return { found: true, value: at };
}
