/**
 * Store port implementations that the core may import. The SQLite store is a subpath export
 * (`turnstate/sqlite`) so the core never loads better-sqlite3.
 */
import type { SessionStore } from '../machines/ports.js';

/**
 * A SessionStore whose every method returns synchronously. The memory and SQLite stores are
 * synchronous; the runtime takes the fast path (no promise per step) when a store is.
 */
export type SyncSessionStore = {
  readonly [K in keyof SessionStore]: SessionStore[K] extends (...args: infer A) => infer R
    ? (...args: A) => Awaited<R>
    : SessionStore[K];
};

export { createMemoryStore, checkStep, storeError, type StoreErrorCode } from './memory.js';
