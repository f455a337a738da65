/**
 * EventRouter: the boundary every routed tool call, and every event other actors may react
 * to, passes through (spec 002 "Scope and routing").
 *
 * - `routeEvent` publishes to observers (an RxJS Subject; nothing is built when no one observes).
 * - `dispatchTool` runs one tool call per its (scope, routing): routed calls are published as
 *   `tool_call:<name>` from `actor:<actor>` and run the handler registered with `handle()`,
 *   else the tool's own; bypass calls run the tool's handler inline and publish nothing.
 *   Events of routed specialist tools are private to the calling session.
 * - Every call, routed or bypass, yields an ExecutionRecord. A handler's throw, a cancelled
 *   call, or an output-schema violation becomes an `isError` result: dispatchTool never rejects.
 *   The handler runs inline here; what its answer becomes (views, text, record) is attempt.ts's.
 */
// The module's binding, not the global getter: see attempt.ts.
import { performance } from 'node:perf_hooks';
import { Subject, filter, type Observable, type Subscription } from 'rxjs';
import { TurnstateError } from '../errors.js';
import type { RegisteredTool, ToolContext, ToolHandler } from '../registries/types.js';
import type { ExecutionOutcome, ExecutionRecord, Scope } from '../types.js';
import type { AnnotatedRecord } from './annotated.js';
import { attemptRecord, failure, settleAttempt, type Attempt } from './attempt.js';
import { backoff, Deadline, raceAbort } from './call-limits.js';
import { ContainedObservable } from './contained.js';
import { epochAt } from './epoch.js';
import { handlerContext, stopSignal, unsignalledContext, type DispatchContext } from './dispatch-context.js';
import { DEFAULT_RESULT_MAX_CHARS, type ExecutionSink } from './execution-log.js';
import { FilterAndDistribute } from './filter-distribute.js';
import { ownArgs } from './own-args.js';

/** One event published on the router. */
export interface RoutedEvent {
  readonly source: string;
  readonly type: string;
  readonly payload: unknown;
  readonly sessionId: string;
  /** Seen only by observers whose filter names this session. */
  readonly private: boolean;
  readonly turnId?: string;
  readonly callId?: string;
}

export interface RouteOptions {
  sessionId: string;
  private?: boolean | undefined;
  turnId?: string | undefined;
  callId?: string | undefined;
}

/**
 * What an observer wants. All given criteria must match. Without `sessionId` an observer sees
 * every session's public events and no private ones.
 */
export interface ObserveFilter {
  /** Exact type, or a pattern such as /^tool_call:/. */
  type?: string | RegExp | undefined;
  source?: string | undefined;
  sessionId?: string | undefined;
}

/** The outcome of one tool call, as the runtime feeds it back into the machine. */
export interface ToolDispatch {
  callId: string;
  /** The llm-session view as tool_result content: the string itself, or its JSON. */
  llmContent: string;
  /** The ui-stream view (published as the `tool.result` event's `view`). */
  uiView: unknown;
  isError: boolean;
  /**
   * The data of a data-bearing result as the envelope may carry it: an AnnotatedRecord's
   * 'peer-response' view (fields annotated for other destinations only stay out), or an
   * object/array result as it is.
   */
  data?: unknown;
  /** The data's kind (an AnnotatedRecord's `kind`), when the result is data-bearing and has one. */
  dataKind?: string;
  /** The record of the last attempt (the only one unless the tool was retried). */
  execution: ExecutionRecord;
  /** One record per attempt, in order; the last is `execution`. */
  executions: ExecutionRecord[];
}

/** A routed tool call as it starts (`EventRouter.calls$`). */
export interface RoutedCall {
  readonly sessionId: string;
  readonly turnId: string;
  readonly callId: string;
  readonly actor: string;
  readonly tool: string;
  readonly scope: Scope;
  readonly args: unknown;
  /** A routed specialist call: seen only through `inSession(sessionId)`. */
  readonly private: boolean;
}

/** A routed tool call as it settles, after its last attempt (`EventRouter.results$`). */
export interface RoutedResult {
  readonly call: RoutedCall;
  readonly isError: boolean;
  readonly outcome: ExecutionOutcome;
  /** How many times the handler was run (or refused to run, when cancelled first). */
  readonly attempts: number;
  /** The llm-session view, or the error message the model was given. */
  readonly view: unknown;
  /**
   * A generalist call's AnnotatedRecord, whole: what `filterAndDistribute()` splits into
   * per-destination views. Never set for specialist calls (specialists own their internals).
   */
  readonly record?: AnnotatedRecord;
  /** The last attempt's record. */
  readonly execution: ExecutionRecord;
}

