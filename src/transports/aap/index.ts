/**
 * The Agent Application Protocol (AAP, protocol version 3) transport: `createAapTransport`
 * for `turnstate serve` / `startServer`, `createAapHandler` for a user's own node:http server.
 */
import type { HttpTransport } from '../types.js';
import { createAapHandler, type AapOptions } from './handler.js';

export { createAapHandler, type AapHandler, type AapOptions } from './handler.js';
export type { AapAgentConfig } from './agents.js';
export { AapProjector, canonicalPartClass, denialText, type AapItem, type CallSide, type PartClass, type ProjectorOptions } from './projector.js';
export { MessageBuilder, assistantText, type MessageBuilderOptions } from './messages.js';
export * from './types.js';

/** AAP as an HttpTransport: handles its own paths, lets every other request through. */
export function createAapTransport(opts: AapOptions): HttpTransport {
  const handler = createAapHandler(opts);
  return {
    name: 'aap',
    handle: handler,
    close: () => handler.close(),
  };
}
