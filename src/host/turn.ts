/**
 * The state of one turn while the host runs it, what the host persists to resume it, and the
 * small helpers the turn loop shares. No I/O.
 */
import { getEventListeners, setMaxListeners } from 'node:events';
import type { SendOptions, TurnOutcome } from '../api.js';
import type { ModelError } from '../errors.js';
import type { CompatTracker } from '../respond/index.js';
import type { InboundMessage, MailboxEntry, Part, ToolUseBlock, Usage } from '../types.js';
import type { ActorTools } from './tool-catalog.js';

/** A call the turn waits for: an approval or a client-side tool. */
export interface PendingCall {
  callId: string;
  tool: string;
  args: unknown;
  kind: 'approval' | 'client';
  approvalId?: string;
}

export interface QueuedMessage {
  turnId: string;
  message: InboundMessage;
  opts: SendOptions;
  resolve: (o: TurnOutcome) => void;
  reject: (e: unknown) => void;
  promise: Promise<TurnOutcome>;
}

export interface ActiveTurn {
  turnId: string;
  input: InboundMessage;
  opts: SendOptions;
  parts: Part[];
  usage: Usage;
  pending: Map<string, PendingCall>;
  /** Messages that joined the turn (double-texting `interrupt`) and wait for the next model call. */
  joined: InboundMessage[];
  abort: AbortController | null;
  /**
   * The signal of the turn's tool handlers (taken at its first tool call, see
   * toolAbortController): aborted by an interrupt (the next model call's tools get a new one) and
   * when the host stops (runtime close, session delete).
   */
  toolAbort?: AbortController | undefined;
  interrupted: boolean;
  /** The effect loop is running for this turn. */
  running: boolean;
  /** The last model response's tool uses, with the tool view its call was built with. */
  response?: { actor: string; tools: ActorTools; toolUses: ToolUseBlock[] };
  /** The parts of the last state change (what a hand-off hands over). */
  handoffParts?: Part[];
  stop?: 'max_tokens' | 'refusal' | 'error' | 'interrupted';
  error?: { code: string; message: string };
  /** Spec 003 compatibility mode: the turn's respond_to_user / mark_work_complete record. */
  compat?: CompatTracker;
  resolve: (o: TurnOutcome) => void;
  promise: Promise<TurnOutcome>;
}

/** A turn that has just started (or is being restored): nothing produced yet. */
export function newTurn(
  turnId: string,
  input: InboundMessage,
  opts: SendOptions,
  d: { promise: Promise<TurnOutcome>; resolve: (o: TurnOutcome) => void },
): ActiveTurn {
  return { turnId, input, opts, parts: [], usage: ZERO, pending: new Map(), joined: [], abort: null, interrupted: false, running: false, resolve: d.resolve, promise: d.promise };
}

/** The mailbox record of a user's message (the turn's input, or one that joined it). */
export function userEntry(turnId: string, at: string, m: InboundMessage): MailboxEntry {
  return { kind: 'user', turnId, at, text: m.text, ...(m.principal ? { principal: m.principal } : {}) };
}

/** What the host persists besides the machine snapshot. */
export interface HostState {
  turn?: { turnId: string; input: InboundMessage; opts: SendOptions; parts: Part[]; usage: Usage; pending: PendingCall[]; joined?: InboundMessage[] };
  /** Only in snapshots written before queued messages became records of their own (StepCommit.enqueue). */
  queue?: { turnId: string; message: InboundMessage; opts: SendOptions }[];
}

/**
 * The AbortController for a turn's tool handlers: `previous` (the last turn's) when it is not
 * aborted and nothing listens on it any more, else a new one (Node makes one in about 2.5 us).
 * A signal a handler left a listener on is never handed to another turn, so such listeners go
 * with their turn. Node's listener cap (10) is lifted by the dispatch that runs many calls at
 * once (`liftListenerCap`): setting it costs more than making the controller.
 */
export function toolAbortController(previous?: AbortController | null): AbortController {
  if (previous && !previous.signal.aborted && getEventListeners(previous.signal, 'abort').length === 0) return previous;
  return new AbortController();
}

/** Many parallel calls each listening on the turn's signal are no leak: no cap for it. */
export function liftListenerCap(signal: AbortSignal): void {
  setMaxListeners(0, signal);
}

/** Calls dispatched at once from which the turn's signal gets no listener cap. */
export const MANY_PARALLEL_CALLS = 8;

export const ZERO: Usage = { inputTokens: 0, outputTokens: 0 };
export const RESPOND_OK = 'Recorded.';
/** The resume kind that tells a held turn its pending calls are all answered. */
export const CALLS_ANSWERED = 'approval-response';

export function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens };
  const cr = (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0);
  const cw = (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0);
  if (cr) out.cacheReadTokens = cr;
  if (cw) out.cacheWriteTokens = cw;
  return out;
}

export function isPromise(x: unknown): x is Promise<unknown> {
  return x !== null && typeof x === 'object' && typeof (x as { then?: unknown }).then === 'function';
}

export function userFacingModelError(err: ModelError): string {
  switch (err.code) {
    case 'model.rate_limited':
    case 'model.overloaded':
      return 'The assistant is busy right now and could not answer. Please try again in a moment.';
    case 'model.connection':
    case 'model.timeout':
    case 'model.server_error':
    case 'model.stream_error':
      return 'The assistant could not be reached. Please try again.';
    case 'model.authentication':
    case 'model.permission':
      return 'The assistant is not configured correctly (the model service refused its credentials).';
    default:
      return 'Something went wrong while the assistant was answering. Please try again.';
  }
}