/** The call and result streams of one session, its private (routed specialist) calls included. */
export interface SessionStreams {
  readonly calls$: Observable<RoutedCall>;
  readonly results$: Observable<RoutedResult>;
}

export interface EventRouterOptions {
  /** Destinations for AnnotatedRecord results; a fresh one (built-ins only) by default. */
  filterAndDistribute?: FilterAndDistribute | undefined;
  /** Cap on the logged result JSON (default 8192). */
  maxResultChars?: number | undefined;
  /** Receives every ExecutionRecord as it is made. */
  executionLog?: ExecutionSink | undefined;
  /**
   * Epoch-ms clock for each record's `at` (default Date.now; the runtime passes its own `now`).
   * `durationMs` is not read from it: it is measured (performance.now), see ExecutionRecord.
   */
  now?: (() => number) | undefined;
  /** Failures of observers and of the execution sink. Default: a process warning. */
  onError?: ((error: unknown, where: 'observer' | 'execution-log') => void) | undefined;
}

const TOOL_CALL = 'tool_call:';
const TOOL_RESULT = 'tool_result:';

export class EventRouter {
  readonly filterAndDistribute: FilterAndDistribute;
  /**
   * Routed tool calls as they start, every session's public (generalist) ones. Synchronous: an
   * observer runs inside the dispatch, so it must not block; nothing is built while no one observes.
   * A subscriber's throw goes to `onError` (as an observer's), never to the call or the process.
   */
  readonly calls$: Observable<RoutedCall>;
  /** Routed tool calls as they settle (after the last attempt); public ones, like `calls$`. */
  readonly results$: Observable<RoutedResult>;
  private readonly subject = new Subject<RoutedEvent>();
  private readonly calls = new Subject<RoutedCall>();
  private readonly results = new Subject<RoutedResult>();
  private readonly handlers = new Map<string, ToolHandler>();
  private readonly maxResultChars: number;
  private readonly executionLog: ExecutionSink | undefined;
  private readonly now: () => number;
  private readonly onError: (error: unknown, where: 'observer' | 'execution-log') => void;
  /** Where a throwing subscriber of the streams goes (see ContainedObservable). */
  private readonly containObserver = (e: unknown): void => this.report(e, 'observer');

  constructor(opts: EventRouterOptions = {}) {
    this.filterAndDistribute = opts.filterAndDistribute ?? new FilterAndDistribute();
    const max = opts.maxResultChars ?? DEFAULT_RESULT_MAX_CHARS;
    if (!Number.isInteger(max) || max < 0) {
      throw new TurnstateError('router.options_invalid', `EventRouter: maxResultChars must be a non-negative integer, got ${String(max)}`);
    }
    this.maxResultChars = max;
    this.executionLog = opts.executionLog;
    this.now = opts.now ?? Date.now;
    this.onError = opts.onError ?? defaultOnError;
    this.calls$ = new ContainedObservable(this.containObserver, this.calls).pipe(filter((c) => !c.private));
    this.results$ = new ContainedObservable(this.containObserver, this.results).pipe(filter((r) => !r.call.private));
  }

  /** The call and result streams of one session, its routed specialist calls included. */
  inSession(sessionId: string): SessionStreams {
    if (typeof sessionId !== 'string') throw new TurnstateError('router.observer_invalid', 'inSession(): sessionId must be a string');
    return {
      calls$: new ContainedObservable(this.containObserver, this.calls).pipe(filter((c) => c.sessionId === sessionId)),
      results$: new ContainedObservable(this.containObserver, this.results).pipe(filter((r) => r.call.sessionId === sessionId)),
    };
  }

  /** Publishes an event to the observers whose filter matches it. */
  routeEvent(source: string, type: string, payload: unknown, opts: RouteOptions): void {
    if (typeof opts?.sessionId !== 'string') {
      throw new TurnstateError('router.event_invalid', `routeEvent(${JSON.stringify(type)}): opts.sessionId must be a string`);
    }
    if (!this.subject.observed) return;
    const ev: { -readonly [K in keyof RoutedEvent]: RoutedEvent[K] } = {
      source,
      type,
      payload,
      sessionId: opts.sessionId,
      private: opts.private === true,
    };
    if (opts.turnId !== undefined) ev.turnId = opts.turnId;
    if (opts.callId !== undefined) ev.callId = opts.callId;
    this.subject.next(ev);
  }

