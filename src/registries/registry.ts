/**
 * What the registries (part types, turn states, tools, actors, surface templates) share: entries by key in
 * registration order, read through get/has/list/ids. `list()` and `ids()` return the same frozen
 * array until the next registration, so reading them allocates nothing and a changed length tells
 * a cache the registry changed. Subclasses validate a definition, then `add` it.
 */
import type { RegistryReader } from './types.js';

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
