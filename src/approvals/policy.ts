/**
 * Approval policies (spec 002 "HITL approval integration"), compiled once at tool registration.
 *
 * - `false` / `undefined`: no approval needed (`approve`, source 'none').
 * - `true`: always ask a human (source 'always').
 * - `{ autoApproveIf: "<CEL>" }`: parsed and type-checked at registration; evaluated over a pinned
 *   context where only `args` and `ctx` exist. `true` approves, `false` asks; anything else,
 *   an evaluation error, or input over the bounds asks with source 'cel-error'. Never approves on failure.
 * - a handler function: its verdict is used as given; a throw, a rejection, a timeout or a
 *   malformed verdict asks with source 'handler-error'.
 *
 * No `eval`, no `new Function`: CEL is interpreted by @marcbachmann/cel-js.
 */
import { Environment } from '@marcbachmann/cel-js';
import { RegistrationError } from '../errors.js';
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
}

export const DEFAULT_POLICY_LIMITS: Readonly<PolicyLimits> = Object.freeze({
  maxExpressionLength: 4096,
  maxAstNodes: 1000,
  maxExpressionDepth: 32,
  maxMacroNesting: 2,
  maxInputNodes: 2000,
  maxInputDepth: 32,
  maxInputChars: 65_536,
  handlerTimeoutMs: 5000,
});

const NONE: PolicyResult = Object.freeze({ decision: 'approve', source: 'none' });
const ALWAYS: PolicyResult = Object.freeze({ decision: 'ask', source: 'always' });
const CEL_APPROVE: PolicyResult = Object.freeze({ decision: 'approve', source: 'cel' });
const CEL_ASK: PolicyResult = Object.freeze({ decision: 'ask', source: 'cel' });

const MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter', 'sortBy']);

let sharedEnv: Environment | undefined;
/** One CEL environment for all policies: only `args` and `ctx` are declared. It holds no state. */
function celEnvironment(limits: PolicyLimits): Environment {
  const isDefault =
    limits.maxAstNodes === DEFAULT_POLICY_LIMITS.maxAstNodes && limits.maxExpressionDepth === DEFAULT_POLICY_LIMITS.maxExpressionDepth;
  if (isDefault && sharedEnv) return sharedEnv;
  const env = new Environment({
    unlistedVariablesAreDyn: false,
    limits: { maxAstNodes: limits.maxAstNodes, maxDepth: limits.maxExpressionDepth, maxListElements: 1000, maxMapEntries: 1000, maxCallArguments: 32 },
  })
    .registerVariable('args', 'dyn')
    .registerVariable('ctx', 'dyn');
  if (isDefault) sharedEnv = env;
  return env;
}

function fail(rule: string, toolName: string, message: string): never {
  throw new RegistrationError(rule, `tool '${toolName}': ${message}`, { tool: toolName });
}

function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** A CEL error's one-line summary (its message also carries a source excerpt for humans). */
function celErrorSummary(e: unknown): string {
  const summary = (e as { summary?: unknown } | null)?.summary;
  if (typeof summary === 'string' && summary !== '') return summary;
  return errorMessage(e).split('\n', 1)[0] ?? 'evaluation failed';
}

/* ------------------------------------------------------------------ expression checks */

type AstNode = { op: string; args: unknown };

function isNode(v: unknown): v is AstNode {
  return v !== null && typeof v === 'object' && typeof (v as AstNode).op === 'string';
}

/**
 * A regex is refused when a repeated group itself repeats or alternates (`(a+)+`, `(a|a)*`),
 * or when it uses a back-reference: the shapes that backtrack exponentially on crafted input.
 */
export function unsafeRegexReason(pattern: string): string | undefined {
  if (/\\[1-9]|\\k</.test(pattern)) return 'back-references are not allowed';
  // Per open group: does it contain a quantifier or an alternation?
  const stack: boolean[] = [];
  let lastGroupRisky = false;
  let afterGroup = false;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    const wasAfterGroup = afterGroup;
    afterGroup = false;
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      inClass = true;
      continue;
    }
    if (c === '(') {
      stack.push(false);
      continue;
    }
    if (c === ')') {
      lastGroupRisky = stack.pop() ?? false;
      if (stack.length > 0 && lastGroupRisky) stack[stack.length - 1] = true;
      afterGroup = true;
      continue;
    }
    const quantifier = c === '*' || c === '+' || c === '{';
    if (quantifier || c === '|') {
      if (stack.length > 0) stack[stack.length - 1] = true;
    }
    if (quantifier && wasAfterGroup && lastGroupRisky) {
      return 'a repeated group contains a quantifier or an alternation (catastrophic backtracking)';
    }
  }
  return undefined;
}