  /**
   * Registers the handler for `tool_call:<name>`, overriding the tool's own handler for routed
   * calls (bypass calls never pass the router). One per type: a second is an error.
   * Returns a function that removes it.
   */
  handle(type: string, handler: ToolHandler): () => void {
    if (typeof type !== 'string' || !type.startsWith(TOOL_CALL) || type.length === TOOL_CALL.length) {
      throw new TurnstateError('router.handler_invalid', `handle(): type must be "tool_call:<toolName>", got ${JSON.stringify(type)}`);
    }
    if (typeof handler !== 'function') {
      throw new TurnstateError('router.handler_invalid', `handle("${type}"): handler must be a function`);
    }
    const name = type.slice(TOOL_CALL.length);
    if (this.handlers.has(name)) {
      throw new TurnstateError('router.handler_exists', `handle("${type}"): a handler is already registered for this type; remove it first`);
    }
    this.handlers.set(name, handler);
    return () => {
      if (this.handlers.get(name) === handler) this.handlers.delete(name);
    };
  }

  /** Calls `fn` for each routed event matching `filter` (see ObserveFilter for private events). */
  observe(filter: ObserveFilter, fn: (event: RoutedEvent) => void): Subscription {
    if (typeof fn !== 'function') throw new TurnstateError('router.observer_invalid', 'observe(): fn must be a function');
    const { source, sessionId } = filter;
    let type = filter.type;
    if (type instanceof RegExp && (type.global || type.sticky)) type = new RegExp(type.source, type.flags.replace(/[gy]/g, ''));
    const typeEq = typeof type === 'string' ? type : undefined;
    const typeRe = type instanceof RegExp ? type : undefined;
    return this.subject.subscribe((ev) => {
      if (sessionId === undefined ? ev.private : ev.sessionId !== sessionId) return;
      if (source !== undefined && ev.source !== source) return;
      if (typeEq !== undefined ? ev.type !== typeEq : typeRe !== undefined && !typeRe.test(ev.type)) return;
      try {
        fn(ev);
      } catch (e) {
        this.report(e, 'observer');
      }
    });
  }

  /**
   * Runs one tool call per spec 002; resolves with its outcome, never rejects. A routed call runs
   * under the tool's `timeoutMs`, and an idempotent tool's failed or timed-out attempts are tried
   * again per its `retry` policy; every attempt is logged. `ctx.signal` cancels the call (not
   * awaited further), `ctx.interrupt` asks it to stop (awaited: see DispatchContext).
   */
  dispatchTool(tool: RegisteredTool, args: unknown, ctx: DispatchContext): Promise<ToolDispatch> {
    try {
      return this.dispatch(tool, args, ctx);
    } catch (e) {
      // Not async (a handler that answers at once costs no async frame), yet a promise whatever happens.
      return Promise.reject(e);
    }
  }

  private dispatch(tool: RegisteredTool, args: unknown, ctx: DispatchContext): Promise<ToolDispatch> {
    const routed = tool.routing === 'routed';
    let handler = tool.handler;
    let call: RoutedCall | undefined;
    if (routed) {
      if (this.subject.observed) {
        this.routeEvent(`actor:${ctx.actorName}`, TOOL_CALL + tool.name, args, {
          sessionId: ctx.sessionId,
          private: tool.scope === 'specialist',
          turnId: ctx.turnId,
          callId: ctx.callId,
        });
      }
      // Built here only for calls$; results$ builds it when the call settles if no one was
      // subscribed now (a subscriber added meanwhile still gets the result).
      if (this.calls.observed) {
        call = routedCall(tool, args, ctx);
        this.calls.next(call);
      }
      handler = this.handlers.get(tool.name) ?? handler;
    }
    const stop = stopSignal(ctx);
    // A cancel signal alone: the caller's context is the handler's as it is.
    const handlerCtx = stop === undefined ? unsignalledContext(ctx) : stop === ctx.signal ? (ctx as ToolContext) : handlerContext(ctx, stop);
    const limited = routed && (tool.timeoutMs !== undefined || (tool.retry?.attempts ?? 1) > 1);
    if (limited || stop?.aborted) return this.attempts(tool, args, ctx, call, handler, handlerCtx, stop);

    // One attempt without a time limit: a handler that answers at once settles the call with no
    // await (no async frame, one resolved promise); one that returns a promise is awaited.
    const t0 = performance.now();
    // The default clock's time of t0 costs no second clock read (epoch.ts); an injected clock is asked.
    const startedAt = this.now === Date.now ? epochAt(t0) : this.now();
    let result: unknown;
    let thenable: boolean;
    try {
      // The handler's own copy: what it changes is not what the model sent, logged or published.
      result = handler(ownArgs(args), handlerCtx);
      // Inside the try: reading `then` may throw (a getter, a revoked Proxy); that is a failed call.
      thenable = isThenable(result);
    } catch (e) {
      const [error, outcome] = failure(tool, e, stop);
      return Promise.resolve(this.settle(tool, args, ctx, call, undefined, error, outcome, startedAt, t0));
    }
    if (!thenable) return Promise.resolve(this.settle(tool, args, ctx, call, result, undefined, 'ok', startedAt, t0));
    return this.awaitOne(tool, args, ctx, call, result as PromiseLike<unknown>, stop, startedAt, t0);
  }

