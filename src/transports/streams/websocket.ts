/**
 * `/ws`: session events over WebSocket, subprotocol `turnstate.v1` (see frames.ts).
 *
 * Contract:
 * - The upgrade is refused (HTTP 400) without the `turnstate.v1` subprotocol, with 403 when a
 *   browser's `Origin` is neither the server's own nor allowed (cross-site WebSocket hijacking),
 *   and with the authentication hook's status (401/403) when it refuses; the principal is fixed
 *   per connection.
 * - One connection may subscribe to several sessions; all share one bounded buffer. A slow
 *   connection is closed with 4008 and resumes each session with `resumeFrom`.
 * - Client frames are handled in order. A bad frame is answered with an `error` frame naming the
 *   problem and the connection stays up; 20 bad frames in a row close it with 1008. No frame can
 *   throw into the `ws` emitter: a failure that is not a refusal (a bug) is answered `internal`
 *   and closes that connection with 1011, never the process.
 * - A session or approval of another tenant is answered exactly like a missing one.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { liveSurfaceProblem, routeSurfaceAction } from '../../registries/surface-actions.js';
import { TurnstateError } from '../../errors.js';
import { clipForEcho } from '../../text.js';
import type { Principal } from '../../types.js';
import { rejectUpgrade } from '../http.js';
import { ANONYMOUS_PRINCIPAL, visibleSession } from '../access.js';
import { type StreamConnection, type StreamsContext, cursorPastEnd, notePeak, sessionNotFoundMessage, takeStreamSlot } from './context.js';
import {
  CloseCode,
  type ClientFrame,
  type Ref,
  SLOW_CONSUMER_REASON,
  SUBPROTOCOL,
  type ServerFrame,
  encodeFrame,
  parseClientFrame,
} from './frames.js';
import { type Follow, follow } from './follow.js';
import { BoundedSubscriber } from './subscriber.js';

const MAX_INVALID_STREAK = 20;
const MAX_IN_FLIGHT = 64;
/** Sessions one connection may follow at once. */
const MAX_SUBSCRIPTIONS = 100;
/** How many waiting messages a `subscribed` reply names, and how much of each text (UTF-16 units). */
const MAX_QUEUED_SHOWN = 20;
const MAX_QUEUED_TEXT = 2000;
const CLOSE_GRACE_MS = 5_000;
const SEND_OPTS = { binary: false } as const;

export interface WebSocketEndpoint {
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
}

export function createWebSocketEndpoint(ctx: StreamsContext): WebSocketEndpoint {
  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: ctx.limits.maxFrameBytes * 16,
    handleProtocols: () => SUBPROTOCOL,
  });
  let closing = false;

  return {
    upgrade(req, socket, head) {
      if (closing) return rejectUpgrade(socket, 503, 'server.closing', 'the server is shutting down');
      const offered = String(req.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((p) => p.trim());
      if (!offered.includes(SUBPROTOCOL)) {
        return rejectUpgrade(socket, 400, 'subprotocol.required', `the WebSocket subprotocol '${SUBPROTOCOL}' is required (Sec-WebSocket-Protocol)`);
      }
      const origin = forbiddenOrigin(ctx, req);
      if (origin !== undefined) {
        return rejectUpgrade(
          socket,
          403,
          'origin.forbidden',
          `a page from ${origin} may not open this WebSocket: only the server's own origin and the transport's allowedOrigins may`,
        );
      }
      socket.on('error', () => socket.destroy());
      void authenticate(ctx, req).then(
        (auth) => {
          if (!auth.ok) return rejectUpgrade(socket, auth.status, auth.code, auth.message);
          if (closing || socket.destroyed) return socket.destroy();
          const refused = takeStreamSlot(ctx, auth.principal, socket);
          if (refused !== undefined) return rejectUpgrade(socket, refused.status, refused.code, refused.message);
          wss.handleUpgrade(req, socket, head, (ws) => {
            new WsConnection(ctx, ws, socket as Socket, auth.principal);
          });
        },
        (e: unknown) => rejectUpgrade(socket, 500, 'auth.failed', `authentication hook failed: ${(e as Error).message}`),
      );
    },
    close() {
      closing = true;
      wss.close();
    },
  };
}

/**
 * The request's `Origin` when a browser page of another origin sent it and it is not allowed;
 * undefined when the upgrade may go on (no Origin: not a browser; the server's own origin, compared
 * by host and port with `Host`; or an allowed one).
 */
