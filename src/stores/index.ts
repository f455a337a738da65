/**
 * Store port implementations that the core may import. The SQLite store is a subpath export
 * (`turnstate/sqlite`) so the core never loads better-sqlite3.
 */
export type { SyncSessionStore } from './contract.js';
export { checkStep, storeError, type StoreErrorCode } from './contract.js';
export { createMemoryStore } from './memory.js';
