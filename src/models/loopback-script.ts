/**
 * The script a loopback Messages API server answers from: scripted replies (content, usage, how
 * the stream is cut into deltas, stream faults), HTTP failures, and the record of each request.
 */

/** One content block of a scripted reply. */
export type LoopbackBlock =
  | { type: 'text'; text: string }
  /** `rawInput` replaces `JSON.stringify(input)` as the streamed JSON (invalid or hand-escaped JSON). */
  | { type: 'tool_use'; name: string; input?: unknown; id?: string | undefined; rawInput?: string | undefined }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/**
 * How streamed text and tool input are cut into deltas: a fixed chunk size, explicit cut offsets
 * (UTF-16 indexes into the string), or a seeded random splitter.
 */
export type LoopbackSplit = number | number[] | { seed: number; maxChunk?: number | undefined };

export interface LoopbackUsage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  cacheReadTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
}

/** A successful reply, with optional stream faults. */
export interface LoopbackReply {
  content: LoopbackBlock[];
  /** Default `tool_use` when a tool_use block is present, else `end_turn`. */
  stopReason?: string | undefined;
  usage?: LoopbackUsage | undefined;
  split?: LoopbackSplit | undefined;
  /** Send a `ping` after every N events (default 10; 0 disables). One always follows message_start unless 0. */
  pingEvery?: number | undefined;
  /** Wait before sending the response headers. */
  delayMs?: number | undefined;
  /** Wait between SSE events. */
  eventDelayMs?: number | undefined;
  /** Send an in-stream `error` event after this many events and end the stream (at or beyond the last frame: after message_stop). */
  streamError?: { afterEvents: number; type?: string | undefined; message?: string | undefined } | undefined;
  /** Destroy the connection after this many events (at or beyond the last frame: after message_stop, without a clean end). */
  dropAfterEvents?: number | undefined;
  /** Stop sending after this many events and keep the connection open (until the client goes). */
  stallAfterEvents?: number | undefined;
  /**
   * Pause once after this many events for `ms`, sending a `ping` every `pingEveryMs` meanwhile
   * (none when unset): a model that keeps the connection alive while it works, then goes on.
   */
  pause?: { afterEvents: number; ms: number; pingEveryMs?: number | undefined } | undefined;
  model?: string | undefined;
  id?: string | undefined;
}

/** An HTTP error response. */
export interface LoopbackFailure {
  status: number;
  /** API error type (default derived from the status). */
  type?: string | undefined;
  message?: string | undefined;
  /** `retry-after` header, seconds. */
  retryAfter?: number | undefined;
  /** `retry-after-ms` header. */
  retryAfterMs?: number | undefined;
  /** `x-should-retry` header: the API's own word on whether a retry may succeed. */
  shouldRetry?: boolean | undefined;
  delayMs?: number | undefined;
}

export type LoopbackTurn = LoopbackReply | { fail: LoopbackFailure };
export type LoopbackResponder = (request: RecordedRequest) => LoopbackTurn;

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names; `x-api-key` and `authorization` are removed (see `auth`). */
  headers: Record<string, string>;
  /** Which credential header the client sent, without its value. */
  auth: 'x-api-key' | 'bearer' | 'none';
  /** The parsed JSON body (undefined when it did not parse; see `rawBody`). */
  body: any;
  rawBody: string;
  /** Index of the scripted turn that answered (-1 for the fallback or an exhausted script). */
  turn: number;
  receivedAt: number;
}
