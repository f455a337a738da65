/**
 * What one attempt of a tool call becomes once its handler has answered (or not): the views per
 * destination, the output check, the model's text, and the attempt's ExecutionRecord. Nothing
 * here throws: a malformed result, a failing validator or an unserialisable value is an error
 * result. The handler's run itself stays in `EventRouter` (no await for a handler that answers at once).
 */
// The module's binding, not the global: on Node 20 `globalThis.performance` is a getter (about
// 15 ns a read here); a routed call read it twice, and the two reads cost 5-10% of the call.
import { performance } from 'node:perf_hooks';
import type { RegisteredTool } from '../registries/types.js';
import type { ExecutionOutcome, ExecutionRecord } from '../types.js';
import { isAnnotatedRecord, type AnnotatedRecord } from './annotated.js';
import { Cancelled } from './call-limits.js';
import type { DispatchContext } from './dispatch-context.js';
import { executionRecordOf, toJsonText } from './execution-log.js';
import { filterView, type Distribution, type FilterAndDistribute } from './filter-distribute.js';

/** One attempt's outcome, before it is logged. */
export interface Attempt {
  result: unknown;
  error: string | undefined;
  outcome: ExecutionOutcome;
  /** A thrown or rejected handler, or a timeout: an idempotent tool may be run again. */
  retryable: boolean;
  llmView: unknown;
  uiView: unknown;
  data: unknown;
  record: AnnotatedRecord | undefined;
  llmContent: string;
  logJson: string | undefined;
  /** Epoch ms from the router's clock (the runtime's injected `now`): the record's `at`. */
  startedAt: number;
  /** Measured (performance.now), never injected: the one field a clock option does not fix. */
  durationMs: number;
}

/**
 * Processes one attempt's outcome (views, output check, serialisation); never throws. A
 * generalist AnnotatedRecord is distributed through `fad` once its llm-session view has
 * serialised (a result the model is told failed is distributed to no one); a specialist's is
 * filtered for the caller only.
 */
export function settleAttempt(
  fad: FilterAndDistribute,
  tool: RegisteredTool,
  ctx: DispatchContext,
  result: unknown,
  error: string | undefined,
  outcome: ExecutionOutcome,
  retryable: boolean,
  startedAt: number,
  t0: number,
): Attempt {
  let llmView: unknown;
  let uiView: unknown;
  let data: unknown;
  let record: AnnotatedRecord | undefined;
  let llmContent = '';
  let logJson: string | undefined;
  let distribution: Distribution | undefined;
  if (error === undefined) {
    try {
      if (isAnnotatedRecord(result)) {
        error = checkOutput(tool, result.data);
        if (error === undefined) {
          record = result;
          if (tool.scope === 'generalist') {
            distribution = fad.viewsOf(result);
            llmView = distribution.views.get('llm-session');
            uiView = distribution.views.get('ui-stream');
          } else {
            // Specialist: annotations are honoured, but nothing is distributed beyond the caller.
            llmView = filterView(result, 'llm-session');
            uiView = filterView(result, 'ui-stream');
          }
          data = filterView(result, 'peer-response');
        }
      } else {
        error = checkOutput(tool, result);
        llmView = uiView = result;
        if (typeof result === 'object' && result !== null) data = result;
      }
      if (error === undefined) {
        if (typeof llmView === 'string') llmContent = llmView;
        else {
          try {
            const json = JSON.stringify(llmView) as string | undefined;
            // No JSON at all: `null` when nothing was returned or nothing is visible (undefined);
            // a function, a symbol, or a toJSON() that returns nothing cannot be serialised.
            if (json === undefined && llmView !== undefined) {
              error = `tool "${tool.name}" returned a result that is not JSON-serialisable: ${typeof llmView === 'object' ? 'its toJSON() returns nothing' : `a ${typeof llmView} has no JSON form`}`;
            } else {
              llmContent = json ?? 'null';
              if (llmView === result) logJson = llmContent;
            }
          } catch (e) {
            error = `tool "${tool.name}" returned a result that is not JSON-serialisable: ${errorMessage(e)}`;
          }
        }
        // An AnnotatedRecord: what else is persisted must serialise too, before anything is
        // distributed: the ui-stream view (the tool.result event), the peer-response view (the
        // mailbox's data record) and the whole record (the execution log; its JSON is reused there).
        // A plain result is its own views: the llm-session view's JSON above covered them.
        if (error === undefined && record !== undefined) {
          const notJson = persistedJson(record, llmView, uiView, data);
          if (typeof notJson === 'string') logJson = notJson;
          else error = `tool "${tool.name}" returned a result that is not JSON-serialisable: ${notJson.what}: ${notJson.why}`;
        }
        if (error === undefined && distribution !== undefined) {
          const r = result as AnnotatedRecord;
          fad.send(distribution, {
            sessionId: ctx.sessionId,
            turnId: ctx.turnId,
            actor: ctx.actorName,
            tool: tool.name,
            callId: ctx.callId,
            scope: tool.scope,
            ...(r.dataKind === undefined ? {} : { dataKind: r.dataKind }),
          });
        }
      } else {
        logJson = toJsonText({ error, result });
      }
    } catch (e) {
      // A malformed AnnotatedRecord or a failing validator: still a result, never a rejection.
      error = `tool "${tool.name}" returned a result that could not be processed: ${errorMessage(e)}`;
    }
    if (error !== undefined) outcome = 'error';
  }
  return {
    result,
    error,
    outcome,
    retryable,
    llmView,
    uiView,
    data,
    record,
    llmContent,
    logJson,
    startedAt,
    durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
  };
}

