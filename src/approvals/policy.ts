/**
 * Approval policies (spec 002 "HITL approval integration"), compiled once at tool registration.
 *
 * - `false` / `undefined`: no approval needed (`approve`, source 'none').
 * - `true`: always ask a human (source 'always').
 * - `{ autoApproveIf: "<CEL>" }`: parsed and type-checked at registration; evaluated over a pinned
 *   context where only `args` and `ctx` exist, in a child process (cel-sandbox.ts) under a time and
 *   heap budget, with `matches` on RE2, served in turn by tenant. bytes are refused at registration
 *   (outside the heap cap). An evaluation error's message is quoted, clipped, as the reason.
 *   `true` approves, `false` asks; anything else, an evaluation
 *   error, or input over the bounds asks with source 'cel-error'; an evaluation over its budget asks
 *   with source 'policy-budget'. Never approves on failure.
 * - a handler function: its verdict is used as given; a throw, a rejection, a timeout (an answer
 *   after the limit, synchronous ones included) or a malformed verdict asks with source 'handler-error'.
 *
 * No `eval`, no `new Function`: CEL is interpreted by @marcbachmann/cel-js.
 */
import { RegistrationError } from '../errors.js';
import { celEnvironment, compilePattern, rewriteMatches, RE2_MATCHES, type MatchesSite } from './cel-environment.js';
import { CelSandbox } from './cel-sandbox.js';
import { clipForEcho } from '../text.js';
import type { PolicyResult } from '../types.js';
import type { ApprovalHandler, ApprovalPolicy, ApprovalVerdict, CompiledApprovalPolicy, PolicyContext } from '../registries/types.js';

/** Bounds on expressions and on what they are evaluated over. */
export interface PolicyLimits {
  /** Characters in a CEL expression. */
  maxExpressionLength: number;
  /** AST nodes in a CEL expression. */
  maxAstNodes: number;
  /** Nesting depth of a CEL expression. */
  maxExpressionDepth: number;
  /** Macros (all, exists, map, filter, ...) nested inside each other. */
  maxMacroNesting: number;
  /** Values (objects, arrays, scalars) in args plus ctx.user and ctx.tenant. */
  maxInputNodes: number;
  /** Nesting depth of args. */
  maxInputDepth: number;
  /** Total characters of all strings and keys in the input. */
  maxInputChars: number;
  /** Milliseconds a handler may take before the policy asks instead. */
  handlerTimeoutMs: number;
  /** Milliseconds one CEL evaluation may run (in its worker) before the policy asks instead. */
  evaluationTimeoutMs: number;
  /** Heap (MB) of the worker CEL evaluations run in; an evaluation that exhausts it asks instead. */
  evaluationHeapMb: number;
  /**
   * Milliseconds one CEL evaluation may wait for a free evaluator (behind others') before the policy
   * asks instead; default `EVALUATION_QUEUE_FACTOR` × `evaluationTimeoutMs` (1,000 ms).
   */
  evaluationQueueMs?: number;
}

/** An evaluation waits for a free evaluator at most this many times its time budget, unless told. */
const EVALUATION_QUEUE_FACTOR = 5;

export const DEFAULT_POLICY_LIMITS: Readonly<PolicyLimits> = Object.freeze({
  maxExpressionLength: 4096,
  maxAstNodes: 1000,
  maxExpressionDepth: 32,
  maxMacroNesting: 2,
  maxInputNodes: 2000,
  maxInputDepth: 32,
  maxInputChars: 65_536,
  handlerTimeoutMs: 5000,
  evaluationTimeoutMs: 200,
  evaluationHeapMb: 64,
});

const NONE: PolicyResult = Object.freeze({ decision: 'approve', source: 'none' });
const ALWAYS: PolicyResult = Object.freeze({ decision: 'ask', source: 'always' });
const CEL_APPROVE: PolicyResult = Object.freeze({ decision: 'approve', source: 'cel' });
const CEL_ASK: PolicyResult = Object.freeze({ decision: 'ask', source: 'cel' });

/** UTF-16 units of a CEL error echoed in a policy's reason (the approver reads it). */
const MAX_ERROR_ECHO = 200;

const MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter', 'sortBy']);

/** Evaluation workers per heap budget; two, so one policy at its time limit does not hold up the others. */
const sandboxes = new Map<number, CelSandbox>();
function sandboxFor(heapMb: number): CelSandbox {
  let sandbox = sandboxes.get(heapMb);
  if (sandbox === undefined) {
    sandbox = new CelSandbox({ workers: 2, heapMb });
    sandboxes.set(heapMb, sandbox);
  }
  return sandbox;
}