function checkAst(toolName: string, node: unknown, limits: PolicyLimits, macroDepth: number): void {
  if (Array.isArray(node)) {
    for (const n of node) checkAst(toolName, n, limits, macroDepth);
    return;
  }
  if (!isNode(node)) return;
  const args = node.args;
  if ((node.op === 'rcall' || node.op === 'call') && Array.isArray(args)) {
    const name = args[0];
    if (name === 'matches') {
      const callArgs = node.op === 'rcall' ? args[2] : args[1];
      const pattern = Array.isArray(callArgs) ? callArgs[callArgs.length - 1] : undefined;
      if (!isNode(pattern) || pattern.op !== 'value' || typeof pattern.args !== 'string') {
        fail('tools:cel:regex-must-be-literal', toolName, 'matches() needs a string literal pattern in autoApproveIf; a pattern from args or ctx could be chosen to hang the evaluator');
      }
      const why = unsafeRegexReason(pattern.args);
      if (why !== undefined) fail('tools:cel:unsafe-regex', toolName, `the pattern ${JSON.stringify(pattern.args)} in autoApproveIf is refused: ${why}; rewrite it without nested repetition`);
    }
    if (node.op === 'rcall' && typeof name === 'string' && MACROS.has(name)) {
      if (macroDepth + 1 > limits.maxMacroNesting) {
        fail(
          'tools:cel:macro-nesting',
          toolName,
          `autoApproveIf nests macros (all/exists/map/filter) more than ${limits.maxMacroNesting} deep; flatten the expression (the cost grows as the input size to that power)`,
        );
      }
      checkAst(toolName, args[1], limits, macroDepth);
      checkAst(toolName, args[2], limits, macroDepth + 1);
      return;
    }
  }
  checkAst(toolName, args, limits, macroDepth);
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
  const env = celEnvironment(limits);
  let program: ReturnType<Environment['parse']>;
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
  checkAst(toolName, program.ast, limits, 0);

  const evaluate = (args: unknown, ctx: PolicyContext): PolicyResult => {
    try {
      const pinned = pinnedContext(ctx);
      const budget = { nodes: limits.maxInputNodes, chars: limits.maxInputChars };
      const problem =
        inputProblem(args, limits, budget, 0, 'args') ??
        inputProblem(pinned.user, limits, budget, 1, 'ctx.user');
      if (problem !== undefined) {
        return { decision: 'ask', source: 'cel-error', reason: `not evaluated: ${problem}` };
      }
      const result: unknown = program({ args, ctx: pinned });
      if (result === true) return CEL_APPROVE;
      if (result === false) return CEL_ASK;
      return {
        decision: 'ask',
        source: 'cel-error',
        reason: `autoApproveIf yielded ${describeValue(result)}, not a bool`,
      };
    } catch (e) {
      return { decision: 'ask', source: 'cel-error', reason: celErrorSummary(e) };
    }
  };
  return Object.freeze({ kind: 'cel', expression, allowStandingApproval, evaluate });
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object' && typeof (v as { then?: unknown }).then === 'function') return 'a promise';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a map' : `a ${typeof v}`;
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

function compileHandler(handler: ApprovalHandler, allowStandingApproval: boolean, limits: PolicyLimits): CompiledApprovalPolicy {
  const evaluate = (args: unknown, ctx: PolicyContext): PolicyResult | Promise<PolicyResult> => {
    let out: unknown;
    try {
      out = handler(args, pinnedContext(ctx));
    } catch (e) {
      return handlerError(`approval handler threw: ${errorMessage(e)}`);
    }
    if (out === null || typeof out !== 'object' || typeof (out as { then?: unknown }).then !== 'function') return fromVerdict(out);
    return new Promise<PolicyResult>((resolve) => {
      const timer = setTimeout(() => resolve(handlerError(`approval handler did not answer within ${limits.handlerTimeoutMs} ms`)), limits.handlerTimeoutMs);
      timer.unref?.();
      (out as Promise<unknown>).then(
        (v) => {
          clearTimeout(timer);
          resolve(fromVerdict(v));
        },
        (e: unknown) => {
          clearTimeout(timer);
          resolve(handlerError(`approval handler rejected: ${errorMessage(e)}`));
        },
      );
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
    const standing = allowStandingApproval ?? (p.allowStandingApproval as boolean | undefined) ?? true;
    return compileCel(toolName, p.autoApproveIf, standing, limits);
  }
  fail(
    'tools:approval:invalid',
    toolName,
    'requiresApproval must be false, true, { autoApproveIf: "<CEL expression>" } or a handler function (args, ctx) => { decision }',
  );
}
