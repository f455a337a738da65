/**
 * Ports: the interfaces the machines and the host depend on, named in one place. They are public
 * API (embedders implement them): defined in api.ts (the ports) and types.ts (the records a store
 * keeps); the implementations live in models/ and stores/ and are wired in runtime.ts.
 */
export type { ModelEvent, ModelPort, ModelRequest, SessionStore, SessionStoreReader, ArtifactStore, ArtifactRecord, ArtifactPut } from '../api.js';
export type { MaybePromise, PersistedSession, SessionRecord, StepCommit, QueuedEntry } from '../types.js';
