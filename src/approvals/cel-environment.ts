/**
 * The one CEL environment approval policies are checked and evaluated in, on the main thread
 * (registration) and in the evaluation worker alike.
 *
 * Only `args` and `ctx` are declared. CEL's `matches` runs on RE2 (re2js, linear time in the
 * input), never on the JavaScript RegExp engine, whose backtracking is polynomial or exponential
 * in the input for patterns as plain as `[a-z]*[a-z]*q`. cel-js cannot replace a built-in
 * overload, so a policy's `x.matches("…")` calls are renamed in its source to the RE2 method
 * (`rewriteMatches`) before it is handed to the worker.
 */
import { Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';

/** Limits the parser applies to an expression's shape. */
export interface CelShapeLimits {
  maxAstNodes: number;
  maxExpressionDepth: number;
}

/** The CEL method `matches` is renamed to in a policy's source. Not part of the policy language. */
export const RE2_MATCHES = '__turnstate_re2_matches';

/** Compiled patterns by source; every pattern a policy names is compiled once at registration. */
const patterns = new Map<string, RE2JS>();
const MAX_CACHED_PATTERNS = 1024;

/** Compiles a pattern with RE2 (throws re2js's syntax error for what RE2 does not support). */
export function compilePattern(pattern: string): RE2JS {
  let re = patterns.get(pattern);
  if (re === undefined) {
    re = RE2JS.compile(pattern);
    if (patterns.size >= MAX_CACHED_PATTERNS) patterns.clear();
    patterns.set(pattern, re);
  }
  return re;
}

const environments = new Map<string, Environment>();

/** The environment for these shape limits (one per distinct limits; environments hold no state). */
export function celEnvironment(limits: CelShapeLimits): Environment {
  const key = `${limits.maxAstNodes}/${limits.maxExpressionDepth}`;
  let env = environments.get(key);
  if (env === undefined) {
    env = new Environment({
      unlistedVariablesAreDyn: false,
      limits: { maxAstNodes: limits.maxAstNodes, maxDepth: limits.maxExpressionDepth, maxListElements: 1000, maxMapEntries: 1000, maxCallArguments: 32 },
    })
      .registerVariable('args', 'dyn')
      .registerVariable('ctx', 'dyn')
      .registerFunction(`string.${RE2_MATCHES}(string): bool`, (s: string, pattern: string) => compilePattern(pattern).test(s));
    environments.set(key, env);
  }
  return env;
}

/** Where a `matches` method name sits in a policy's source: the offsets of the name. */
export interface MatchesSite {
  /** Offset of the receiver's end (the name follows a `.`). */
  receiverEnd: number;
  /** Offset of the first argument's start (the name precedes a `(`). */
  argumentStart: number;
}

/**
 * The expression with each `matches` method call (located by the parser's offsets) renamed to
 * the RE2 method. Sites are independent of each other's offsets: they are rewritten back to front.
 */
export function rewriteMatches(expression: string, sites: readonly MatchesSite[]): string {
  let out = expression;
  for (const site of [...sites].sort((a, b) => b.receiverEnd - a.receiverEnd)) {
    const between = out.slice(site.receiverEnd, site.argumentStart);
    const at = matchesNameAt(between);
    if (at === undefined) throw new Error(`cannot locate the matches call at offset ${site.receiverEnd}`);
    out = out.slice(0, site.receiverEnd) + between.slice(0, at) + RE2_MATCHES + between.slice(at + 'matches'.length) + out.slice(site.argumentStart);
  }
  return out;
}

/**
 * Where the name `matches` starts in the source between a receiver's end and the call's first
 * argument: what may stand there is the receiver's closing parentheses, `.`, the name, `(`, with
 * whitespace and `//` comments anywhere between them.
 */
function matchesNameAt(between: string): number | undefined {
  let i = 0;
  const skip = (): void => {
    for (;;) {
      while (i < between.length && /\s/.test(between[i]!)) i++;
      if (!between.startsWith('//', i)) return;
      const nl = between.indexOf('\n', i);
      i = nl < 0 ? between.length : nl + 1;
    }
  };
  skip();
  while (between[i] === ')') {
    i++;
    skip();
  }
  if (between[i] !== '.') return undefined;
  i++;
  skip();
  if (!between.startsWith('matches', i)) return undefined;
  const at = i;
  i += 'matches'.length;
  skip();
  if (between[i] !== '(') return undefined;
  i++;
  skip();
  return i === between.length ? at : undefined;
}
