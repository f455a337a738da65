/**
 * The Anthropic ModelPort: streams a Messages API call through `@anthropic-ai/sdk` and maps its
 * raw stream events to ModelEvents in order. Subpath export `turnstate/anthropic`.
 *
 * Contract:
 * - Forces tool use (`tool_choice: any`) unless thinking is on (`auto`: the API refuses forced
 *   tool choice with extended thinking). Caches the system prompt and the tool schemas.
 * - Failures end the iterator with a ModelError. A retryable failure is retried (bounded, with
 *   backoff) only while none of the failed attempt's events has been yielded; afterwards it is
 *   thrown, so nothing is half-applied.
 * - Aborting the signal ends the iterator with ModelError `model.aborted`; no event follows it.
 * - The API key never appears in an error message, stack, cause or event.
 */
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import type { MessageCreateParamsStreaming, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';
import { ModelError } from '../errors.js';
import type { ModelErrorCode } from '../errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../api.js';
import type { ContentBlock, ModelMessage, ModelStopReason, ModelTool, Usage } from '../types.js';
import { firstDuplicateKey } from './duplicate-keys.js';
import { abortedError, parseRetryAfter, resolveRetryPolicy, retryDelay, sleep } from './retry.js';
import type { RetryPolicy } from './retry.js';

export interface AnthropicModelOptions {
  /** Default `process.env.ANTHROPIC_API_KEY`. Ignored when `client` is given. */
  apiKey?: string;
  /** Default the SDK's (`https://api.anthropic.com`, or `ANTHROPIC_BASE_URL`). */
  baseURL?: string;
  /** Model for actor turns when the request names none (default `claude-sonnet-4-6`). */
  model?: string;
  /** Model for `purpose: 'llm-context'` requests that name none (default `claude-haiku-4-5`). */
  contextModel?: string;
  /** `max_tokens` when the request sets none (default 4096). */
  maxTokens?: number;
  /** Bounded retries; the SDK's own retries are always off. */
  retry?: Partial<RetryPolicy>;
  /** Time allowed until the response headers arrive, per attempt (default the SDK's 10 min). */
  timeout?: number;
  /** Abort an attempt whose stream delivers no event for this long (ms); 0 or unset: no idle limit. */
  idleTimeout?: number;
  /** A ready client (its own retries are bypassed per request). Tests and proxies use this. */
  client?: Anthropic;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /** Port name (default 'anthropic'). */
  name?: string;
}

const DEFAULT_MODEL = 'claude-sonnet-4-6';
const DEFAULT_CONTEXT_MODEL = 'claude-haiku-4-5';
const DEFAULT_MAX_TOKENS = 4096;
const EPHEMERAL = Object.freeze({ type: 'ephemeral' as const });

export function createAnthropicModel(options: AnthropicModelOptions = {}): ModelPort {
  const policy = resolveRetryPolicy(options.retry);
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
        const sdkStream = await client.messages.create(params, { ...requestOptions, signal: run.signal });
        for await (const raw of sdkStream) {
          run.touch();
          if (signal.aborted) break;
          const ev = acc.map(raw);
          if (ev === undefined) continue;
          run.yielded = true;
          yield ev;
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

/* ------------------------------------------------------------------ one attempt */

function idleError(ms: number): ModelError {
  return new ModelError('model.timeout', `model stream delivered no event for ${ms} ms`, { retryable: true });
}

/** Per-attempt signal: the caller's, plus an idle watchdog when configured. */
class Attempt {
  yielded = false;
  idleFired = false;
  readonly signal: AbortSignal;
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  private seen = 0;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly outer: AbortSignal,
    private readonly idleMs: number,
  ) {
    if (idleMs <= 0) {
      this.signal = outer;
      return;
    }
    const c = new AbortController();
    this.controller = c;
    this.signal = c.signal;
    this.onAbort = () => c.abort(outer.reason);
    outer.addEventListener('abort', this.onAbort, { once: true });
    this.arm();
  }

  touch(): void {
    this.ticks++;
  }

  private arm(): void {
    this.timer = setTimeout(() => {
      if (this.ticks === this.seen) {
        this.idleFired = true;
        this.controller?.abort(new Error('idle timeout'));
        return;
      }
      this.seen = this.ticks;
      this.arm();
    }, this.idleMs);
    this.timer.unref?.();
  }

  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.onAbort !== undefined) this.outer.removeEventListener('abort', this.onAbort);
  }
}

/* ------------------------------------------------------------------ stream mapping */

