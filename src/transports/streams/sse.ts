/**
 * `GET /sessions/{id}/events`: one session's events as Server-Sent Events.
 *
 * Contract:
 * - Each event is `id: <seq>`, `event: <type>`, `data: <json>`; `retry:` is sent once and a `:`
 *   comment every `heartbeatMs`. The stream follows the session across turns and ends only when
 *   the client goes, the session is deleted, the transport closes, or the client is too slow.
 * - `Last-Event-ID` (or `?after=` when the header is absent) resumes exactly after that seq.
 * - A session of another tenant is answered exactly like a missing one: 404 `session.not_found`.
 * - A slow client has its response ended (the client reconnects with `Last-Event-ID`).
 * - A request still being set up (authenticating, looking up its session or checking its
 *   cursor) when the transport closes is refused with 503 `server.closing`, never served after
 *   the close: the close would miss it and the server would wait out its grace period.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionHandle } from '../../api.js';
import { clipForEcho } from '../../text.js';
import { formatSseComment, HttpError, requestUrl, sendError, SSE_HEADERS } from '../http.js';
import { authenticateRequest, visibleSession } from '../access.js';
import { type StreamConnection, type StreamsContext, cursorPastEnd, notePeak, sessionNotFoundMessage, takeStreamSlot } from './context.js';
import { type Follow, follow } from './follow.js';
import { BoundedSubscriber } from './subscriber.js';

const HEARTBEAT = Buffer.from(formatSseComment('heartbeat'), 'utf8');
/** How long an ended response may take to flush before its socket is destroyed. */
const END_GRACE_MS = 5_000;

/** Parses a resume cursor: a non-negative integer seq. A refusal echoes at most 40 UTF-16 code units of it, never half a surrogate pair. */
export function parseCursor(raw: string | undefined, source: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw.trim())) {
    throw new HttpError(400, 'cursor.invalid', `${source} must be a non-negative integer seq, got "${clipForEcho(raw, 40)}"`);
  }
  return Number(raw.trim());
}

/** The answer to a request that arrives, or is still being set up, once the transport closes. */
export function serverClosing(): HttpError {
  return new HttpError(503, 'server.closing', 'the server is shutting down');
}

/** `closing()` says whether the transport has closed; it is asked again after every await. */
export async function serveSse(
  ctx: StreamsContext,
  req: IncomingMessage,
  res: ServerResponse,
  sessionId: string,
  closing: () => boolean,
): Promise<void> {
  const principal = await authenticateRequest(req, res, ctx.authenticate);
  if (principal === undefined) return;
  if (closing()) return sendError(res, serverClosing());
  let after: number;
  let fromCursorHeader = false;
  try {
    const header = req.headers['last-event-id'];
    const fromHeader = parseCursor(Array.isArray(header) ? header[0] : header, 'Last-Event-ID');
    fromCursorHeader = fromHeader !== undefined;
    after = fromHeader ?? parseCursor(requestUrl(req).searchParams.get('after') ?? undefined, '?after') ?? 0;
  } catch (e) {
    sendError(res, e);
    return;
  }
  const session = await visibleSession(ctx.runtime, principal, sessionId);
  if (closing()) return sendError(res, serverClosing());
  if (session === undefined) {
    sendError(res, new HttpError(404, 'session.not_found', sessionNotFoundMessage(sessionId)));
    return;
  }
  const ahead = await cursorPastEnd(session, after, fromCursorHeader ? 'Last-Event-ID' : '?after');
  if (closing()) return sendError(res, serverClosing());
  if (ahead !== undefined) {
    sendError(res, new HttpError(400, 'cursor.ahead', ahead.message, { details: { lastSeq: ahead.lastSeq } }));
    return;
  }
  if (res.destroyed || req.destroyed) return;
  const refused = takeStreamSlot(ctx, principal, res);
  if (refused !== undefined) return sendError(res, refused);

  // No await from here to start(): a close() from now on finds the stream in ctx.connections.
  req.socket.setNoDelay(true);
  res.writeHead(200, SSE_HEADERS);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  res.write(`retry: ${ctx.limits.retryMs}\n\n`);
  new SseStream(ctx, res, sessionId).start(session, after);
}

class SseStream implements StreamConnection {
  readonly kind = 'sse' as const;
  private readonly sub: BoundedSubscriber;
  private following: Follow | undefined;
  private ended = false;

  constructor(
    private readonly ctx: StreamsContext,
    private readonly res: ServerResponse,
    private readonly sessionId: string,
  ) {
    const codec = ctx.codec;
    this.sub = new BoundedSubscriber({
      sink: {
        write: (frame) => res.write(frame),
        buffered: () => res.writableLength,
        highWaterMark: res.writableHighWaterMark + (res.socket?.writableHighWaterMark ?? 16 * 1024),
        slack: Math.min(64 * 1024, ctx.limits.maxBufferedBytes / 4),
        cork: () => res.cork(),
        uncork: () => res.uncork(),
        // Node corks a response's socket until the end of the tick, so `writableLength` still counts
        // what was written this tick (the `retry:` line, the events just before a large one).
        flush: () => {
          const socket = res.socket;
          if (socket !== null) while (socket.writableCorked > 0) socket.uncork();
        },
      },
      encode: codec.sseFrame,
      classify: codec.classify,
      maxBufferedBytes: ctx.limits.maxBufferedBytes,
      onOverflow: () => {
        ctx.counters.slowDisconnects++;
        this.end();
      },
    });
    res.on('drain', () => this.sub.drain());
    res.on('close', () => this.dispose());
  }

  start(session: SessionHandle, after: number): void {
    this.ctx.connections.add(this);
    this.following = follow(this.ctx, session, after, this.sub, { error: () => this.end(), complete: () => this.end() });
    if (this.ended) this.following.stop();
  }

  heartbeat(): void {
    if (this.ended || this.sub.isBlocked || this.sub.queuedCount > 0) return;
    this.sub.pushFrame(HEARTBEAT);
  }

  shutdown(): void {
    this.end();
  }

  heldBytes(): number {
    return this.sub.heldBytes();
  }

  peakHeldBytes(): number {
    return this.sub.peakHeldBytes;
  }

  /** End the response; a client that does not take the rest within the grace period is cut off. */
  private end(): void {
    if (this.ended) return;
    this.dispose();
    const res = this.res;
    if (res.destroyed) return;
    res.end();
    const timer = setTimeout(() => res.destroy(), END_GRACE_MS);
    timer.unref();
    res.once('close', () => clearTimeout(timer));
  }

  private dispose(): void {
    this.ended = true;
    notePeak(this.ctx, this.sub.peakHeldBytes);
    this.following?.stop();
    this.sub.close();
    this.ctx.connections.delete(this);
  }
}
