/**
 * The tool results a replay serves: each call of the re-run gets the result its recorded call
 * returned, as final (no retry, no timeout around it), and the model reads exactly the recorded
 * text. Matched by call id (the recording's own model outputs) or by tool and the canonical JSON
 * of the arguments within the turn (another model); a call with no recorded result gets
 * NO_RESULT's text as an error result and is listed as unmatched.
 */
import { CUT_NOTE, forModel } from '../host/tool-results.js';
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

/**
 * What to serve for a model view the host cut (toolResultMaxChars) so that the re-run's host,
 * which cuts whatever a handler returns, gives the model the recorded text again rather than
 * cutting the recorded cut a second time: the whole text the view was cut from, which the
 * recorded `tool.result` event holds when its view is that text (a plain result, an error), else
 * the shown start padded to the recorded length (what the model never read is not recorded).
 * Undefined when `shown` was not cut. Cut the same way only under the recorded toolResultMaxChars.
 */
function uncut(shown: string, view: { value: unknown } | undefined): string | undefined {
  const m = CUT_NOTE.exec(shown);
  if (!m) return undefined;
  const total = Number(m[1]);
  const end = Number(m[2]);
  if (m.index !== end || !(total > end)) return undefined;
  const head = shown.slice(0, end);
  // The host cut at its limit, or one short of it before a surrogate pair.
  const cutsTo = (text: string): boolean => forModel(text, end) === shown || forModel(text, end + 1) === shown;
  if (view !== undefined) {
    let text: string | undefined;
    try {
      text = typeof view.value === 'string' ? view.value : (JSON.stringify(view.value) as string | undefined);
    } catch {
      text = undefined;
    }
    if (text !== undefined && text.length === total && text.startsWith(head) && cutsTo(text)) return text;
  }
  // A pair (U+10000) first: the host never cuts a surrogate pair in two, so a text it cut one
  // short of its limit (before a pair) is cut there again, and one cut at its limit still is.
  const rest = total - end;
  const padded = head + (rest >= 2 ? '\u{10000}' + ' '.repeat(rest - 2) : ' ');
  return cutsTo(padded) ? padded : undefined;
}

/** The error text a recorded failure gave the model: the execution record's whole text, else the mailbox's. */
function recordedError(x: ExecutionRecord | undefined, shown: ToolResultEntry | undefined, view: { value: unknown } | undefined): string {
  if (x !== undefined && !x.resultTruncated) {
    try {
      const error = (JSON.parse(x.result) as { error?: unknown }).error;
      if (typeof error === 'string') return error;
    } catch {
      // Not the router's `{ error }` JSON: the model's view says what it was told.
    }
  }
  if (shown !== undefined) return uncut(shown.content, view) ?? shown.content;
  return x?.result ?? '';
}

/**
 * A recorded call's key: its turn and its id. A tool_use id is unique within its turn's
 * conversation, not across turns (a script's fixed `id`, a counter that restarted).
 */
const callKey = (turnId: string, callId: string): string => `${turnId}\n${callId}`;

export function recordedResults(rec: Recording, match: 'callId' | 'content'): ToolResultSource {
  // A retried call logs one record per attempt; its last one is what the call returned.
  const finals = new Map<string, ExecutionRecord>();
  for (const x of rec.executions) finals.set(callKey(x.turnId, x.callId), x);
  const shownOf = new Map<string, ToolResultEntry>();
  for (const m of rec.mailbox) if (m.kind === 'tool_result') shownOf.set(callKey(m.turnId, m.callId), m);
  // The tool.result event's view (the ui-stream view, or the error text): the whole of what the model's view may have cut.
  const viewOf = new Map<string, { value: unknown }>();
  for (const e of rec.events) if (e.type === 'tool.result' && !e.denial) viewOf.set(callKey(e.turnId, e.callId), { value: e.view });
  // Calls with a result the model read but no execution record: an outcome reported unknown after
  // a restart or a failed write (never a denial: it is answered, not served). Content matching takes their arguments
  // from their tool.called.
  const unlogged: { callId: string; turnId: string; tool: string; args: unknown }[] = [];
  if (match === 'content') {
    for (const e of rec.events) {
      if (e.type !== 'tool.called' || e.side === 'client') continue;
      const key = callKey(e.turnId, e.callId);
      if (!finals.has(key) && shownOf.has(key) && viewOf.has(key)) {
        unlogged.push({ callId: e.callId, turnId: e.turnId, tool: e.tool, args: e.args });
      }
    }
  }
  // Under content matching: each recorded call serves one call of the re-run (by its turn and id, whatever its attempts).
  const used = new Set<string>();
  /** Per call of the re-run (its turn and id), the recorded call it was given (a call is served once). */
  const chosen = new Map<string, string | undefined>();

  const pick = (tool: string, args: unknown, ctx: ToolContext): string | undefined => {
    const self = callKey(ctx.turnId, ctx.callId);
    if (chosen.has(self)) return chosen.get(self);
    let callId: string | undefined;
    if (match === 'callId') callId = finals.has(self) || shownOf.has(self) ? ctx.callId : undefined;
    else {
      const key = canonicalJson(args);
      for (const x of [...finals.values(), ...unlogged]) {
        if (x.turnId === ctx.turnId && x.tool === tool && !used.has(callKey(x.turnId, x.callId)) && canonicalJson(x.args) === key) {
          callId = x.callId;
          break;
        }
      }
    }
    // The recorded call is of the re-run's turn (both matchings).
    if (callId !== undefined) used.add(callKey(ctx.turnId, callId));
    chosen.set(self, callId);
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
      const key = callKey(ctx.turnId, callId);
      const x = finals.get(key);
      // No execution record: a call whose outcome was reported unknown (after a restart or a failed write); the model's view holds it.
      const shown = shownOf.get(key);
      const view = viewOf.get(key);
      if (x === undefined ? shown!.isError : x.isError) throw new ToolErrorText(recordedError(x, shown, view));
      if (x === undefined || x.resultTruncated) return shown === undefined ? x?.result : (uncut(shown.content, view) ?? shown.content);
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