interface BlockState {
  type: 'text' | 'thinking' | 'redacted_thinking' | 'tool_use' | 'ignored';
  text: string;
  signature: string;
  id: string;
  name: string;
  data: string;
}

/** Maps raw SDK stream events to ModelEvents and accumulates the final content. */
export class StreamAccumulator {
  stopped = false;
  private blocks: (BlockState | undefined)[] = [];
  private content: (ContentBlock | undefined)[] = [];
  private stopReason: ModelStopReason = 'end_turn';
  private usage: Usage = { inputTokens: 0, outputTokens: 0 };

  /** The ModelEvent for one raw event, or undefined when it maps to none. */
  map(ev: RawMessageStreamEvent): ModelEvent | undefined {
    switch (ev.type) {
      case 'content_block_delta': {
        const b = this.blocks[ev.index];
        if (b === undefined) return undefined;
        const d = ev.delta;
        switch (d.type) {
          case 'input_json_delta':
            if (b.type !== 'tool_use') return undefined;
            b.text += d.partial_json;
            return { type: 'input.delta', index: ev.index, partialJson: d.partial_json };
          case 'text_delta':
            if (b.type !== 'text') return undefined;
            b.text += d.text;
            return { type: 'text.delta', index: ev.index, text: d.text };
          case 'thinking_delta':
            if (b.type !== 'thinking') return undefined;
            b.text += d.thinking;
            return { type: 'thinking.delta', index: ev.index, text: d.thinking };
          case 'signature_delta':
            if (b.type === 'thinking') b.signature += d.signature;
            return undefined;
          default:
            return undefined;
        }
      }
      case 'content_block_start': {
        const cb = ev.content_block;
        const st: BlockState = { type: 'ignored', text: '', signature: '', id: '', name: '', data: '' };
        this.blocks[ev.index] = st;
        switch (cb.type) {
          case 'text':
            st.type = 'text';
            st.text = cb.text ?? '';
            return { type: 'block.start', index: ev.index, block: { type: 'text' } };
          case 'thinking':
            st.type = 'thinking';
            st.text = cb.thinking ?? '';
            st.signature = cb.signature ?? '';
            return { type: 'block.start', index: ev.index, block: { type: 'thinking' } };
          case 'redacted_thinking':
            st.type = 'redacted_thinking';
            st.data = cb.data;
            return undefined;
          case 'tool_use':
            st.type = 'tool_use';
            st.id = cb.id;
            st.name = cb.name;
            return { type: 'block.start', index: ev.index, block: { type: 'tool_use', id: cb.id, name: cb.name } };
          default:
            return undefined;
        }
      }
      case 'content_block_stop': {
        const b = this.blocks[ev.index];
        if (b === undefined || b.type === 'ignored') return undefined;
        const block = finishBlock(b);
        this.content[ev.index] = block;
        return { type: 'block.stop', index: ev.index, block };
      }
      case 'message_start': {
        this.readUsage(ev.message.usage);
        return undefined;
      }
      case 'message_delta': {
        if (ev.delta.stop_reason !== null && ev.delta.stop_reason !== undefined) this.stopReason = stopReasonOf(ev.delta.stop_reason);
        this.readUsage(ev.usage);
        return undefined;
      }
      case 'message_stop': {
        this.stopped = true;
        const content: ContentBlock[] = [];
        for (const c of this.content) if (c !== undefined) content.push(c);
        return { type: 'message.stop', stopReason: this.stopReason, usage: this.usage, content };
      }
      default:
        return undefined;
    }
  }

  private readUsage(u: {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
  } | null | undefined): void {
    if (u === null || u === undefined) return;
    // Counts are cumulative: the latest non-null value wins.
    if (typeof u.input_tokens === 'number') this.usage.inputTokens = u.input_tokens;
    if (typeof u.output_tokens === 'number') this.usage.outputTokens = u.output_tokens;
    if (typeof u.cache_read_input_tokens === 'number') this.usage.cacheReadTokens = u.cache_read_input_tokens;
    if (typeof u.cache_creation_input_tokens === 'number') this.usage.cacheWriteTokens = u.cache_creation_input_tokens;
  }
}

