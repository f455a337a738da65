/**
 * What the registries (part types, turn states, tools, actors, surface templates) share: entries by key in
 * registration order, read through get/has/list/ids. `list()` and `ids()` return the same frozen
 * array until the next registration, so reading them allocates nothing and a changed length tells
 * a cache the registry changed. Subclasses validate a definition, then `add` it.
 */
import { RegistrationError } from '../errors.js';
import type { RegistryReader } from './types.js';

/** The candidate within two edits of `name` (a typo's likely intent), or undefined. */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const c of candidates) {
    const d = editDistance(name.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

/**
 * The refusal of the first key of `given` that is not one of `names` (an options object's
 * misspelt option: "`heartbeatMS` is not an option (did you mean `heartbeatMs`?); the options are
 * ..."), or undefined when every key is known. A misspelt option is never silently ignored.
 */
export function unknownOptionProblem(given: object, names: readonly string[]): string | undefined {
  for (const key of Object.keys(given)) {
    if (names.includes(key)) continue;
    const near = closestName(key, names);
    return `\`${key}\` is not an option${near === undefined ? '' : ` (did you mean \`${near}\`?)`}; the options are ${names.join(', ')}`;
  }
  return undefined;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * Refuses a `{ id, meta }` registration's top-level field other than `id` and `meta`, naming it
 * (RegistrationError with `rule`): a meta field put one level too high is told it belongs under
 * meta, instead of being ignored.
 */
export function topLevelFields(rule: string, who: string, def: object, metaFields: readonly string[], id: string): void {
  for (const key of Object.keys(def)) {
    if (key === 'id' || key === 'meta') continue;
    const near = closestName(key, metaFields);
    const where = metaFields.includes(key)
      ? `${key} belongs under meta (meta.${key})`
      : key === 'isCanonical'
        ? 'isCanonical is set by the registry (true only for the canonical entries), not given'
        : `${key} is not a registration field${near === undefined ? '' : ` (did you mean meta.${near}?)`}`;
    throw new RegistrationError(rule, `${who}: ${where}; a registration is { id, meta }`, { id, field: key });
  }
}

export abstract class Registry<T> implements RegistryReader<T> {
  readonly #entries = new Map<string, T>();
  #list: readonly T[] = Object.freeze([]);
  #ids: readonly string[] = Object.freeze([]);

  get(key: string): T | undefined {
    return this.#entries.get(key);
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** Every entry, in registration order. */
  list(): readonly T[] {
    return this.#list;
  }

  /** Every key, in registration order. */
  ids(): readonly string[] {
    return this.#ids;
  }

  /** Stores a validated entry under `key`, replacing nothing: callers reject duplicates first. */
  protected add(key: string, entry: T): T {
    this.#entries.set(key, entry);
    this.#list = Object.freeze([...this.#entries.values()]);
    this.#ids = Object.freeze([...this.#entries.keys()]);
    return entry;
  }
}
