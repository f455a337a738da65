/**
 * ownArgs: the copy of a call's arguments one handler attempt is given, so that a handler that
 * changes its `args` changes its copy only: not what the model sent (the assistant message later
 * requests carry), nor the `tool.called` event, the `calls$` entry, the execution records, or
 * what a retried attempt receives.
 *
 * Arguments are JSON data (the model's, validated against the tool's inputSchema), so the copy is
 * of plain objects and arrays, not a structured clone: `{ ...v }` per object (V8's fast path) costs
 * about 20 ns for a small argument object where `structuredClone` costs about 0.5 us, more than
 * the rest of a routed call. Anything else (a class instance, a Map, a Date, a function: only a
 * direct `dispatchTool` caller can pass one) is handed over as it is. A value that is not an object
 * costs one `typeof`. Cycles and shared references are copied as such past a few levels of nesting
 * (JSON has neither); arguments that cannot be read (a revoked Proxy) are passed as they are, for
 * the handler to fail on.
 */

/** Nesting below which no map of copied objects is kept (JSON arguments are rarely deeper). */
const SHALLOW = 32;

export function ownArgs(args: unknown): unknown {
  if (typeof args !== 'object' || args === null) return args;
  try {
    return copy(args, 0, undefined);
  } catch {
    return args;
  }
}

function copy(v: object, depth: number, seen: Map<object, object> | undefined): object {
  if (depth >= SHALLOW) {
    seen ??= new Map();
    const done = seen.get(v);
    if (done !== undefined) return done;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto === Array.prototype) {
    const a = (v as unknown[]).slice();
    seen?.set(v, a);
    for (let i = 0; i < a.length; i++) {
      const x = a[i];
      if (typeof x === 'object' && x !== null) a[i] = copy(x, depth + 1, seen);
    }
    return a;
  }
  if (proto !== Object.prototype && proto !== null) return v;
  // Own enumerable properties, `__proto__` included as data (a spread defines, never sets, them).
  const o: Record<string, unknown> = proto === null ? Object.assign(Object.create(null) as Record<string, unknown>, v) : { ...v };
  seen?.set(v, o);
  for (const k in o) {
    const x = o[k];
    // An own property named __proto__ shadows the accessor: this assignment sets the data.
    if (typeof x === 'object' && x !== null) o[k] = copy(x, depth + 1, seen);
  }
  return o;
}