  /** The one attempt's pending result, raced against the cancel signal (never the interrupt). */
  private async awaitOne(
    tool: RegisteredTool,
    args: unknown,
    ctx: DispatchContext,
    call: RoutedCall | undefined,
    pending: PromiseLike<unknown>,
    stop: AbortSignal | undefined,
    startedAt: number,
    t0: number,
  ): Promise<ToolDispatch> {
    const cancel = ctx.signal;
    try {
      const result = await (cancel === undefined ? pending : raceAbort(pending, cancel, undefined));
      return this.settle(tool, args, ctx, call, result, undefined, 'ok', startedAt, t0);
    } catch (e) {
      const [error, outcome] = failure(tool, e, stop);
      return this.settle(tool, args, ctx, call, undefined, error, outcome, startedAt, t0);
    }
  }

  /** A single attempt's outcome: logged, published, returned. */
  private settle(
    tool: RegisteredTool,
    args: unknown,
    ctx: DispatchContext,
    call: RoutedCall | undefined,
    result: unknown,
    error: string | undefined,
    outcome: ExecutionOutcome,
    startedAt: number,
    t0: number,
  ): ToolDispatch {
    const a = settleAttempt(this.filterAndDistribute, tool, ctx, result, error, outcome, outcome === 'error', startedAt, t0);
    const execution = attemptRecord(tool, args, ctx, a, 1, this.maxResultChars);
    this.append(execution);
    return this.complete(tool, args, ctx, call, a, [execution]);
  }

  /**
   * A call under the tool's `timeoutMs` or `retry` policy (or cancelled before it ran): each
   * attempt runs under its deadline; a failed or timed-out attempt of an idempotent tool is tried
   * again after its backoff; every attempt is logged.
   */
  private async attempts(
    tool: RegisteredTool,
    args: unknown,
    ctx: DispatchContext,
    call: RoutedCall | undefined,
    handler: RegisteredTool['handler'],
    handlerCtx: ToolContext,
    stop: AbortSignal | undefined,
  ): Promise<ToolDispatch> {
    const routed = tool.routing === 'routed';
    const timeoutMs = routed ? tool.timeoutMs : undefined;
    const retry = routed ? tool.retry : undefined;
    const attempts = retry?.attempts ?? 1;
    const cancel = ctx.signal;
    let a: Attempt;
    const executions: ExecutionRecord[] = [];
    for (let n = 1; ; n++) {
      // The run is inline (not a helper of its own) so that an attempt costs one await, not two.
      const t0 = performance.now();
      const startedAt = this.now === Date.now ? epochAt(t0) : this.now();
      let result: unknown;
      let error: string | undefined;
      let outcome: ExecutionOutcome = 'ok';
      let retryable = false;
      if (stop?.aborted) {
        error = `tool "${tool.name}" was cancelled before it ran`;
        outcome = 'cancelled';
      } else {
        const deadline = timeoutMs === undefined ? undefined : new Deadline(stop, timeoutMs);
        const runCtx = deadline === undefined ? handlerCtx : handlerContext(ctx, deadline.signal);
        try {
          result = handler(ownArgs(args), runCtx);
          // Raced against the cancel signal and the deadline, never the interrupt: an interrupted
          // handler settles as it will (it honours its signal and rejects, or its result counts).
          if (isThenable(result)) {
            const race = cancel ?? deadline?.expiry;
            result = await (race === undefined ? result : raceAbort(result, race, race === cancel ? deadline?.expiry : undefined));
          }
        } catch (e) {
          if (deadline?.expired) {
            error = `tool "${tool.name}" timed out after ${timeoutMs} ms`;
            outcome = 'timeout';
            retryable = true;
          } else {
            [error, outcome] = failure(tool, e, stop);
            retryable = outcome === 'error';
          }
        } finally {
          deadline?.clear();
        }
        // Stopped (an interrupt the handler ignored, then failed or ran out of time): no retry follows.
        if (stop?.aborted) retryable = false;
      }
      a = settleAttempt(this.filterAndDistribute, tool, ctx, result, error, outcome, retryable, startedAt, t0);
      if (attempts > 1 && a.retryable) a.error += ` (attempt ${n} of ${attempts})`;
      const execution = attemptRecord(tool, args, ctx, a, n, this.maxResultChars);
      this.append(execution);
      executions.push(execution);
      if (!a.retryable || n >= attempts || !(await backoff(retry!, n, stop))) break;
    }
    return this.complete(tool, args, ctx, call, a, executions);
  }

