/**
 * Transport contracts. Every transport is a projection of the session event stream with the
 * same small surface; `turnstate serve` composes them on one node:http server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Principal } from '../types.js';

/** The authentication hook: a request to a principal, or a refusal. */
export type Authenticate = (req: IncomingMessage) => Promise<AuthResult> | AuthResult;
export type AuthResult = { ok: true; principal: Principal } | { ok: false; status: 401 | 403; message: string };

export interface HttpTransport {
  readonly name: string;
  /** Handle the request if it is this transport's; resolve false to let the next one try. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** WebSocket upgrades (optional). Return false when the path is not this transport's. */
  upgrade?: ((req: IncomingMessage, socket: Duplex, head: Buffer) => boolean) | undefined;
  /** Stop accepting, flush what was accepted, close connections. */
  close(): Promise<void>;
}