/**
 * Checks that the persisted views of an AnnotatedRecord other than the llm-session one (already
 * serialised) have JSON, the whole record last. A view identical to one already checked, or
 * nothing visible (`undefined`), costs nothing. Returns the record's JSON (no object is made
 * when everything serialises), or what failed and why.
 */
function persistedJson(record: AnnotatedRecord, llmView: unknown, uiView: unknown, data: unknown): string | { what: string; why: string } {
  let what = 'its ui-stream view';
  try {
    if (uiView !== llmView) mustHaveJson(uiView);
    what = 'its peer-response view';
    if (data !== llmView && data !== uiView) mustHaveJson(data);
    what = 'the whole record (kept by the execution log)';
    const json = JSON.stringify(record) as string | undefined;
    if (json === undefined) return { what, why: 'its toJSON() returns nothing' };
    return json;
  } catch (e) {
    return { what, why: errorMessage(e) };
  }
}

/** Throws when a visible view has no JSON text (a BigInt, a cycle, a throwing toJSON(); a function or symbol). */
function mustHaveJson(view: unknown): void {
  if (view === undefined || view === null || typeof view === 'string' || typeof view === 'number' || typeof view === 'boolean') return;
  if ((JSON.stringify(view) as string | undefined) === undefined) {
    throw new Error(typeof view === 'object' ? 'its toJSON() returns nothing' : `a ${typeof view} has no JSON form`);
  }
}

/** One attempt's ExecutionRecord (its result JSON capped at `maxResultChars`). */
export function attemptRecord(tool: RegisteredTool, args: unknown, ctx: DispatchContext, a: Attempt, attempt: number, maxResultChars: number): ExecutionRecord {
  const isError = a.error !== undefined;
  const json = a.logJson ?? toJsonText(isError ? { error: a.error } : a.result);
  return executionRecordOf(tool, ctx, args, json, isError, a.durationMs, a.startedAt, ctx.approvalDecision?.approvalId, maxResultChars, attempt, a.outcome);
}

/**
 * A thrown value as message text, keeping what it says; never throws (a revoked Proxy or a
 * throwing `message` getter is no message). An Error is its message, or its name when the message
 * is empty (`class RateLimitError extends Error` thrown bare); a symbol or a bigint its String()
 * (`Symbol(rate limited)`, `5`); `undefined` says so; anything else is its JSON.
 */
export function errorMessage(e: unknown): string {
  switch (typeof e) {
    case 'string':
      return e;
    case 'undefined':
      return 'threw undefined';
    case 'symbol':
    case 'bigint':
      return String(e);
  }
  try {
    if (e instanceof Error) {
      const message = String(e.message);
      return message !== '' ? message : String(e.name);
    }
  } catch {
    return 'an error that cannot be read';
  }
  return toJsonText(e);
}

function checkOutput(tool: RegisteredTool, value: unknown): string | undefined {
  if (tool.outputSchema === undefined) return undefined;
  const violations = tool.validateOutput(value);
  if (violations.length === 0) return undefined;
  const list = violations.map(violationText).join('; ');
  return `tool "${tool.name}" returned output that does not match its outputSchema: ${list}`;
}

/** A violation as text; messages that already lead with their location are kept as they are. */
function violationText(v: { path: string; message: string }): string {
  return v.message.startsWith('/') || v.message.startsWith('(root)') ? v.message : `${v.path === '' ? '(root)' : v.path}: ${v.message}`;
}

/**
 * Thrown by a handler whose message is the call's whole error text, as the model is to read it
 * (no `tool "<name>" failed: ` before it). Replay serves a recorded failure with one, so the
 * re-run's model reads exactly what the recorded one did.
 */
export class ToolErrorText extends Error {}

/**
 * What a handler's throw or rejection means: cancelled, or failed. Cancelled is the router's own
 * stop (the cancel signal raced, `Cancelled`), or a handler that honoured its aborted signal: it
 * threw the signal's reason (or an error caused by it), an `AbortError` or a `TimeoutError`. A
 * handler that ignored its signal and failed for a reason of its own failed (its message counts).
 */
export function failure(tool: RegisteredTool, e: unknown, stop: AbortSignal | undefined): [string, ExecutionOutcome] {
  if (isToolErrorText(e)) return [e.message, 'error'];
  if (isCancellation(e, stop)) return [`tool "${tool.name}" was cancelled`, 'cancelled'];
  return [`tool "${tool.name}" failed: ${errorMessage(e)}`, 'error'];
}

/** Never throws: a thrown object that cannot be inspected (a revoked Proxy) is none. */
function isToolErrorText(e: unknown): e is ToolErrorText {
  try {
    return e instanceof ToolErrorText;
  } catch {
    return false;
  }
}

/** The router's own stop, or a rejection that answers the aborted signal: its reason, an error caused by it, an AbortError or a TimeoutError. */
function isCancellation(e: unknown, stop: AbortSignal | undefined): boolean {
  if (typeof e !== 'object' || e === null) return stop?.aborted === true && e === stop.reason;
  try {
    if (e instanceof Cancelled) return true;
    if (stop?.aborted !== true) return false;
    const reason: unknown = stop.reason;
    if (e === reason) return true;
    const name = (e as { name?: unknown }).name;
    return name === 'AbortError' || name === 'TimeoutError' || (reason !== undefined && (e as { cause?: unknown }).cause === reason);
  } catch {
    // A thrown object that cannot be inspected (a revoked Proxy) is no answer to the signal.
    return false;
  }
}
