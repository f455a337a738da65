/**
 * The child process approval-policy CEL runs in (see cel-sandbox.ts). One request at a time:
 * `{ id, expression, shape, args, ctx }` in, `{ id, value }` (true, false, or a description of
 * a non-bool) or `{ id, error }` out. Programs are parsed once per expression.
 *
 * Before it evaluates a request the child records that it received it (the pool sends again, once,
 * a request whose child was gone before receiving it): the request's id written over the start of
 * the receipt file the pool passes as a descriptor (`--receipt-fd <n>`), which costs no message and
 * wakes nobody; without one, or once writing it fails, the id as a message.
 */
import { writeSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { celEnvironment, type CelShapeLimits } from './cel-environment.js';
import { RECEIPT_BYTES, RECEIPT_FD_ARG } from './cel-protocol.js';

export interface CelRequest {
  id: number;
  /** The policy's expression with `matches` already renamed (rewriteMatches). */
  expression: string;
  shape: CelShapeLimits;
  args: unknown;
  ctx: unknown;
}

/** `retire`: the child's heap is past half its limit; it exits after this reply and takes no more requests. */
export type CelReply = ({ id: number; value: boolean | string } | { id: number; error: string }) & { retire?: true };

/** What the evaluator sends: 'ready' once loaded; per request its reply (and its id first when it has no receipt file). */
export type CelMessage = 'ready' | number | CelReply;

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

/**
 * The input as CEL values the interpreter can type: every plain object becomes a Map (arrays are
 * copied). cel-js reads a value's type from `value.constructor`, which an object's own field named
 * `constructor` (a JSON key like any other) would hide: `{"q":"x","constructor":"ACME"}` made every
 * policy fail ("Unsupported type"). A Map's entries are not properties, so no key can shadow what the
 * interpreter reads; cel-js treats a Map as a CEL map (field access, `has`, `in`, `size`, macros, ==).
 * The input was bounded before it was sent (policy.ts: nodes, depth, characters).
 */
export function celValue(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = celValue(v[i]);
    return out;
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return v;
  const out = new Map<string, unknown>();
  for (const k of Object.keys(v)) out.set(k, celValue((v as Record<string, unknown>)[k]));
  return out;
}

export function evaluateRequest(req: CelRequest): CelReply {
  try {
    const result = program(req)({ args: celValue(req.args), ctx: celValue(req.ctx) });
    return { id: req.id, value: typeof result === 'boolean' ? result : describe(result) };
  } catch (e) {
    return { id: req.id, error: summary(e) };
  }
}

if (process.send !== undefined) {
  const at = process.argv.indexOf(RECEIPT_FD_ARG);
  let receiptFd = at < 0 ? undefined : Number(process.argv[at + 1]);
  const receipt = new Float64Array(1);
  const receiptBytes = new Uint8Array(receipt.buffer);
  process.on('message', (req: CelRequest) => {
    // The receipt, before anything of the request runs.
    if (receiptFd !== undefined) {
      receipt[0] = req.id;
      try {
        writeSync(receiptFd, receiptBytes, 0, RECEIPT_BYTES, 0);
      } catch {
        receiptFd = undefined;
      }
    }
    if (receiptFd === undefined) process.send!(req.id);
    const reply = evaluateRequest(req);
    // cel-js caches every runtime type it names, for good (a module-global registry): model-chosen
    // shapes grow it until an innocent evaluation runs out of heap. A heap past half its limit after
    // an evaluation retires this process: the reply says so (the pool sends it nothing more and
    // starts its replacement) and the process exits once the reply is on its way.
    const h = getHeapStatistics();
    if (h.used_heap_size > h.heap_size_limit / 2) process.send!({ ...reply, retire: true }, () => process.exit(0));
    else process.send!(reply);
  });
  // The server went away: so does its evaluator.
  process.on('disconnect', () => process.exit(0));
  process.send('ready');
}
