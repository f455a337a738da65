/**
 * What the SSE and WebSocket halves of the streams transport share: the runtime, the
 * authentication hook, the codec, the limits, and the set of open connections.
 */
import type { SessionHandle, SessionRuntime } from '../../api.js';
import { cursorAheadProblem } from '../../limits.js';
import type { Principal } from '../../types.js';
import { HttpError } from '../http.js';
import type { Authenticate } from '../types.js';
import type { EventCodec } from './codec.js';
import type { SessionHub } from './hub.js';

export interface StreamsLimits {
  /** Per subscriber: bytes queued plus bytes buffered in the socket. */
  maxBufferedBytes: number;
  heartbeatMs: number;
  /** SSE `retry:` sent once per stream. */
  retryMs: number;
  /** Largest WebSocket client frame answered with a reply; larger ones get `frame.too_large`. */
  maxFrameBytes: number;
  /** Open SSE streams and WebSocket connections of one authenticated principal. */
  maxStreamsPerPrincipal: number;
}

/** One open SSE stream or WebSocket connection. */
export interface StreamConnection {
  readonly kind: 'sse' | 'websocket';
  /** Called every `heartbeatMs`. */
  heartbeat(now: number): void;
  /** Close because the transport is shutting down. */
  shutdown(): void;
  heldBytes(): number;
  peakHeldBytes(): number;
}

export interface StreamsContext {
  runtime: SessionRuntime;
  authenticate: Authenticate | undefined;
  codec: EventCodec;
  limits: StreamsLimits;
  /** Browser origins allowed to open a WebSocket besides the server's own (see allowedOrigins). */
  allowedOrigins: ReadonlySet<string> | '*';
  connections: Set<StreamConnection>;
  /** One runtime subscription per followed session, shared by its local followers. */
  hubs: Map<string, SessionHub>;
  /** Slow subscribers disconnected; the highest held byte count of any closed connection. */
  counters: { slowDisconnects: number; closedPeakHeldBytes: number };
  /** Open streams per authenticated principal (takeStreamSlot). */
  streamsOf: Map<string, number>;
}

/**
 * Takes one of the principal's stream slots (StreamsLimits.maxStreamsPerPrincipal), given back
 * when `closed` emits 'close' (the response or the socket); the refusal when all are taken.
 * Without an authentication hook there is no principal to count (every client is anonymous).
 */
export function takeStreamSlot(ctx: StreamsContext, principal: Principal, closed: { once(event: 'close', f: () => void): unknown }): HttpError | undefined {
  if (ctx.authenticate === undefined) return undefined;
  const key = JSON.stringify([principal.tenantId ?? null, principal.userId ?? null]);
  const open = ctx.streamsOf.get(key) ?? 0;
  const max = ctx.limits.maxStreamsPerPrincipal;
  if (open >= max) {
    return new HttpError(
      429,
      'streams.too_many',
      `this principal already holds ${open} open event streams (SSE and WebSocket together), the limit (maxStreamsPerPrincipal = ${max}); close one first`,
      { details: { limit: max, open } },
    );
  }
  ctx.streamsOf.set(key, open + 1);
  closed.once('close', () => {
    const left = (ctx.streamsOf.get(key) ?? 1) - 1;
    if (left > 0) ctx.streamsOf.set(key, left);
    else ctx.streamsOf.delete(key);
  });
  return undefined;
}

/** Records a closing connection's peak in the transport's counters. */
export function notePeak(ctx: StreamsContext, peak: number): void {
  if (peak > ctx.counters.closedPeakHeldBytes) ctx.counters.closedPeakHeldBytes = peak;
}

/** The one refusal for a session that does not exist and a session of another tenant. */
export function sessionNotFoundMessage(sessionId: string): string {
  return `session "${sessionId}" not found`;
}

/**
 * The refusal for a resume cursor (SSE `Last-Event-ID` / `?after`, WebSocket `resumeFrom`) past
 * the end of the session's log, else undefined: the rule `session.events(afterSeq)` applies too
 * (cursorAheadProblem).
 */
export async function cursorPastEnd(session: SessionHandle, after: number, source: string): Promise<{ lastSeq: number; message: string } | undefined> {
  const { lastSeq } = await session.snapshot();
  const message = cursorAheadProblem(source, after, session.id, lastSeq);
  return message === undefined ? undefined : { lastSeq, message };
}
