/**
 * The state of one turn while the host runs it, what the host persists to resume it, and the
 * small helpers the turn loop shares. No I/O.
 */
import { setMaxListeners } from 'node:events';
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
  /**
   * Answered calls whose outcome is still being recorded (an approved call running, a denial
   * being written): the turn resumes only when none is pending and none is here, so the model
   * never sees a tool_use without its tool_result.
   */
  answering: number;
  /** Messages that joined the turn (double-texting `interrupt`) and wait for the next model call. */
  joined: InboundMessage[];
  /**
   * The senders of joined messages in this host (a restored turn's have none): each one's place
   * in arrival order and what its `settled` follows, this turn once the message reached a model
   * request, else the turn it is requeued as.
   */
  joinedBy?: Map<InboundMessage, { pos: number } & ReturnType<typeof deferred<TurnOutcome>>>;
  abort: AbortController | null;
  /** Why the response's last refused respond() call was refused (a retry budget's error says it). */
  lastRejection?: string;
  /**
   * The signal of the turn's tool handlers, made at its first tool call and never handed to
   * another turn (a handler may keep it, polling `aborted`, after its call): aborted by an
   * interrupt (the next model call's tools get a new one) and when the host stops (runtime
   * close, session delete).
   */
  toolAbort?: AbortController | undefined;
  /** Calls dispatched under `toolAbort` (countSignalCalls). */
  signalCalls: number;
  interrupted: boolean;
  /** An injection that resumes the turn's hold is being written (a second one is refused). */
  resuming?: boolean;
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
  return { turnId, input, opts, parts: [], usage: ZERO, pending: new Map(), answering: 0, joined: [], abort: null, signalCalls: 0, interrupted: false, running: false, resolve: d.resolve, promise: d.promise };
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
 * What the host persists of its turn beside the machine snapshot. Queued messages are journaled
 * records of their own (queue.ts), not part of it. Copies: a store may keep the object (the
 * memory store does) while the turn goes on.
 */
export function hostStateOf(t: ActiveTurn | null): HostState {
  const host: HostState = {};
  if (t) {
    host.turn = { turnId: t.turnId, input: t.input, opts: t.opts, parts: t.parts.slice(), usage: t.usage, pending: [...t.pending.values()] };
    if (t.joined.length) host.turn.joined = t.joined.slice();
  }
  return host;
}

/**
 * Counts `n` more calls dispatched under the turn's tool signal. Each may leave a listener on it
 * until the turn ends, which is no leak: from MANY_CALLS calls on (in one response or over the
 * turn's rounds) the signal has no listener cap, so Node never warns of one.
 */
export function countSignalCalls(t: ActiveTurn, signal: AbortSignal, n: number): void {
  const before = t.signalCalls;
  t.signalCalls = before + n;
  if (before < MANY_CALLS && t.signalCalls >= MANY_CALLS) setMaxListeners(0, signal);
}

/** Calls under one tool signal from which it has no listener cap (Node warns past 10 listeners). */
export const MANY_CALLS = 8;

export const ZERO: Usage = { inputTokens: 0, outputTokens: 0 };
export const RESPOND_OK = 'Recorded.';
/** Tells the machine every call the held turn waited for is answered. */
export const ANSWERED = Object.freeze({ type: 'ANSWERED' as const });

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