/**
 * Terminates the policy evaluation processes (they are unref'd: only tests and embedders that
 * must not leak processes need this; the last open runtime's close() calls it). A later
 * evaluation starts a new pool.
 */
export async function closePolicyEvaluators(): Promise<void> {
  const all = [...sandboxes.values()];
  sandboxes.clear();
  await Promise.all(all.map((s) => s.close()));
}

/** Runtimes open in this process: the pool is shared, so the last one to close ends it. */
let users = 0;

/** A runtime uses the pool until the returned function is called (its close). */
export function usePolicyEvaluators(): () => Promise<void> {
  users++;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--users === 0) await closePolicyEvaluators();
  };
}

function fail(rule: string, toolName: string, message: string): never {
  throw new RegistrationError(rule, `tool '${toolName}': ${message}`, { tool: toolName });
}

function errorMessage(e: unknown): string {
  try {
    return e instanceof Error ? String(e.message) : String(e);
  } catch {
    return 'an error that could not be read';
  }
}

/* ------------------------------------------------------------------ expression checks */

type AstNode = { op: string; args: unknown };

function isNode(v: unknown): v is AstNode {
  return v !== null && typeof v === 'object' && typeof (v as AstNode).op === 'string';
}

/**
 * Walks the AST once: refuses a `matches` pattern that is not a literal or that RE2 cannot
 * compile, and macros nested deeper than the limit. Collects where each `matches` call sits.
 */
function checkAst(toolName: string, node: unknown, limits: PolicyLimits, macroDepth: number, sites: MatchesSite[]): void {
  if (Array.isArray(node)) {
    for (const n of node) checkAst(toolName, n, limits, macroDepth, sites);
    return;
  }
  if (!isNode(node)) return;
  const args = node.args;
  // A bytes value is a Buffer, whose memory lies outside the V8 heap --max-old-space-size caps: a
  // policy making them could hold gigabytes (bytes(args.s) in a two-deep map reached 1.9 GB).
  if (node.op === 'value' && args instanceof Uint8Array) {
    fail('tools:cel:bytes-unsupported', toolName, 'autoApproveIf may not use a bytes literal (b"..."): bytes values are not bounded by the evaluator\'s heap budget');
  }
  if ((node.op === 'rcall' || node.op === 'call') && Array.isArray(args)) {
    const name = args[0];
    // json() is a bytes method: no bytes can be made, and its plain objects are not the maps policies see.
    if (name === 'bytes' || (name === 'json' && node.op === 'rcall')) {
      fail('tools:cel:bytes-unsupported', toolName, `autoApproveIf may not call ${name}(): bytes values are not bounded by the evaluator's heap budget`);
    }
    if (name === 'matches') {
      const callArgs = node.op === 'rcall' ? args[2] : args[1];
      const pattern = Array.isArray(callArgs) ? callArgs[callArgs.length - 1] : undefined;
      if (!isNode(pattern) || pattern.op !== 'value' || typeof pattern.args !== 'string') {
        fail('tools:cel:regex-must-be-literal', toolName, 'matches() needs a string literal pattern in autoApproveIf; a pattern from args or ctx could be chosen to hang the evaluator');
      }
      try {
        compilePattern(pattern.args);
      } catch (e) {
        fail(
          'tools:cel:regex-unsupported',
          toolName,
          `the pattern ${JSON.stringify(pattern.args)} in autoApproveIf is not RE2 syntax (${errorMessage(e)}); matches() runs on RE2, which has no back-references or look-around`,
        );
      }
      const receiver = args[1];
      if (node.op === 'rcall' && isNode(receiver)) sites.push({ receiverEnd: (receiver as AstNode & { end: number }).end, argumentStart: (pattern as AstNode & { start: number }).start });
    }
    if (node.op === 'rcall' && typeof name === 'string' && MACROS.has(name)) {
      if (macroDepth + 1 > limits.maxMacroNesting) {
        fail(
          'tools:cel:macro-nesting',
          toolName,
          `autoApproveIf nests macros (all/exists/map/filter) more than ${limits.maxMacroNesting} deep; flatten the expression (the cost grows as the input size to that power)`,
        );
      }
      checkAst(toolName, args[1], limits, macroDepth, sites);
      checkAst(toolName, args[2], limits, macroDepth + 1, sites);
      return;
    }
  }
  checkAst(toolName, args, limits, macroDepth, sites);
}