function finishBlock(b: BlockState): ContentBlock {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'thinking':
      return { type: 'thinking', thinking: b.text, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
    default: {
      const raw = b.text;
      if (raw.length === 0) return { type: 'tool_use', id: b.id, name: b.name, input: {} };
      try {
        const input: unknown = JSON.parse(raw);
        const duplicateKey = firstDuplicateKey(raw);
        if (duplicateKey === undefined) return { type: 'tool_use', id: b.id, name: b.name, input };
        return {
          type: 'tool_use',
          id: b.id,
          name: b.name,
          input: {},
          inputError: `tool input names the key at ${duplicateKey} twice in one object`,
          duplicateKey,
          rawInput: raw,
        };
      } catch (e) {
        return {
          type: 'tool_use',
          id: b.id,
          name: b.name,
          input: {},
          inputError: `tool input is not valid JSON (${(e as Error).message})`,
          rawInput: raw,
        };
      }
    }
  }
}

const STOP_REASONS: ReadonlySet<string> = new Set<ModelStopReason>([
  'end_turn',
  'tool_use',
  'max_tokens',
  'stop_sequence',
  'refusal',
  'pause_turn',
  'model_context_window_exceeded',
]);

/** Unknown stop reasons (newer API versions) map to 'end_turn'. */
function stopReasonOf(s: string): ModelStopReason {
  return STOP_REASONS.has(s) ? (s as ModelStopReason) : 'end_turn';
}

/* ------------------------------------------------------------------ request building */

type ToolParam = {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  eager_input_streaming?: boolean;
  cache_control?: { type: 'ephemeral' };
};

const toolCache = new WeakMap<readonly ModelTool[], ToolParam[]>();

/** Tool params; the last carries cache_control so the whole tool list is a cached prefix. Cached per tools array. */
export function buildTools(tools: readonly ModelTool[]): ToolParam[] {
  const hit = toolCache.get(tools);
  if (hit !== undefined) return hit;
  const out = tools.map((t, i): ToolParam => {
    const p: ToolParam = { name: t.name, description: t.description, input_schema: t.input_schema };
    if (t.eager_input_streaming === true) p.eager_input_streaming = true;
    if (i === tools.length - 1) p.cache_control = EPHEMERAL;
    return p;
  });
  toolCache.set(tools, out);
  return out;
}

/** The Messages API request for a ModelRequest (streaming). */
export function buildRequest(req: ModelRequest, d: { model: string; maxTokens: number }): MessageCreateParamsStreaming {
  let maxTokens = d.maxTokens;
  const params: Record<string, unknown> = {
    model: d.model,
    max_tokens: maxTokens,
    stream: true,
    messages: normaliseHistory(req.messages),
  };
  if (req.system.length > 0) params.system = [{ type: 'text', text: req.system, cache_control: EPHEMERAL }];
  if (req.tools.length > 0) {
    params.tools = buildTools(req.tools);
    params.tool_choice = req.thinking !== undefined || req.toolChoice === 'auto' ? { type: 'auto' } : { type: 'any' };
  }
  if (req.thinking !== undefined) {
    const budget = req.thinking.budgetTokens;
    // The thinking budget counts against max_tokens, which must exceed it.
    if (maxTokens <= budget) maxTokens = budget + d.maxTokens;
    params.max_tokens = maxTokens;
    params.thinking = { type: 'enabled', budget_tokens: budget };
  }
  return params as unknown as MessageCreateParamsStreaming;
}

const INTERRUPTED_RESULT = 'No result was recorded for this tool call (the turn was interrupted).';

/**
 * Makes a history the Messages API accepts: consecutive same-role messages merged; after an
 * assistant message with tool_use blocks, the next user message starts with exactly one
 * tool_result per tool_use, in the same order (a missing one is filled with an is_error result;
 * a result matching no tool_use becomes a text block); empty text blocks and empty messages
 * dropped; thinking and redacted_thinking blocks passed through unchanged.
 */
