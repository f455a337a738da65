/**
 * The Anthropic ModelPort: streams a Messages API call through `@anthropic-ai/sdk` and maps its
 * raw stream events to ModelEvents in order. Subpath export `turnstate/anthropic`, the one module
 * that loads the SDK: the request is built by anthropic-request.ts, the stream mapped by
 * anthropic-stream.ts, an attempt's idle watchdog kept by anthropic-attempt.ts; this module calls
 * the API (attempts, retries) and maps its failures to ModelErrors.
 *
 * Contract:
 * - Forces tool use (`tool_choice: any`) unless thinking is on (`auto`: the API refuses forced
 *   tool choice with extended thinking). Caches the system prompt and the tool schemas.
 * - Failures end the iterator with a ModelError. A retryable failure is retried (bounded, with
 *   backoff) only while none of the failed attempt's events has been yielded; afterwards it is
 *   thrown, so nothing is half-applied.
 * - A response that is not `text/event-stream` (a proxy ignoring `stream: true`) fails at once.
 * - Transport failures name their cause chain; undici's timeouts (a body silent for its
 *   bodyTimeout, 300 s in Node's fetch) are `model.timeout`.
 * - Aborting the signal ends the iterator with ModelError `model.aborted`; no event follows it.
 * - The API key never appears in an error message, stack, cause or event.
 */
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { ModelError, TurnstateError } from '../errors.js';
import { integerProblem, timerMsProblem } from '../limits.js';
import { redact } from '../text.js';
import type { ModelErrorCode } from '../errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../api.js';
import { buildRequest } from './anthropic-request.js';
import { StreamAccumulator } from './anthropic-stream.js';
import { Attempt, idleError } from './anthropic-attempt.js';
import { abortedError, parseRetryAfter, resolveRetryPolicy, retryDelay, sleep } from './retry.js';
import type { ModelRetryPolicy } from './retry.js';

export type { ModelRetryPolicy } from './retry.js';

export interface AnthropicModelOptions {
  /** Default `process.env.ANTHROPIC_API_KEY`. Ignored when `client` is given. */
  apiKey?: string | undefined;
  /** Default the SDK's (`https://api.anthropic.com`, or `ANTHROPIC_BASE_URL`). */
  baseURL?: string | undefined;
  /** Model for actor turns when the request names none (default `claude-sonnet-4-6`). */
  model?: string | undefined;
  /** Model for `purpose: 'llm-context'` requests that name none (default `claude-haiku-4-5`). */
  contextModel?: string | undefined;
  /** `max_tokens` when the request sets none (default 4096; an integer of at least 1). */
  maxTokens?: number | undefined;
  /** Bounded retries; the SDK's own retries are always off. */
  retry?: { [K in keyof ModelRetryPolicy]?: ModelRetryPolicy[K] | undefined } | undefined;
  /** Time allowed until the response headers arrive, per attempt (ms; default the SDK's 10 min; an integer from 1 to MAX_TIMER_MS). */
  timeout?: number | undefined;
  /** Abort an attempt whose stream delivers no event for this long (ms; an integer up to MAX_TIMER_MS); 0 or unset: no idle limit. */
  idleTimeout?: number | undefined;
  /** A ready client (its own retries are bypassed per request). Tests and proxies use this. */
  client?: Anthropic | undefined;
  /** Extra headers sent with every request. */
  headers?: Record<string, string> | undefined;
  /** Port name (default 'anthropic'). */
  name?: string | undefined;
}

const DEFAULT_MODEL = 'claude-sonnet-4-6';
const DEFAULT_CONTEXT_MODEL = 'claude-haiku-4-5';
const DEFAULT_MAX_TOKENS = 4096;