/* ------------------------------------------------------------------ input bounds */

/**
 * Walks a value once, early-exiting at the first bound crossed. Returns a reason when the value
 * is over a bound or holds something that is not plain data, else undefined.
 */
function inputProblem(value: unknown, limits: PolicyLimits, budget: { nodes: number; chars: number }, depth: number, label: string): string | undefined {
  if (--budget.nodes < 0) return `${label} has more than ${limits.maxInputNodes} values`;
  switch (typeof value) {
    case 'string':
      budget.chars -= value.length;
      return budget.chars < 0 ? `${label} holds more than ${limits.maxInputChars} characters of text` : undefined;
    case 'number':
    case 'boolean':
    case 'bigint':
    case 'undefined':
      return undefined;
    case 'object':
      break;
    default:
      return `${label} holds a ${typeof value}, which is not data`;
  }
  if (value === null) return undefined;
  if (depth >= limits.maxInputDepth) return `${label} is nested deeper than ${limits.maxInputDepth} levels`;
  if (Array.isArray(value)) {
    if (value.length > budget.nodes) return `${label} has more than ${limits.maxInputNodes} values`;
    for (let i = 0; i < value.length; i++) {
      const p = inputProblem(value[i], limits, budget, depth + 1, label);
      if (p !== undefined) return p;
    }
    return undefined;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return `${label} holds a non-plain object, which is not data`;
  const keys = Object.keys(value);
  if (keys.length > budget.nodes) return `${label} has more than ${limits.maxInputNodes} values`;
  for (const k of keys) {
    budget.chars -= k.length;
    if (budget.chars < 0) return `${label} holds more than ${limits.maxInputChars} characters of text`;
    const p = inputProblem((value as Record<string, unknown>)[k], limits, budget, depth + 1, label);
    if (p !== undefined) return p;
  }
  return undefined;
}

/** The only names a CEL expression can see. Copies just the documented fields of ctx. */
function pinnedContext(ctx: PolicyContext | undefined): PolicyContext {
  const c = ctx ?? ({} as Partial<PolicyContext>);
  const session: PolicyContext['session'] = { id: typeof c.session?.id === 'string' ? c.session.id : '' };
  if (typeof c.session?.tenantId === 'string') session.tenantId = c.session.tenantId;
  const tenant: PolicyContext['tenant'] = {};
  if (typeof c.tenant?.id === 'string') tenant.id = c.tenant.id;
  return {
    actor: typeof c.actor === 'string' ? c.actor : '',
    session,
    turn: { id: typeof c.turn?.id === 'string' ? c.turn.id : '' },
    user: c.user !== null && typeof c.user === 'object' ? c.user : {},
    tenant,
  };
}

/* ------------------------------------------------------------------ compile */

function compileCel(toolName: string, expression: unknown, allowStandingApproval: boolean, limits: PolicyLimits): CompiledApprovalPolicy {
  if (typeof expression !== 'string' || expression.trim() === '') {
    fail('tools:cel:expression-required', toolName, 'requiresApproval.autoApproveIf must be a non-empty CEL expression string, e.g. "args.totalCost < 50"');
  }
  if (expression.length > limits.maxExpressionLength) {
    fail('tools:cel:expression-too-long', toolName, `autoApproveIf is ${expression.length} characters; the limit is ${limits.maxExpressionLength}`);
  }
  // The runtime's own name for matches() on RE2: called directly, its pattern could come from args.
  if (expression.includes(RE2_MATCHES)) fail('tools:cel:reserved-name', toolName, `autoApproveIf may not name ${RE2_MATCHES}; use matches("<pattern>")`);
  const env = celEnvironment(limits);
  let program: ReturnType<ReturnType<typeof celEnvironment>['parse']>;
  try {
    program = env.parse(expression);
  } catch (e) {
    fail('tools:cel:syntax-error-fails-registration', toolName, `autoApproveIf does not parse as CEL: ${errorMessage(e)}`);
  }
  const checked = env.check(expression);
  if (!checked.valid) {
    fail(
      'tools:cel:type-error-fails-registration',
      toolName,
      `autoApproveIf does not type-check (only 'args' and 'ctx' exist): ${checked.error ? errorMessage(checked.error) : 'invalid expression'}`,
    );
  }
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    fail('tools:cel:must-return-bool', toolName, `autoApproveIf must yield a bool, but it yields ${String(checked.type)}; compare it, e.g. "size(args.items) < 5"`);
  }
  const sites: MatchesSite[] = [];
  checkAst(toolName, program.ast, limits, 0, sites);
  let runnable = expression;
  try {
    if (sites.length > 0) runnable = rewriteMatches(expression, sites);
  } catch (e) {
    fail('tools:cel:matches-call', toolName, `autoApproveIf: ${errorMessage(e)}; write the call as <receiver>.matches("<pattern>")`);
  }
  const shape = { maxAstNodes: limits.maxAstNodes, maxExpressionDepth: limits.maxExpressionDepth };
  sandboxFor(limits.evaluationHeapMb).warm();

  const evaluate = async (args: unknown, ctx: PolicyContext): Promise<PolicyResult> => {
    let pinned: PolicyContext;
    let problem: string | undefined;
    try {
      pinned = pinnedContext(ctx);
      const budget = { nodes: limits.maxInputNodes, chars: limits.maxInputChars };
      problem = inputProblem(args, limits, budget, 0, 'args') ?? inputProblem(pinned.user, limits, budget, 1, 'ctx.user');
    } catch (e) {
      return { decision: 'ask', source: 'cel-error', reason: `not evaluated: ${errorMessage(e)}` };
    }
    if (problem !== undefined) {
      return { decision: 'ask', source: 'cel-error', reason: `not evaluated: ${problem}` };
    }
    // Looked up per evaluation: after closePolicyEvaluators() a new, closable pool is made.
    // Waiting evaluations are served in turn by tenant (by session without one): one tenant's slow
    // policies do not hold up another's.
    const key = pinned.tenant.id ?? pinned.session.tenantId;
    const out = await sandboxFor(limits.evaluationHeapMb).evaluate({
      expression: runnable,
      shape,
      args,
      ctx: pinned,
      timeoutMs: limits.evaluationTimeoutMs,
      key: key === undefined ? `session:${pinned.session.id}` : `tenant:${key}`,
      queueLimitMs: limits.evaluationQueueMs ?? EVALUATION_QUEUE_FACTOR * limits.evaluationTimeoutMs,
    });
    if ('budget' in out) return { decision: 'ask', source: 'policy-budget', reason: `autoApproveIf not decided: ${out.budget}` };
    // The error may quote model-chosen text (a missing key): clipped and quoted, never the runtime's own words.
    if ('error' in out) return { decision: 'ask', source: 'cel-error', reason: `autoApproveIf failed: ${JSON.stringify(clipForEcho(out.error, MAX_ERROR_ECHO))}` };
    if (out.value === true) return CEL_APPROVE;
    if (out.value === false) return CEL_ASK;
    return { decision: 'ask', source: 'cel-error', reason: `autoApproveIf yielded ${out.value}, not a bool` };
  };
  return Object.freeze({ kind: 'cel', expression, allowStandingApproval, evaluate });
}