  /** The call is over: its result event and stream entry (when observed), and what the caller gets. */
  private complete(tool: RegisteredTool, args: unknown, ctx: DispatchContext, call: RoutedCall | undefined, a: Attempt, executions: ExecutionRecord[]): ToolDispatch {
    const isError = a.error !== undefined;
    const execution = executions[executions.length - 1]!;
    if (tool.routing === 'routed') {
      if (this.subject.observed) {
        this.routeEvent(`actor:${ctx.actorName}`, TOOL_RESULT + tool.name, { callId: ctx.callId, isError, result: isError ? a.error : a.llmView }, {
          sessionId: ctx.sessionId,
          private: tool.scope === 'specialist',
          turnId: ctx.turnId,
          callId: ctx.callId,
        });
      }
      if (this.results.observed) {
        const r: { -readonly [K in keyof RoutedResult]: RoutedResult[K] } = {
          call: call ?? routedCall(tool, args, ctx),
          isError,
          outcome: a.outcome,
          attempts: executions.length,
          view: isError ? a.error : a.llmView,
          execution,
        };
        // An error result carries no record: the model was told the call failed, so nothing
        // downstream (filterAndDistribute()) may deliver it as a success.
        if (a.record !== undefined && !isError && tool.scope === 'generalist') r.record = a.record;
        this.results.next(r);
      }
    }

    const dispatch: ToolDispatch = { callId: ctx.callId, llmContent: isError ? a.error! : a.llmContent, uiView: isError ? a.error : a.uiView, isError, execution, executions };
    if (a.data !== undefined && !isError) {
      dispatch.data = a.data;
      if (a.record?.dataKind !== undefined) dispatch.dataKind = a.record.dataKind;
    }
    return dispatch;
  }

  /** Appends one attempt's record to the execution sink; a failing sink is reported, never thrown. */
  private append(execution: ExecutionRecord): void {
    if (this.executionLog === undefined) return;
    try {
      this.executionLog.append(execution);
    } catch (e) {
      this.report(e, 'execution-log');
    }
  }

  /** Completes the event stream: observers are released, later events reach no one. */
  close(): void {
    this.subject.complete();
    this.calls.complete();
    this.results.complete();
  }

  private report(error: unknown, where: 'observer' | 'execution-log'): void {
    try {
      this.onError(error, where);
    } catch {
      // onError is the last resort; a throw here has nowhere else to go.
    }
  }
}

function routedCall(tool: RegisteredTool, args: unknown, ctx: DispatchContext): RoutedCall {
  return { sessionId: ctx.sessionId, turnId: ctx.turnId, callId: ctx.callId, actor: ctx.actorName, tool: tool.name, scope: tool.scope, args, private: tool.scope === 'specialist' };
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return (typeof x === 'object' || typeof x === 'function') && x !== null && typeof (x as PromiseLike<unknown>).then === 'function';
}

function defaultOnError(error: unknown, where: string): void {
  const msg = error instanceof Error ? error.message : String(error);
  process.emitWarning(`router ${where} failed: ${msg}`, { code: 'TURNSTATE_ROUTER_ERROR' });
}
