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
 */
import { Subject, type Subscription } from 'rxjs';
import { TurnstateError } from '../errors.js';
import type { RegisteredTool, ToolContext, ToolHandler } from '../registries/types.js';
import type { ExecutionRecord } from '../types.js';
import { isAnnotatedRecord } from './annotated.js';
import { buildExecutionRecord, DEFAULT_RESULT_MAX_CHARS, toJsonText, type ExecutionSink } from './execution-log.js';
import { FilterAndDistribute, filterView } from './filter-distribute.js';

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
  private?: boolean;
  turnId?: string;
  callId?: string;
}

/**
 * What an observer wants. All given criteria must match. Without `sessionId` an observer sees
 * every session's public events and no private ones.
 */
export interface ObserveFilter {
  /** Exact type, or a pattern such as /^tool_call:/. */
  type?: string | RegExp;
  source?: string;
  sessionId?: string;
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
  execution: ExecutionRecord;
}

export interface EventRouterOptions {
  /** Destinations for AnnotatedRecord results; a fresh one (built-ins only) by default. */
  filterAndDistribute?: FilterAndDistribute;
  /** Cap on the logged result JSON (default 8192). */
  maxResultChars?: number;
  /** Receives every ExecutionRecord as it is made. */
  executionLog?: ExecutionSink;
  /** Epoch-ms clock for `at` (default Date.now). */
  now?: () => number;
  /** Failures of observers and of the execution sink. Default: a process warning. */
  onError?(error: unknown, where: 'observer' | 'execution-log'): void;
}

const TOOL_CALL = 'tool_call:';
const TOOL_RESULT = 'tool_result:';

class Cancelled extends Error {}

export class EventRouter {
  readonly filterAndDistribute: FilterAndDistribute;
  private readonly subject = new Subject<RoutedEvent>();
  private readonly handlers = new Map<string, ToolHandler>();
  private readonly maxResultChars: number;
  private readonly executionLog: ExecutionSink | undefined;
  private readonly now: () => number;
  private readonly onError: (error: unknown, where: 'observer' | 'execution-log') => void;

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