function handlerError(reason: string): PolicyResult {
  return { decision: 'ask', source: 'handler-error', reason };
}

function fromVerdict(v: unknown): PolicyResult {
  if (v === null || typeof v !== 'object') return handlerError(`approval handler returned ${v === null ? 'null' : typeof v}, not { decision }`);
  const verdict = v as Partial<ApprovalVerdict>;
  const decision: unknown = verdict.decision;
  if (decision !== 'approve' && decision !== 'deny' && decision !== 'ask') {
    return handlerError(`approval handler returned decision ${JSON.stringify(decision) ?? 'undefined'}; expected 'approve', 'deny' or 'ask'`);
  }
  if (verdict.reason !== undefined && typeof verdict.reason !== 'string') {
    return handlerError('approval handler returned a non-string reason');
  }
  return verdict.reason === undefined ? { decision, source: 'handler' } : { decision, source: 'handler', reason: verdict.reason };
}

/** `fromVerdict` for an answer that may throw when read (a getter, a Proxy): reading it fails as asking. */
function readVerdict(v: unknown): PolicyResult {
  try {
    return fromVerdict(v);
  } catch (e) {
    return handlerError(`approval handler's answer could not be read: ${errorMessage(e)}`);
  }
}

function compileHandler(handler: ApprovalHandler, allowStandingApproval: boolean, limits: PolicyLimits): CompiledApprovalPolicy {
  const evaluate = (args: unknown, ctx: PolicyContext): PolicyResult | Promise<PolicyResult> => {
    let out: unknown;
    let then: unknown;
    let t0 = 0;
    try {
      // A copy: what the handler does to its args never reaches the call a human approves or the tool runs.
      const input = structuredClone(args);
      const pinned = pinnedContext(ctx);
      t0 = performance.now();
      out = handler(input, pinned);
      then = out !== null && typeof out === 'object' ? (out as { then?: unknown }).then : undefined;
    } catch (e) {
      return handlerError(`approval handler threw: ${errorMessage(e)}`);
    }
    // Synchronous work runs on the event loop and cannot be interrupted (a backtracking regex): an
    // answer that comes after the limit, timed rather than raced (a blocked loop runs no timer), is not taken.
    const late = (): PolicyResult | undefined => {
      const took = performance.now() - t0;
      return took > limits.handlerTimeoutMs ? handlerError(`approval handler did not answer within ${limits.handlerTimeoutMs} ms (it took ${Math.round(took)} ms)`) : undefined;
    };
    if (typeof then !== 'function') return late() ?? readVerdict(out);
    return new Promise<PolicyResult>((resolve) => {
      let settled = false;
      const settle = (r: PolicyResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const timer = setTimeout(
        () => settle(handlerError(`approval handler did not answer within ${limits.handlerTimeoutMs} ms`)),
        Math.max(0, limits.handlerTimeoutMs - (performance.now() - t0)),
      );
      timer.unref?.();
      try {
        (then as (ok: (v: unknown) => void, no: (e: unknown) => void) => unknown).call(
          out,
          (v) => settle(late() ?? readVerdict(v)),
          (e) => settle(handlerError(`approval handler rejected: ${errorMessage(e)}`)),
        );
      } catch (e) {
        settle(handlerError(`approval handler's answer could not be read: ${errorMessage(e)}`));
      }
    });
  };
  return Object.freeze({ kind: 'handler', allowStandingApproval, evaluate });
}

/**
 * Compiles a tool's `requiresApproval` once. Throws a RegistrationError naming the tool when the
 * policy is malformed (a CEL syntax or type error, an unsafe regex, an over-long expression).
 * The returned `evaluate` never throws.
 */
export function compileApprovalPolicy(
  toolName: string,
  requiresApproval: ApprovalPolicy | undefined,
  allowStandingApproval?: boolean,
  limits: PolicyLimits = DEFAULT_POLICY_LIMITS,
): CompiledApprovalPolicy {
  if (allowStandingApproval !== undefined && typeof allowStandingApproval !== 'boolean') {
    fail('tools:approval:allowStandingApproval-boolean', toolName, 'allowStandingApproval must be a boolean');
  }
  if (requiresApproval === undefined || requiresApproval === false) {
    return Object.freeze({ kind: 'none', allowStandingApproval: allowStandingApproval ?? true, evaluate: () => NONE });
  }
  if (requiresApproval === true) {
    return Object.freeze({ kind: 'always', allowStandingApproval: allowStandingApproval ?? true, evaluate: () => ALWAYS });
  }
  if (typeof requiresApproval === 'function') {
    return compileHandler(requiresApproval, allowStandingApproval ?? true, limits);
  }
  if (requiresApproval !== null && typeof requiresApproval === 'object' && !Array.isArray(requiresApproval)) {
    const p = requiresApproval as { autoApproveIf?: unknown; allowStandingApproval?: unknown };
    for (const key of Object.keys(p)) {
      if (key !== 'autoApproveIf' && key !== 'allowStandingApproval') {
        fail('tools:approval:invalid', toolName, `requiresApproval.${key} is not a policy field; use { autoApproveIf: "<CEL>", allowStandingApproval? }`);
      }
    }
    if (p.allowStandingApproval !== undefined && typeof p.allowStandingApproval !== 'boolean') {
      fail('tools:approval:allowStandingApproval-boolean', toolName, 'requiresApproval.allowStandingApproval must be a boolean');
    }
    // Given in both places it must agree: else one place's "never pre-approve" would silently lose.
    if (allowStandingApproval !== undefined && p.allowStandingApproval !== undefined && allowStandingApproval !== p.allowStandingApproval) {
      fail(
        'tools:approval:allowStandingApproval-conflict',
        toolName,
        `allowStandingApproval is ${allowStandingApproval} on the tool but requiresApproval.allowStandingApproval is ${String(p.allowStandingApproval)}; say it in one place (or give both the same value)`,
      );
    }
    const standing = allowStandingApproval ?? (p.allowStandingApproval as boolean | undefined) ?? true;
    return compileCel(toolName, p.autoApproveIf, standing, limits);
  }
  fail(
    'tools:approval:invalid',
    toolName,
    'requiresApproval must be false, true, { autoApproveIf: "<CEL expression>" } or a handler function (args, ctx) => { decision }',
  );
}