function forbiddenOrigin(ctx: StreamsContext, req: IncomingMessage): string | undefined {
  const origin = req.headers.origin;
  if (origin === undefined || ctx.allowedOrigins === '*') return undefined;
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return origin; // `null` (sandboxed pages, file://) or garbage: never the server's own
  }
  if (u.host === req.headers.host || ctx.allowedOrigins.has(u.origin)) return undefined;
  return origin;
}

async function authenticate(
  ctx: StreamsContext,
  req: IncomingMessage,
): Promise<{ ok: true; principal: Principal } | { ok: false; status: number; code: string; message: string }> {
  if (ctx.authenticate === undefined) return { ok: true, principal: ANONYMOUS_PRINCIPAL };
  const r = await ctx.authenticate(req);
  if (r.ok) return r;
  return { ok: false, status: r.status, code: r.status === 401 ? 'auth.unauthenticated' : 'auth.forbidden', message: r.message };
}

class WsConnection implements StreamConnection {
  readonly kind = 'websocket' as const;
  private readonly sub: BoundedSubscriber;
  private readonly subs = new Map<string, Follow>();
  private chain: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private invalidStreak = 0;
  private alive = true;
  private closed = false;

  constructor(
    private readonly ctx: StreamsContext,
    private readonly ws: WebSocket,
    private readonly socket: Socket,
    private readonly principal: Principal,
  ) {
    this.sub = new BoundedSubscriber({
      sink: {
        write: (frame) => {
          if (ws.readyState !== ws.OPEN) return true;
          ws.send(frame, SEND_OPTS);
          return !socket.writableNeedDrain;
        },
        buffered: () => (ws.readyState === ws.OPEN ? ws.bufferedAmount : 0),
        highWaterMark: socket.writableHighWaterMark,
        slack: Math.min(64 * 1024, ctx.limits.maxBufferedBytes / 4),
        cork: () => socket.cork(),
        uncork: () => socket.uncork(),
      },
      encode: ctx.codec.wsFrame,
      classify: ctx.codec.classify,
      maxBufferedBytes: ctx.limits.maxBufferedBytes,
      onOverflow: () => {
        ctx.counters.slowDisconnects++;
        this.terminateWith(CloseCode.slowConsumer, SLOW_CONSUMER_REASON);
      },
    });
    socket.on('drain', () => this.sub.drain());
    ws.on('message', (data, isBinary) => {
      // The second line of defence: nothing a frame does may throw into the ws emitter, where it
      // would be an uncaught exception and end the process. A bug is answered `internal`, then 1011.
      try {
        this.onMessage(data, isBinary);
      } catch (e) {
        this.internal(e, undefined);
      }
    });
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', () => undefined);
    ws.on('close', () => this.dispose());
    ctx.connections.add(this);
  }

  heartbeat(now: number): void {
    if (this.closed) return;
    if (!this.alive) {
      this.ws.terminate();
      return;
    }
    this.alive = false;
    this.ws.ping();
    if (!this.sub.isBlocked && this.sub.queuedCount === 0) {
      this.reply({ type: 'heartbeat', at: new Date(now).toISOString() });
    }
  }

  shutdown(): void {
    this.terminateWith(CloseCode.goingAway, 'server shutting down');
  }

  heldBytes(): number {
    return this.sub.heldBytes();
  }

  peakHeldBytes(): number {
    return this.sub.peakHeldBytes;
  }

  private onMessage(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    if (this.closed) return;
    this.alive = true;
    const parsed = parseClientFrame(data, isBinary, this.ctx.limits.maxFrameBytes);
    if (!parsed.ok) {
      this.error(parsed.code, parsed.message, parsed.ref);
      if (++this.invalidStreak >= MAX_INVALID_STREAK) {
        this.terminateWith(CloseCode.policy, `${MAX_INVALID_STREAK} invalid frames in a row`);
      }
      return;
    }
    this.invalidStreak = 0;
    const frame = parsed.frame;
    if (frame.type === 'ping') {
      this.reply(frame.ref === undefined ? { type: 'pong' } : { type: 'pong', ref: frame.ref });
      return;
    }
    if (this.inFlight >= MAX_IN_FLIGHT) {
      this.terminateWith(CloseCode.policy, `more than ${MAX_IN_FLIGHT} frames awaiting an answer`);
      return;
    }
    this.inFlight++;
    this.chain = this.chain
      .then(() => this.handle(frame))
      .catch((e: unknown) => this.failed(e, frame.ref))
      .finally(() => {
        this.inFlight--;
      });
  }