export function createAnthropicModel(options: AnthropicModelOptions = {}): ModelPort {
  const policy = resolveRetryPolicy(options.retry, 'createAnthropicModel');
  // Checked here, not at the first call or stall: a string, NaN or a negative would turn a
  // timer off unnoticed (or reach the SDK, which refuses it at every call), and a value past a
  // timer's range would fire after 1 ms. `timeout` 0 would abort every attempt at once.
  const problem =
    timerMsProblem('timeout', options.timeout, 1) ??
    timerMsProblem('idleTimeout', options.idleTimeout, 0, 'no idle limit') ??
    integerProblem('maxTokens', options.maxTokens, 1);
  if (problem !== undefined) throw new TurnstateError('options.invalid', `createAnthropicModel: ${problem}`);
  const apiKey = options.client ? options.client.apiKey ?? undefined : options.apiKey ?? process.env.ANTHROPIC_API_KEY;
  if (!options.client && (apiKey === undefined || apiKey === '')) {
    throw new ModelError(
      'model.authentication',
      'createAnthropicModel: no API key: pass `apiKey` or set ANTHROPIC_API_KEY (or pass a `client`)',
    );
  }
  const client =
    options.client ??
    new Anthropic({
      apiKey: apiKey as string,
      ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
      maxRetries: 0,
      ...(options.headers !== undefined ? { defaultHeaders: options.headers } : {}),
    });
  const secrets = [apiKey, client.apiKey, client.authToken].filter((s): s is string => typeof s === 'string' && s.length >= 4);
  const defaultModel = options.model ?? DEFAULT_MODEL;
  const contextModel = options.contextModel ?? DEFAULT_CONTEXT_MODEL;
  const defaultMaxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
  const idleTimeout = options.idleTimeout ?? 0;
  const requestOptions = {
    maxRetries: 0,
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    ...(options.client && options.headers !== undefined ? { headers: options.headers } : {}),
  };

  async function* stream(req: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent, void, undefined> {
    const params = buildRequest(req, {
      model: req.model ?? (req.purpose === 'llm-context' ? contextModel : defaultModel),
      maxTokens: req.maxTokens ?? defaultMaxTokens,
    });
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) throw abortedError(signal);
      const run = new Attempt(signal, idleTimeout);
      const acc = new StreamAccumulator();
      try {
        const { data: sdkStream, response } = await client.messages
          .create(params, idleTimeout > 0 ? { ...requestOptions, signal: run.signal, middleware: [run.middleware] } : { ...requestOptions, signal: run.signal })
          .withResponse();
        const contentType = response.headers.get('content-type');
        if (!isEventStream(contentType)) {
          sdkStream.controller.abort();
          throw notEventStreamError(response.status, contentType);
        }
        // A block's start is held until its first content or its stop: a failure before then has
        // given the consumer nothing, so the attempt may still be retried (with thinking on, nearly
        // every response starts a block at once).
        let held: ModelEvent | undefined;
        for await (const raw of sdkStream) {
          run.touch();
          if (signal.aborted) break;
          const ev = acc.map(raw);
          if (ev === undefined) continue;
          if (ev.type === 'block.start' && !run.yielded) {
            held = ev;
            continue;
          }
          run.yielded = true;
          if (held !== undefined) {
            const start = held;
            held = undefined;
            run.consuming = true;
            yield start;
            run.consuming = false;
            run.touch();
            if (signal.aborted) break;
          }
          run.consuming = true;
          yield ev;
          run.consuming = false;
          run.touch();
          if (signal.aborted) break;
        }
        if (signal.aborted) throw abortedError(signal);
        if (run.idleFired) throw idleError(idleTimeout);
        if (!acc.stopped) {
          throw new ModelError('model.connection', 'model stream ended before message_stop', { retryable: true });
        }
        return;
      } catch (e) {
        // The message was complete (message.stop yielded): a failure while closing the stream changes nothing.
        if (acc.stopped && !signal.aborted) return;
        const err = run.idleFired && !signal.aborted ? idleError(idleTimeout) : toModelError(e, signal, secrets);
        const delay = run.yielded ? undefined : retryDelay(attempt, err, policy);
        if (delay === undefined) throw err;
        await sleep(delay, signal);
      } finally {
        run.dispose();
      }
    }
  }

  return {
    name: options.name ?? 'anthropic',
    stream,
  };
}

/* ------------------------------------------------------------------ errors */

/** `text/event-stream`, parameters (charset) allowed. */
function isEventStream(contentType: string | null): boolean {
  return contentType !== null && contentType.split(';')[0]!.trim().toLowerCase() === 'text/event-stream';
}

/**
 * A successful response that is not an SSE stream (a proxy that ignored `stream: true` and sent
 * the JSON message, an HTML error page): the SDK would read it as an empty stream. Not retried:
 * the same endpoint answers the same way.
 */
function notEventStreamError(status: number, contentType: string | null): ModelError {
  return new ModelError(
    'model.stream_error',
    `model response is not an event stream: HTTP ${status} with content-type ${contentType === null ? '(none)' : JSON.stringify(contentType)}, ` +
      'expected text/event-stream (a proxy or gateway may have ignored stream: true)',
    { retryable: false, status },
  );
}

/** Undici's timeout codes (Node's built-in fetch), anywhere in an error's cause chain. */
const UNDICI_TIMEOUTS: Readonly<Record<string, string>> = {
  UND_ERR_BODY_TIMEOUT: 'no data from the server within the HTTP client\'s body timeout',
  UND_ERR_HEADERS_TIMEOUT: 'no response headers within the HTTP client\'s headers timeout',
  UND_ERR_CONNECT_TIMEOUT: 'no connection within the HTTP client\'s connect timeout',
};

/** The errors an error was caused by, nearest first (bounded; cycles cut). */
function causesOf(e: unknown): Error[] {
  const out: Error[] = [];
  let c = e instanceof Error ? e.cause : undefined;
  while (c instanceof Error && out.length < 8 && !out.includes(c) && c !== e) {
    out.push(c);
    c = c.cause;
  }
  return out;
}

const codeOf = (e: Error): string | undefined => {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
};

/** The messages of an error's cause chain (`causesOf(e)`), redacted, nearest first, without repeats. */
function causeMessages(e: unknown, chain: readonly Error[], secrets: readonly string[]): string[] {
  const own = e instanceof Error ? e.message : String(e);
  const parts: string[] = [];
  for (const c of chain) {
    const m = redact(c.message, secrets).trim();
    if (m.length > 0 && m !== own && !parts.includes(m)) parts.push(m);
  }
  return parts;
}

