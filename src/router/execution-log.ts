/**
 * The execution log: one ExecutionRecord per tool call, routed or bypass (spec 002
 * `specialist_execution`; generalist calls are logged the same way as `generalist_execution`).
 * Builders and truncation used by the router, plus an in-memory sink.
 */
import type { ExecutionOutcome, ExecutionRecord, Routing, Scope } from '../types.js';
import { pairSafeEnd } from '../text.js';

/** Default cap on the JSON of a logged result, in UTF-16 code units. */
export const DEFAULT_RESULT_MAX_CHARS = 8192;

/** JSON text of `value`; never throws (`undefined` -> `null`, unserialisable -> a JSON string saying why). */
export function toJsonText(value: unknown): string {
  try {
    const s = JSON.stringify(value);
    return s === undefined ? 'null' : s;
  } catch (e) {
    let why: string;
    try {
      why = e instanceof Error ? String(e.message) : String(e);
    } catch {
      why = 'an error that cannot be read'; // what toJSON() threw has no text either
    }
    return JSON.stringify(`[unserialisable: ${why}]`);
  }
}

/**
 * Cuts JSON text to at most `maxChars` (never splitting a surrogate pair). A truncated
 * result is no longer valid JSON; `resultTruncated` says so.
 */
export function truncateJson(json: string, maxChars: number): { result: string; resultTruncated: boolean } {
  checkMax(maxChars);
  if (json.length <= maxChars) return { result: json, resultTruncated: false };
  return { result: cut(json, maxChars), resultTruncated: true };
}

/** The first `maxChars` code units of `json` (one fewer if that would split a surrogate pair); `maxChars` already checked. */
function cut(json: string, maxChars: number): string {
  return json.slice(0, pairSafeEnd(json, maxChars));
}

/** The logged form of a result: its JSON text, cut to `maxChars`. */
export function truncateResult(value: unknown, maxChars: number): { result: string; resultTruncated: boolean } {
  return truncateJson(toJsonText(value), maxChars);
}

function checkMax(maxChars: number): void {
  if (!Number.isInteger(maxChars) || maxChars < 0) {
    throw new RangeError(`result max chars must be a non-negative integer, got ${String(maxChars)}`);
  }
}

let lastMs = Number.NaN;
let lastIso = '';
/** ISO timestamp of an epoch-ms time; cached per millisecond. */
export function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

export interface ExecutionInput {
  sessionId: string;
  turnId: string;
  actor: string;
  tool: string;
  callId: string;
  args: unknown;
  /** JSON text of the result (already serialised; truncated here). */
  resultJson: string;
  isError: boolean;
  durationMs: number;
  /** Epoch ms when the call started. */
  startedAt: number;
  scope: Scope;
  routing: Routing;
  bypassReason?: string | undefined;
  approvalId?: string | undefined;
  maxResultChars: number;
  /** Default 1. */
  attempt?: number;
  /** Default `error` when isError, else `ok`. */
  outcome?: ExecutionOutcome;
}

/** One ExecutionRecord with every spec 002 field, plus `attempt` and `outcome`; `bypassReason` iff routing is bypass. */
export function buildExecutionRecord(input: ExecutionInput): ExecutionRecord {
  checkMax(input.maxResultChars);
  const tool = { name: input.tool, scope: input.scope, routing: input.routing, bypassReason: input.bypassReason };
  const call = { sessionId: input.sessionId, turnId: input.turnId, actorName: input.actor, callId: input.callId };
  return executionRecordOf(
    tool,
    call,
    input.args,
    input.resultJson,
    input.isError,
    input.durationMs,
    input.startedAt,
    input.approvalId,
    input.maxResultChars,
    input.attempt ?? 1,
    input.outcome ?? (input.isError ? 'error' : 'ok'),
  );
}

/**
 * The one place an ExecutionRecord is written, from the call's tool and context as they are (the
 * router's hot path passes its RegisteredTool and DispatchContext: no input object per call).
 * `maxResultChars` is trusted here (the router checked it once).
 */
export function executionRecordOf(
  tool: { readonly name: string; readonly scope: Scope; readonly routing: Routing; readonly bypassReason?: string | undefined },
  call: { readonly sessionId: string; readonly turnId: string; readonly actorName: string; readonly callId: string },
  args: unknown,
  resultJson: string,
  isError: boolean,
  durationMs: number,
  startedAt: number,
  approvalId: string | undefined,
  maxResultChars: number,
  attempt: number,
  outcome: ExecutionOutcome,
): ExecutionRecord {
  const truncated = resultJson.length > maxResultChars;
  const record: ExecutionRecord = {
    kind: tool.scope === 'specialist' ? 'specialist_execution' : 'generalist_execution',
    sessionId: call.sessionId,
    turnId: call.turnId,
    actor: call.actorName,
    tool: tool.name,
    callId: call.callId,
    args,
    result: truncated ? cut(resultJson, maxResultChars) : resultJson,
    resultTruncated: truncated,
    isError,
    durationMs,
    at: isoAt(startedAt),
    scope: tool.scope,
    routing: tool.routing,
    attempt,
    outcome,
  };
  if (tool.routing === 'bypass') record.bypassReason = tool.bypassReason ?? '';
  if (approvalId !== undefined) record.approvalId = approvalId;
  return record;
}

/** Where the router appends records (the runtime commits them with the step; tests read them back). */
export interface ExecutionSink {
  append(record: ExecutionRecord): void;
}

/** An in-memory execution log, optionally bounded (oldest records dropped first). */
export class MemoryExecutionLog implements ExecutionSink {
  private records: ExecutionRecord[] = [];
  constructor(private readonly capacity = Number.POSITIVE_INFINITY) {}

  append(record: ExecutionRecord): void {
    this.records.push(record);
    if (this.records.length > this.capacity) this.records.splice(0, this.records.length - this.capacity);
  }

  list(filter: { sessionId?: string | undefined; actor?: string | undefined; tool?: string | undefined; kind?: ExecutionRecord['kind'] | undefined } = {}): ExecutionRecord[] {
    return this.records.filter(
      (r) =>
        (filter.sessionId === undefined || r.sessionId === filter.sessionId) &&
        (filter.actor === undefined || r.actor === filter.actor) &&
        (filter.tool === undefined || r.tool === filter.tool) &&
        (filter.kind === undefined || r.kind === filter.kind),
    );
  }

  get size(): number {
    return this.records.length;
  }

  clear(): void {
    this.records = [];
  }
}
