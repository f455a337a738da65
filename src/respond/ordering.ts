/**
 * respond()'s ordering rules over one model response (docs/concepts/respond.md):
 * - `respond:json:invalid`: arguments that are not JSON are rejected, never guessed at;
 * - `respond:json:duplicate-key`: a key twice in one object is rejected (its deltas showed both values);
 * - `respond:suspended:runtime-only`: the runtime enters `suspended` itself;
 * - `respond:state-change:last-call`: a call that ends, holds or hands off the turn is the last
 *   call of its response (no tool use and no further respond() after it);
 * - `respond:state-change:once`: one state change per response; the first wins.
 *
 * A call that keeps the actor working (progress: ack, thinking, a partial answer) applies as soon
 * as its block completes; a state change waits for the response's end, where it must still be the
 * last word. Rejections use the parser's message format.
 *
 * Spec 003 compatibility (`compat`): mark_work_complete is the state change and respond_to_user the
 * progress call. Spec 003 runs every call of a response, so a respond_to_user after
 * mark_work_complete in the same response still counts (the completion applies at the response's
 * end and delivers the last draft); the other two rules hold, refused in spec 003's result form.
 */
import type { ActorDefinition, LiveSurfaceView, TurnStateRegistryApi } from '../registries/types.js';
import type { ToolUseBlock } from '../types.js';
import { compatRejection } from './compat.js';
import { RespondRule, rejection, type RespondParser } from './parse.js';
import type { RespondResult } from './types.js';

type Accepted = Extract<RespondResult, { ok: true }>;

export function rejectCall(rule: string, path: string, message: string): RespondResult {
  return rejection([{ rule, path, message }]);
}

/** Parse one respond() block under the per-call rules (invalid JSON, runtime-only states). */
export function parseRespondBlock(
  parser: RespondParser,
  b: ToolUseBlock,
  actor: ActorDefinition,
  session: { sessionId: string; tenantId?: string; surfaces?: LiveSurfaceView | undefined },
): RespondResult {
  if (b.duplicateKey !== undefined) {
    return rejectCall(
      RespondRule.jsonDuplicateKey,
      b.duplicateKey,
      'this key appears twice in one object (the stream showed both values); send the whole call again naming each key once',
    );
  }
  if (b.inputError) {
    return rejectCall(RespondRule.jsonInvalid, '', `the arguments were not valid JSON (${b.inputError}); send the whole call again`);
  }
  const r = parser.parse(b.input, { actor: actor.name, handoffs: actor.handoffs ?? [], ...session });
  if (r.ok && r.call.turnState === 'suspended') {
    return rejectCall(
      RespondRule.suspendedRuntimeOnly,
      '/turnState',
      'the runtime enters "suspended" itself when a tool call needs approval; call the tool and declare "awaiting"',
    );
  }
  return r;
}

/** One respond() (or compatibility) call of a response, in arrival order. */
export interface OrderedCall {
  block: ToolUseBlock;
  result: RespondResult;
  /** The tool result the model reads for an accepted call. */
  content: string;
  /** Applied as its block completed (a progress call). */
  now: boolean;
}

/** The ordering rules applied to one model response as its calls arrive. */
export class ResponseOrder {
  readonly calls: OrderedCall[] = [];

  constructor(
    private readonly turnStates: TurnStateRegistryApi,
    /** The response's actor speaks spec 003's tools (see the header). */
    private readonly compat = false,
  ) {}

  /** A declared state that keeps the actor working: its parts apply at once. */
  isProgress(turnState: string): boolean {
    const def = this.turnStates.get(turnState);
    return !!def && !def.meta.isTerminal && !def.meta.handsOff && !def.meta.holdsActor;
  }

  /** A call as its block completes; `now` says whether it applies at once. */
  add(block: ToolUseBlock, result: RespondResult, content: string): OrderedCall {
    if (!this.compat && result.ok && this.isProgress(result.call.turnState) && this.calls.some((c) => c.result.ok && !this.isProgress(c.result.call.turnState))) {
      result = rejectCall(
        RespondRule.stateChangeLastCall,
        '/turnState',
        'an earlier respond() call in this response ended or handed off the turn; it must be the last call of its response',
      );
    }
    const call: OrderedCall = { block, result, content, now: result.ok && this.isProgress(result.call.turnState) };
    this.calls.push(call);
    return call;
  }

  /**
   * At the response's end: each deferred state change is checked against the response's tool
   * uses and the other changes. Returns the change that applies, if any, and how many calls were
   * rejected in all.
   */
  finish(toolUses: readonly ToolUseBlock[]): { change?: OrderedCall & { result: Accepted }; rejected: number } {
    let change: (OrderedCall & { result: Accepted }) | undefined;
    let rejected = 0;
    for (const c of this.calls) {
      const r = c.result;
      if (r.ok && !c.now) {
        const to = r.call.turnState;
        const handsOff = this.turnStates.get(to)?.meta.handsOff;
        if (toolUses.length > 0 && this.compat) {
          const names = toolUses.map((u) => u.name).join(', ');
          c.result = compatRejection(
            RespondRule.stateChangeLastCall,
            `${c.block.name} ends the turn, so it must be the last call of its response, but this response also calls ${names}. Nothing was completed: call ${c.block.name} again once you have their results.`,
          );
        } else if (toolUses.length > 0) {
          c.result = rejectCall(
            RespondRule.stateChangeLastCall,
            '/turnState',
            `turnState "${to}" ${handsOff ? 'hands the turn off' : 'ends the turn'}, so it must be the only call in its model response, but this response also calls ${toolUses.map((u) => u.name).join(', ')}. Call the tools with turnState "awaiting" first; respond with "${to}" after their results.`,
          );
        } else if (change && this.compat) {
          c.result = compatRejection(RespondRule.stateChangeOnce, `${c.block.name} was already called in this response; only the first counts`);
        } else if (change) {
          c.result = rejectCall(RespondRule.stateChangeOnce, '/turnState', `only one respond() call per model response may change the turn state; "${change.result.call.turnState}" came first`);
        } else change = c as OrderedCall & { result: Accepted };
      }
      if (!c.result.ok) rejected++;
    }
    return change ? { change, rejected } : { rejected };
  }

  /** The calls a cut response had already applied (its progress calls). */
  applied(): OrderedCall[] {
    return this.calls.filter((c) => c.now);
  }

  /** The calls that will become parts: the accepted ones. */
  accepted(): OrderedCall[] {
    return this.calls.filter((c) => c.result.ok);
  }
}
