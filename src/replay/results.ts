/**
 * The tool results a replay serves: each call of the re-run gets the result its recorded call
 * returned, as final (no retry, no timeout around it), and the model reads exactly the recorded
 * text. Matched by call id (the recording's own model outputs) or by tool and the canonical JSON
 * of the arguments within the turn (another model); a call with no recorded result gets
 * NO_RESULT's text as an error result and is listed as unmatched.
 */
import { ToolErrorText } from '../router/attempt.js';
import type { Registries, ToolContext, ToolDefinition, ToolRegistryApi } from '../registries/types.js';
import type { ExecutionRecord, MailboxEntry } from '../types.js';
import type { Recording } from './recording.js';

/** JSON with every object's keys sorted: equal for arguments that differ only in key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, (_k, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const o = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
  });
}

/** The error result of a call the recording holds no result for (docs/concepts/replay.md). */
function noResultText(tool: string, turnId: string): string {
  return `replay: the recording holds no result for this call of ${tool} with these arguments in turn ${turnId}`;
}

export interface UnmatchedCall {
  turnId: string;
  tool: string;
  callId: string;
}

export interface ToolResultSource {
  /** The recorded result of this call of the re-run (a throw is an error result). */
  serve(tool: string, args: unknown, ctx: ToolContext): unknown;
  /** The recorded call whose result a call of the re-run gets (undefined: none). */
  recordedCall(tool: string, args: unknown, ctx: ToolContext): string | undefined;
  served: number;
  unmatched: UnmatchedCall[];
}

type ToolResultEntry = Extract<MailboxEntry, { kind: 'tool_result' }>;

/** The error text a recorded failure gave the model: the execution record's whole text, else the mailbox's. */
function recordedError(x: ExecutionRecord | undefined, shown: ToolResultEntry | undefined): string {
  if (x !== undefined && !x.resultTruncated) {
    try {
      const error = (JSON.parse(x.result) as { error?: unknown }).error;
      if (typeof error === 'string') return error;
    } catch {
      // Not the router's `{ error }` JSON: the model's view says what it was told.
    }
  }
  return shown?.content ?? x?.result ?? '';
}

export function recordedResults(rec: Recording, match: 'callId' | 'content'): ToolResultSource {
  // A retried call logs one record per attempt; its last one is what the call returned.
  const finals = new Map<string, ExecutionRecord>();
  for (const x of rec.executions) finals.set(x.callId, x);
  const shownOf = new Map<string, ToolResultEntry>();
  for (const m of rec.mailbox) if (m.kind === 'tool_result') shownOf.set(m.callId, m);
  // Under content matching: each recorded call serves one call of the re-run (by its id, whatever its attempts).
  const used = new Set<string>();
  /** Per call of the re-run, the recorded call it was given (a call is served once). */
  const chosen = new Map<string, string | undefined>();

  const pick = (tool: string, args: unknown, ctx: ToolContext): string | undefined => {
    if (chosen.has(ctx.callId)) return chosen.get(ctx.callId);
    let callId: string | undefined;
    if (match === 'callId') callId = finals.has(ctx.callId) || shownOf.has(ctx.callId) ? ctx.callId : undefined;
    else {
      const key = canonicalJson(args);
      for (const x of finals.values()) {
        if (x.turnId === ctx.turnId && x.tool === tool && !used.has(x.callId) && canonicalJson(x.args) === key) {
          callId = x.callId;
          break;
        }
      }
    }
    if (callId !== undefined) used.add(callId);
    chosen.set(ctx.callId, callId);
    return callId;
  };

  const src: ToolResultSource = {
    served: 0,
    unmatched: [],
    recordedCall: pick,
    serve(tool, args, ctx) {
      const callId = pick(tool, args, ctx);
      if (callId === undefined) {
        src.unmatched.push({ turnId: ctx.turnId, tool, callId: ctx.callId });
        throw new ToolErrorText(noResultText(tool, ctx.turnId));
      }
      src.served++;
      const x = finals.get(callId);
      // No execution record: a call whose outcome was reported unknown after a restart; the model's view holds it.
      const shown = shownOf.get(callId);
      if (x === undefined ? shown!.isError : x.isError) throw new ToolErrorText(recordedError(x, shown));
      if (x === undefined || x.resultTruncated) return shown?.content ?? x?.result;
      return JSON.parse(x.result) as unknown;
    },
  };
  return src;
}

/**
 * The registries as `setup` sees them: every tool registered gets `handler` in place of its own,
 * with no timeout and no retry policy (a served result is final: the recording's attempts are over).
 */
export function replayRegistries(registries: Registries, handler: (def: ToolDefinition) => (args: unknown, ctx: ToolContext) => unknown): Registries {
  const tools = new Proxy(registries.tools, {
    get(target, prop) {
      if (prop === 'register') {
        return (def: ToolDefinition) => {
          const { timeoutMs: _timeout, retry: _retry, ...rest } = def as ToolDefinition & { timeoutMs?: number; retry?: unknown };
          return target.register({ ...rest, handler: handler(def) } as ToolDefinition);
        };
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as ToolRegistryApi;
  return { ...registries, tools };
}
