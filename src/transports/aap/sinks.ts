/**
 * How a turn's response is written: one JSON body (`none`: exactly `{stopReason, messages}` and a
 * compatibility turn's fields) or an SSE stream (`delta`, `message`) from `turn_start` to its one
 * `turn_stop`. turns.ts feeds a sink the projector's items and ends it once.
 */
import type { ServerResponse } from 'node:http';
import { formatSse, formatSseComment, startSse } from '../http.js';
import { MessageBuilder } from './messages.js';
import type { AapItem, AapProjector } from './projector.js';
import type { StopReason } from './types.js';

export interface Sink {
  start(): void;
  item: (item: AapItem) => void;
  /** `extra`: turnstate's fields beside stopReason (spec 003 userResponse / finalContent; an errored turn's error), usually empty. */
  finish(reason: StopReason, unresolved: string[], extra: ExtraFields): void;
  /** The client went before `finish`: release what the response holds (its heartbeat). */
  close(): void;
}

/** What `turn_stop` (and the `none` body) carry beside stopReason: spec 003 compatibility turns' `userResponse` and `finalContent`; an errored turn's `error` (in `turn_stop`; the `none` body names its code in the `turnstate-error-code` header). */
export type ExtraFields = { userResponse?: string; finalContent?: string; error?: { code: string; message: string } };

export function extraFields(projector: AapProjector, error: { code: string; message: string } | undefined): ExtraFields {
  const s = projector.settled;
  const out: ExtraFields = {};
  if (s?.userResponse !== undefined) out.userResponse = s.userResponse;
  if (s?.finalContent !== undefined) out.finalContent = s.finalContent;
  if (error !== undefined) out.error = { code: error.code, message: error.message };
  return out;
}

export function jsonSink(res: ServerResponse): Sink {
  const builder = new MessageBuilder({ includeUser: false, includeClientResults: false, includeThinking: true });
  return {
    start() {},
    item: builder.push,
    finish(reason, unresolved, { error, ...compat }) {
      // The body is exactly { stopReason, messages } (AAP), plus a compatibility turn's fields; an
      // errored turn's code rides a header instead (turn_stop carries the whole error).
      const body = JSON.stringify({ stopReason: reason, messages: builder.finish(unresolved), ...compat });
      if (res.headersSent || res.writableEnded) return;
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(body)),
        'cache-control': 'no-store',
        // The body echoes the user's and the model's text: never sniffed as HTML (as sendJson's).
        'x-content-type-options': 'nosniff',
        ...(error === undefined ? {} : { 'turnstate-error-code': error.code }),
      });
      res.end(body);
    },
    close() {},
  };
}

export function sseSink(res: ServerResponse, heartbeatMs: number): Sink {
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const write = (frame: string): void => {
    if (!ended && !res.writableEnded && !res.destroyed) res.write(frame);
  };
  return {
    start() {
      startSse(res);
      write(formatSse('turn_start', '{}'));
      if (heartbeatMs > 0) {
        timer = setInterval(() => write(formatSseComment('keep-alive')), heartbeatMs);
        timer.unref();
      }
    },
    item(item) {
      switch (item.kind) {
        case 'text_delta':
          write(formatSse('text_delta', { delta: item.delta }));
          return;
        case 'thinking_delta':
          write(formatSse('thinking_delta', { delta: item.delta }));
          return;
        case 'text':
          write(formatSse('text', { text: item.text }));
          return;
        case 'thinking':
          write(formatSse('thinking', { thinking: item.thinking }));
          return;
        case 'tool_call':
          write(formatSse('tool_call', { toolCallId: item.toolCallId, name: item.name, input: item.input }));
          return;
        case 'tool_result':
          if (item.side !== 'client') write(formatSse('tool_result', { toolCallId: item.toolCallId, content: item.content }));
          return;
        case 'user':
          return;
      }
    },
    finish(reason, _unresolved, extra) {
      if (timer !== undefined) clearInterval(timer);
      if (!res.headersSent) startSse(res);
      write(formatSse('turn_stop', { stopReason: reason, ...extra }));
      ended = true;
      if (!res.writableEnded) res.end();
    },
    close() {
      if (timer !== undefined) clearInterval(timer);
      ended = true;
    },
  };
}