  private async handle(frame: Exclude<ClientFrame, { type: 'ping' }>): Promise<void> {
    if (this.closed) return;
    switch (frame.type) {
      case 'subscribe':
        return this.subscribe(frame.sessionId, frame.resumeFrom ?? 0, frame.ref);
      case 'unsubscribe': {
        this.dropSubscription(frame.sessionId);
        this.reply(withRef({ type: 'unsubscribed', sessionId: frame.sessionId, reason: 'requested' }, frame.ref));
        return;
      }
      case 'send': {
        const session = await visibleSession(this.ctx.runtime, this.principal, frame.sessionId);
        if (session === undefined) return this.notFound(frame.sessionId, frame.ref);
        const turn = await session.send(frame.text, frame.consumes === undefined ? { principal: this.principal } : { principal: this.principal, consumes: frame.consumes });
        this.reply(withRef({ type: 'sent', sessionId: frame.sessionId, turnId: turn.turnId, queued: turn.queued }, frame.ref));
        return;
      }
      case 'approve':
      case 'deny':
        return this.answer(frame);
      case 'action':
        return this.action(frame);
    }
  }

  private async subscribe(sessionId: string, after: number, ref: Ref | undefined): Promise<void> {
    const { ctx } = this;
    const session = await visibleSession(ctx.runtime, this.principal, sessionId);
    if (session === undefined) return this.notFound(sessionId, ref);
    if (!this.subs.has(sessionId) && this.subs.size >= MAX_SUBSCRIPTIONS) {
      return this.error('subscription.limit', `a connection may follow at most ${MAX_SUBSCRIPTIONS} sessions: unsubscribe from one first`, ref, sessionId);
    }
    const ahead = await cursorPastEnd(session, after, 'resumeFrom');
    if (this.closed) return;
    if (ahead !== undefined) return this.error('cursor.ahead', ahead.message, ref, sessionId);
    // The messages waiting behind the running turn have no event until their turns start: the
    // reply names them, as they are when the subscription is made.
    const { lastSeq, queuedMessages } = await session.snapshot();
    if (this.closed) return;
    this.dropSubscription(sessionId);
    const subscribed: Extract<ServerFrame, { type: 'subscribed' }> = { type: 'subscribed', sessionId, lastSeq };
    // (An embedder's SessionRuntime may predate queuedMessages.)
    if (Array.isArray(queuedMessages) && queuedMessages.length > 0) subscribed.queued = queuedShown(queuedMessages);
    this.reply(withRef(subscribed, ref), sessionId);
    const following = follow(ctx, session, after, this.sub, {
      error: (e: unknown) => {
        this.subs.delete(sessionId);
        this.error('stream.failed', `the event stream of session "${sessionId}" failed: ${(e as Error).message}`, undefined, sessionId);
      },
      complete: () => {
        this.subs.delete(sessionId);
        this.reply({ type: 'unsubscribed', sessionId, reason: 'session-ended' }, sessionId);
      },
    });
    if (this.closed) following.stop();
    else this.subs.set(sessionId, following);
  }

  /**
   * Only approvals of sessions the principal can see are answerable here (anything else is
   * `approval.not_found`, like a missing one); within them the runtime's `canAnswerApproval` decides.
   */
  private async answer(frame: Extract<ClientFrame, { type: 'approve' | 'deny' }>): Promise<void> {
    const { runtime } = this.ctx;
    const approved = frame.type === 'approve';
    const notFound = (): void => this.error('approval.not_found', `approval "${frame.approvalId}" not found`, frame.ref);
    const record = await runtime.approval(frame.approvalId);
    if (record === undefined || (frame.sessionId !== undefined && frame.sessionId !== record.sessionId)) return notFound();
    const session = await visibleSession(runtime, this.principal, record.sessionId);
    if (session === undefined) return notFound();
    const answer = frame.reason === undefined ? { approved } : { approved, reason: frame.reason };
    const result = await session.answerApproval(frame.approvalId, answer, this.principal, 'websocket');
    if (result.ok) {
      this.reply(withRef({ type: 'answered', approvalId: frame.approvalId, decision: approved ? 'approved' : 'denied' }, frame.ref));
    } else if (result.code === 'approval.not_found') {
      notFound();
    } else {
      this.error(result.code, result.message, frame.ref);
    }
  }