export function normaliseHistory(messages: readonly ModelMessage[]): Array<{ role: 'user' | 'assistant'; content: unknown[] }> {
  // 1. merge consecutive same-role messages, drop empty text blocks.
  const merged: Array<{ role: 'user' | 'assistant'; content: ContentBlock[] }> = [];
  for (const m of messages) {
    const blocks = m.content.filter((b) => !(b.type === 'text' && b.text.length === 0));
    if (blocks.length === 0) continue;
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === m.role) last.content.push(...blocks);
    else merged.push({ role: m.role, content: blocks });
  }
  // 2. place tool_results.
  const out: Array<{ role: 'user' | 'assistant'; content: unknown[] }> = [];
  let expected: string[] = [];
  for (let i = 0; i < merged.length; i++) {
    const m = merged[i]!;
    if (m.role === 'assistant') {
      if (expected.length > 0) out.push({ role: 'user', content: expected.map(missingResult) });
      const content = m.content.map(toAssistantParam).filter((b): b is Record<string, unknown> => b !== undefined);
      expected = [];
      for (const b of m.content) if (b.type === 'tool_use') expected.push(b.id);
      if (content.length > 0) out.push({ role: 'assistant', content });
      continue;
    }
    const results = new Map<string, ContentBlock & { type: 'tool_result' }>();
    const rest: unknown[] = [];
    for (const b of m.content) {
      if (b.type === 'tool_result') {
        if (expected.includes(b.tool_use_id) && !results.has(b.tool_use_id)) results.set(b.tool_use_id, b);
        else rest.push({ type: 'text', text: `[result of tool call ${b.tool_use_id}${b.is_error ? ', error' : ''}]\n${b.content}` });
      } else {
        const p = toUserParam(b);
        if (p !== undefined) rest.push(p);
      }
    }
    const first: unknown[] = expected.map((id) => {
      const r = results.get(id);
      return r === undefined ? missingResult(id) : toolResultParam(r);
    });
    expected = [];
    const content = first.length > 0 ? first.concat(rest) : rest;
    if (content.length > 0) out.push({ role: 'user', content });
  }
  if (expected.length > 0) out.push({ role: 'user', content: expected.map(missingResult) });
  return out;
}

function missingResult(id: string): Record<string, unknown> {
  return { type: 'tool_result', tool_use_id: id, content: INTERRUPTED_RESULT, is_error: true };
}

function toolResultParam(b: { tool_use_id: string; content: string; is_error?: boolean }): Record<string, unknown> {
  const p: Record<string, unknown> = { type: 'tool_result', tool_use_id: b.tool_use_id, content: b.content };
  if (b.is_error === true) p.is_error = true;
  return p;
}

function toAssistantParam(b: ContentBlock): Record<string, unknown> | undefined {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'tool_use': {
      const input = b.input !== null && typeof b.input === 'object' && !Array.isArray(b.input) ? b.input : {};
      return { type: 'tool_use', id: b.id, name: b.name, input };
    }
    case 'thinking':
      return { type: 'thinking', thinking: b.thinking, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
    case 'tool_result':
      // A tool_result cannot sit in an assistant message; keep its text.
      return { type: 'text', text: `[result of tool call ${b.tool_use_id}]\n${b.content}` };
  }
}

function toUserParam(b: ContentBlock): Record<string, unknown> | undefined {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'tool_use':
    case 'thinking':
    case 'redacted_thinking':
      // Model-authored blocks cannot appear in a user message; they are dropped.
      return undefined;
    case 'tool_result':
      return toolResultParam(b);
  }
}

/* ------------------------------------------------------------------ errors */

/** Maps anything an SDK call throws to a ModelError whose text and cause carry no secret. */
export function toModelError(e: unknown, signal: AbortSignal | undefined, secrets: readonly string[]): ModelError {
  if (e instanceof ModelError) return e;
  if (signal?.aborted || e instanceof APIUserAbortError) return abortedError(signal);
  const cause = sanitizedCause(e, secrets);
  if (e instanceof APIConnectionTimeoutError) {
    return new ModelError('model.timeout', 'model request timed out', { retryable: true, cause });
  }
  if (e instanceof APIConnectionError) {
    return new ModelError('model.connection', `model connection failed: ${redact(e.message, secrets)}`, { retryable: true, cause });
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
    const [code, retryable] = codeForStatus(status, type);
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
  // Undici's "terminated" / socket errors while reading the body.
  return new ModelError('model.connection', `model stream failed: ${redact(err.message, secrets)}`, { retryable: true, cause });
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

function redact(s: string, secrets: readonly string[]): string {
  let out = s;
  for (const k of secrets) if (out.includes(k)) out = out.split(k).join('[redacted]');
  return out;
}

/** A plain Error standing for the SDK's: name, redacted message and stack, status, request id. */
function sanitizedCause(e: unknown, secrets: readonly string[]): Error {
  const src = e instanceof Error ? e : new Error(String(e));
  const c = new Error(redact(src.message, secrets));
  c.name = src.name;
  c.stack = redact(src.stack ?? '', secrets);
  const meta = c as Error & { status?: number; requestID?: string | null };
  if (src instanceof APIError) {
    if (src.status !== undefined) meta.status = src.status as number;
    meta.requestID = src.requestID ?? null;
  }
  return c;
}