/** Maps anything an SDK call throws to a ModelError whose text and cause carry no secret. */
function toModelError(e: unknown, signal: AbortSignal | undefined, secrets: readonly string[]): ModelError {
  if (e instanceof ModelError) return e;
  if (signal?.aborted || e instanceof APIUserAbortError) return abortedError(signal);
  const cause = sanitizedCause(e, secrets);
  const chain = causesOf(e);
  const causes = causeMessages(e, chain, secrets);
  // " (other side closed)": why undici ended a body with "terminated", why fetch failed.
  const detail = causes.length > 0 ? ` (${causes.join(': ')})` : '';
  if (e instanceof APIConnectionTimeoutError) {
    return new ModelError('model.timeout', `model request timed out${detail}`, { retryable: true, cause });
  }
  const timeoutCode = chain.map(codeOf).find((c) => c !== undefined && Object.hasOwn(UNDICI_TIMEOUTS, c));
  if (timeoutCode !== undefined) {
    // Node's fetch: a body silent for bodyTimeout (300 s by default) ends as "terminated" caused by UND_ERR_BODY_TIMEOUT.
    const what = e instanceof APIConnectionError ? 'model request' : 'model stream';
    const said = [redact(e instanceof Error ? e.message : String(e), secrets), ...causes].join(': ');
    return new ModelError('model.timeout', `${what} timed out: ${UNDICI_TIMEOUTS[timeoutCode]} (${timeoutCode}; ${said})`, {
      retryable: true,
      cause,
    });
  }
  if (e instanceof APIConnectionError) {
    return new ModelError('model.connection', `model connection failed: ${redact(e.message, secrets)}${detail}`, { retryable: true, cause });
  }
  if (e instanceof APIError) {
    const status = e.status as number | undefined;
    const type = e.type ?? (e.error as { error?: { type?: string } } | undefined)?.error?.type ?? null;
    const apiMessage = redact(e.apiMessage ?? e.message, secrets);
    if (status === undefined) {
      // An `error` event inside an otherwise successful stream.
      const retryable = type === 'overloaded_error' || type === 'api_error';
      return new ModelError('model.stream_error', `model stream error (${type ?? 'unknown'}): ${apiMessage}`, { retryable, cause });
    }
    const retryAfterMs = parseRetryAfter(e.headers);
    const [code, byStatus] = codeForStatus(status, type);
    // The API's own word wins over the status, as it does in the SDK's retries (turned off here).
    const should = typeof e.headers?.get === 'function' ? e.headers.get('x-should-retry') : null;
    const retryable = should === 'true' ? true : should === 'false' ? false : byStatus;
    return new ModelError(code, `model request failed (${status}${type ? ` ${type}` : ''}): ${apiMessage}`, {
      retryable,
      status,
      cause,
      ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }
  const err = e instanceof Error ? e : new Error(String(e));
  if (err instanceof SyntaxError) {
    return new ModelError('model.stream_error', `model stream could not be parsed: ${redact(err.message, secrets)}`, { cause });
  }
  // Undici's "terminated" / socket errors while reading the body; the reason is in the cause chain.
  return new ModelError('model.connection', `model stream failed: ${redact(err.message, secrets)}${detail}`, { retryable: true, cause });
}

function codeForStatus(status: number, type: string | null): [ModelErrorCode, boolean] {
  if (status === 529 || type === 'overloaded_error') return ['model.overloaded', true];
  if (status === 429) return ['model.rate_limited', true];
  if (status === 408) return ['model.timeout', true];
  if (status >= 500) return ['model.server_error', true];
  switch (status) {
    case 400:
    case 413:
    case 422:
      return ['model.invalid_request', false];
    case 401:
      return ['model.authentication', false];
    case 402:
    case 403:
      return ['model.permission', false];
    case 404:
      return ['model.not_found', false];
    case 409:
      return ['model.unknown', true];
    default:
      return ['model.unknown', false];
  }
}

/**
 * A plain Error standing for the SDK's: name, redacted message and stack, status, request id, a
 * string `code` (undici's `UND_ERR_*`, `ECONNRESET`), and its own cause chain sanitised the same way.
 */
function sanitizedCause(e: unknown, secrets: readonly string[], depth = 0): Error {
  const src = e instanceof Error ? e : new Error(String(e));
  const c = new Error(redact(src.message, secrets));
  c.name = src.name;
  c.stack = redact(src.stack ?? '', secrets);
  const meta = c as Error & { status?: number; requestID?: string | null; code?: string };
  if (src instanceof APIError) {
    if (src.status !== undefined) meta.status = src.status as number;
    meta.requestID = src.requestID ?? null;
  }
  const code = codeOf(src);
  if (code !== undefined) meta.code = redact(code, secrets);
  if (src.cause instanceof Error && src.cause !== src && depth < 8) c.cause = sanitizedCause(src.cause, secrets, depth + 1);
  return c;
}