  /**
   * A surface click: an approval answer or a follow-up message (registries/surface-actions.ts);
   * an approve/deny without an approvalId, or a name, surface or component with a control
   * character, is refused (`frame.invalid`), and so is a follow-up on a surface the session does
   * not have live (`surface.not_live`): nothing is sent.
   */
  private async action(frame: Extract<ClientFrame, { type: 'action' }>): Promise<void> {
    const route = routeSurfaceAction(frame.action);
    if (route.kind === 'invalid') return this.error(route.code ?? 'frame.invalid', route.message, frame.ref);
    if (route.kind === 'approval') {
      const answer: Extract<ClientFrame, { type: 'approve' | 'deny' }> = { type: route.approved ? 'approve' : 'deny', approvalId: route.approvalId, sessionId: frame.sessionId };
      // Checked as every channel's reason is (answerApproval: approval.invalid).
      if (route.reason !== undefined) answer.reason = route.reason as string;
      if (frame.ref !== undefined) answer.ref = frame.ref;
      return this.answer(answer);
    }
    const session = await visibleSession(this.ctx.runtime, this.principal, frame.sessionId);
    if (session === undefined) return this.notFound(frame.sessionId, frame.ref);
    // A click on a surface the session does not show (never emitted, or deleted) is no message.
    const notLive = liveSurfaceProblem(frame.action, frame.sessionId, await session.surfaces());
    if (notLive !== undefined) return this.error(notLive.code!, notLive.message, frame.ref, frame.sessionId);
    const turn = await session.send(route.text, { principal: this.principal });
    this.reply(withRef({ type: 'sent', sessionId: frame.sessionId, turnId: turn.turnId, queued: turn.queued }, frame.ref));
  }

  private notFound(sessionId: string, ref: Ref | undefined): void {
    this.error('session.not_found', sessionNotFoundMessage(sessionId), ref, sessionId);
  }

  /** A TurnstateError is answered and the connection stays; anything else is a bug: answered, then 1011. */
  private failed(e: unknown, ref: Ref | undefined): void {
    if (e instanceof TurnstateError) {
      this.error(e.code, e.message, ref);
      return;
    }
    this.internal(e, ref);
  }

  /** A bug: answered with an `internal` error frame, then the connection is closed with 1011. */
  private internal(e: unknown, ref: Ref | undefined): void {
    try {
      this.error('internal', `internal error: ${e instanceof Error ? e.message : String(e)}`, ref);
      this.terminateWith(CloseCode.internal, 'internal error: reconnect and resume from your last seq');
    } catch {
      // Even the answer failed: cut the connection, never the process.
      try {
        this.dispose();
      } catch {
        // It is closed (dispose marks it first); what it could not release is dropped with it.
      }
      this.ws.terminate();
    }
  }

  private error(code: string, message: string, ref?: Ref, sessionId?: string): void {
    const frame: ServerFrame = { type: 'error', code, message };
    if (ref !== undefined) frame.ref = ref;
    if (sessionId !== undefined) frame.sessionId = sessionId;
    this.reply(frame);
  }

  private reply(frame: ServerFrame, sessionId = ''): void {
    if (this.closed) return;
    this.sub.pushFrame(encodeFrame(frame), sessionId);
  }

  private dropSubscription(sessionId: string): void {
    const s = this.subs.get(sessionId);
    if (s === undefined) return;
    this.subs.delete(sessionId);
    s.stop();
    this.sub.purge(sessionId);
  }

  /** Close with a code; a peer that does not complete the closing handshake is cut off. */
  private terminateWith(code: number, reason: string): void {
    if (this.closed) return;
    this.dispose();
    const ws = this.ws;
    try {
      ws.close(code, reason);
    } catch {
      ws.terminate();
      return;
    }
    const timer = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
    timer.unref();
    ws.once('close', () => clearTimeout(timer));
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    notePeak(this.ctx, this.sub.peakHeldBytes);
    for (const s of this.subs.values()) s.stop();
    this.subs.clear();
    this.sub.close();
    this.ctx.connections.delete(this);
  }
}

function withRef<T extends ServerFrame>(frame: T, ref: Ref | undefined): T {
  if (ref !== undefined) (frame as { ref?: Ref }).ref = ref;
  return frame;
}

/**
 * The waiting messages a `subscribed` reply names, bounded (a full queue of long messages would
 * make it megabytes and cut the subscriber as a slow consumer): the first MAX_QUEUED_SHOWN, each
 * text cut at MAX_QUEUED_TEXT UTF-16 units (whole characters, `…` marking the cut).
 */
function queuedShown(queued: ReadonlyArray<{ turnId: string; text: string }>): Array<{ turnId: string; text: string }> {
  return queued.slice(0, MAX_QUEUED_SHOWN).map(({ turnId, text }) => ({ turnId, text: clipForEcho(text, MAX_QUEUED_TEXT) }));
}