  /** Runs one tool call per spec 002; resolves with its outcome, never rejects. */
  async dispatchTool(tool: RegisteredTool, args: unknown, ctx: ToolContext): Promise<ToolDispatch> {
    const startedAt = this.now();
    const t0 = performance.now();
    const routed = tool.routing === 'routed';
    const isPrivate = tool.scope === 'specialist';
    let handler = tool.handler;
    if (routed) {
      if (this.subject.observed) {
        this.routeEvent(`actor:${ctx.actorName}`, TOOL_CALL + tool.name, args, {
          sessionId: ctx.sessionId,
          private: isPrivate,
          turnId: ctx.turnId,
          callId: ctx.callId,
        });
      }
      handler = this.handlers.get(tool.name) ?? handler;
    }

    let result: unknown;
    let error: string | undefined;
    if (ctx.signal?.aborted) {
      error = `tool "${tool.name}" was cancelled before it ran`;
    } else {
      try {
        result = handler(args, ctx);
        if (isThenable(result)) result = await (ctx.signal ? raceAbort(result, ctx.signal) : result);
      } catch (e) {
        error =
          e instanceof Cancelled ? `tool "${tool.name}" was cancelled` : `tool "${tool.name}" failed: ${errorMessage(e)}`;
      }
    }

    let llmView: unknown;
    let uiView: unknown;
    let data: unknown;
    let dataKind: string | undefined;
    let llmContent = '';
    let logJson: string | undefined;
    if (error === undefined) {
      try {
        if (isAnnotatedRecord(result)) {
          error = this.checkOutput(tool, result.data);
          if (error === undefined) {
            if (tool.scope === 'generalist') {
              const { views } = this.filterAndDistribute.distribute(result, {
                sessionId: ctx.sessionId,
                turnId: ctx.turnId,
                actor: ctx.actorName,
                tool: tool.name,
                callId: ctx.callId,
                scope: tool.scope,
                ...(result.dataKind === undefined ? {} : { dataKind: result.dataKind }),
              });
              llmView = views.get('llm-session');
              uiView = views.get('ui-stream');
            } else {
              // Specialist: annotations are honoured, but nothing is distributed beyond the caller.
              llmView = filterView(result, 'llm-session');
              uiView = filterView(result, 'ui-stream');
            }
            data = filterView(result, 'peer-response');
            dataKind = result.dataKind;
          }
        } else {
          error = this.checkOutput(tool, result);
          llmView = uiView = result;
          if (typeof result === 'object' && result !== null) data = result;
        }
        if (error === undefined) {
          if (typeof llmView === 'string') llmContent = llmView;
          else {
            try {
              llmContent = JSON.stringify(llmView) ?? 'null';
              if (llmView === result) logJson = llmContent;
            } catch (e) {
              error = `tool "${tool.name}" returned a result that is not JSON-serialisable: ${errorMessage(e)}`;
              data = undefined;
            }
          }
        } else {
          logJson = toJsonText({ error, result });
        }
      } catch (e) {
        // A malformed AnnotatedRecord or a failing validator: still a result, never a rejection.
        error = `tool "${tool.name}" returned a result that could not be processed: ${errorMessage(e)}`;
      }
    }
    const isError = error !== undefined;
    if (isError) {
      llmContent = error!;
      uiView = error;
      data = undefined;
      logJson ??= toJsonText({ error });
    }

    const execution = buildExecutionRecord({
      sessionId: ctx.sessionId,
      turnId: ctx.turnId,
      actor: ctx.actorName,
      tool: tool.name,
      callId: ctx.callId,
      args,
      resultJson: logJson ?? toJsonText(result),
      isError,
      durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
      startedAt,
      scope: tool.scope,
      routing: tool.routing,
      bypassReason: tool.bypassReason,
      approvalId: ctx.approvalDecision?.approvalId,
      maxResultChars: this.maxResultChars,
    });
    if (this.executionLog !== undefined) {
      try {
        this.executionLog.append(execution);
      } catch (e) {
        this.report(e, 'execution-log');
      }
    }

    if (routed && this.subject.observed) {
      this.routeEvent(`actor:${ctx.actorName}`, TOOL_RESULT + tool.name, { callId: ctx.callId, isError, result: isError ? error : llmView }, {
        sessionId: ctx.sessionId,
        private: isPrivate,
        turnId: ctx.turnId,
        callId: ctx.callId,
      });
    }

    const dispatch: ToolDispatch = { callId: ctx.callId, llmContent, uiView, isError, execution };
    if (data !== undefined) {
      dispatch.data = data;
      if (dataKind !== undefined) dispatch.dataKind = dataKind;
    }
    return dispatch;
  }

  /** Completes the event stream: observers are released, later events reach no one. */
  close(): void {
    this.subject.complete();
  }

  private checkOutput(tool: RegisteredTool, value: unknown): string | undefined {
    if (tool.outputSchema === undefined) return undefined;
    const violations = tool.validateOutput(value);
    if (violations.length === 0) return undefined;
    const list = violations.map(violationText).join('; ');
    return `tool "${tool.name}" returned output that does not match its outputSchema: ${list}`;
  }

  private report(error: unknown, where: 'observer' | 'execution-log'): void {
    try {
      this.onError(error, where);
    } catch {
      // onError is the last resort; a throw here has nowhere else to go.
    }
  }
}

/** A violation as text; messages that already lead with their location are kept as they are. */
function violationText(v: { path: string; message: string }): string {
  return v.message.startsWith('/') || v.message.startsWith('(root)') ? v.message : `${v.path === '' ? '(root)' : v.path}: ${v.message}`;
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return (typeof x === 'object' || typeof x === 'function') && x !== null && typeof (x as PromiseLike<unknown>).then === 'function';
}

function raceAbort(p: PromiseLike<unknown>, signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new Cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  return toJsonText(e);
}

function defaultOnError(error: unknown, where: string): void {
  const msg = error instanceof Error ? error.message : String(error);
  process.emitWarning(`router ${where} failed: ${msg}`, { code: 'TURNSTATE_ROUTER_ERROR' });
}
