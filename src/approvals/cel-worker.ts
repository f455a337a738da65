/**
 * The child process approval-policy CEL runs in (see cel-sandbox.ts). One request at a time:
 * `{ id, expression, shape, args, ctx }` in, `{ id, value }` (true, false, or a description of
 * a non-bool) or `{ id, error }` out. Programs are parsed once per expression.
 */
import { celEnvironment, type CelShapeLimits } from './cel-environment.js';

export interface CelRequest {
  id: number;
  /** The policy's expression with `matches` already renamed (rewriteMatches). */
  expression: string;
  shape: CelShapeLimits;
  args: unknown;
  ctx: unknown;
}

export type CelReply = { id: number; value: boolean | string } | { id: number; error: string };

type Program = (vars: Record<string, unknown>) => unknown;
const programs = new Map<string, Program>();
const MAX_PROGRAMS = 512;

function program(req: CelRequest): Program {
  const key = `${req.shape.maxAstNodes}/${req.shape.maxExpressionDepth}:${req.expression}`;
  let p = programs.get(key);
  if (p === undefined) {
    p = celEnvironment(req.shape).parse(req.expression) as Program;
    if (programs.size >= MAX_PROGRAMS) programs.clear();
    programs.set(key, p);
  }
  return p;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object' && typeof (v as { then?: unknown }).then === 'function') return 'a promise';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a map' : `a ${typeof v}`;
}

/** A CEL error's one-line summary (its message also carries a source excerpt for humans). */
function summary(e: unknown): string {
  const s = (e as { summary?: unknown } | null)?.summary;
  if (typeof s === 'string' && s !== '') return s;
  const message = e instanceof Error ? e.message : String(e);
  return message.split('\n', 1)[0] ?? 'evaluation failed';
}

export function evaluateRequest(req: CelRequest): CelReply {
  try {
    const result = program(req)({ args: req.args, ctx: req.ctx });
    return { id: req.id, value: typeof result === 'boolean' ? result : describe(result) };
  } catch (e) {
    return { id: req.id, error: summary(e) };
  }
}

if (process.send !== undefined) {
  process.on('message', (req: CelRequest) => {
    process.send!(evaluateRequest(req));
  });
  // The server went away: so does its evaluator.
  process.on('disconnect', () => process.exit(0));
  process.send('ready');
}
