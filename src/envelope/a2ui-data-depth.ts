/**
 * How deep an A2UI message's JSON may nest (surfaces:a2ui:data-depth), measured before any other
 * check of a surface: the schemas, the structured clone and the processor a2ui.ts runs, and a
 * renderer's bindings, all recurse through the data, and a model's 12 KB of JSON can nest
 * thousands of levels. Iterative: any depth is measured, and a problem is a JSON Pointer.
 *
 * Contract: pure; never throws on JSON data or on a template's object graph (shared objects,
 * cycles); `undefined` when the message is within the bound.
 */
import { isObject, type Obj } from './json-object.js';
import { escapeSegment } from './pointer.js';

/** A problem at a JSON Pointer (a2ui.ts's A2uiProblem; declared here so the two do not import each other). */
export interface DepthProblem {
  path: string;
  message: string;
}

/**
 * The deepest data model a surface may carry: levels of objects and arrays in an
 * `updateDataModel`'s `value` (the value itself is level 1; a scalar has none). Every other member
 * of a message is held to the same bound counted from the message's body (its createSurface,
 * updateComponents, ... object). Deeper JSON overflows the stack of whatever walks it recursively
 * (a structured clone, a renderer's bindings) long before a page could show it: protocols.md §2.4
 * "DoS by very deep trees" (surfaces:a2ui:data-depth).
 */
export const MAX_SURFACE_DATA_DEPTH = 128;

const pointer = (base: string, path: readonly (string | number)[]): string => base + path.map((p) => `/${escapeSegment(String(p))}`).join('');

/**
 * The first container of `message` past MAX_SURFACE_DATA_DEPTH (surfaces:a2ui:data-depth): in an
 * updateDataModel's `value`, counted from the value (level 1); anywhere else, from the message's
 * body (its message key's object, level 1). Iterative, so any depth is measured. A container that
 * contains itself (a template's object graph; JSON has no such value) is refused where it refers
 * back; one shared by two parents is walked again only from a shallower level, so the walk stays
 * linear in the containers times the bound.
 */
export function dataDepthProblem(message: unknown, at: string, messageKeys: readonly string[]): DepthProblem | undefined {
  if (!isObject(message)) return undefined;
  const keys = messageKeys.filter((k) => k in message);
  const body = keys.length === 1 ? keys[0] : undefined;
  const seen = new Map<object, number>();
  const open = new Set<object>();
  type Frame = { v: unknown; path: (string | number)[]; level: number } | { leave: object };
  const stack: Frame[] = Object.keys(message).map((k) => ({ v: message[k], path: [k], level: 1 }));
  stack.reverse();
  while (stack.length > 0) {
    const f = stack.pop()!;
    if ('leave' in f) {
      open.delete(f.leave);
      continue;
    }
    const { v, path } = f;
    if (v === null || typeof v !== 'object') continue;
    // The data model's value starts again at 1; the body's other members go on counting.
    const inModel = body === 'updateDataModel' && path.length >= 2 && path[1] === 'value';
    const level = inModel && path.length === 2 ? 1 : f.level;
    if (open.has(v)) {
      return { path: pointer(at, path), message: 'refers back to an object or array that contains it (a cycle): a surface is JSON data, a tree; give a copy' };
    }
    if (level > MAX_SURFACE_DATA_DEPTH) {
      const where = inModel ? `the data model of surface ${JSON.stringify(isObject(message[body!]) ? (message[body!] as Obj).surfaceId : undefined)}` : 'this message';
      return {
        path: pointer(at, path),
        message: `nests ${where} more than ${MAX_SURFACE_DATA_DEPTH} levels of objects and arrays deep${inModel ? ' (from updateDataModel.value)' : ''}; a surface's data may be at most ${MAX_SURFACE_DATA_DEPTH} levels deep: flatten it (e.g. rows that name their parent instead of nested children)`,
      };
    }
    const before = seen.get(v);
    if (before !== undefined && before <= level) continue;
    seen.set(v, level);
    open.add(v);
    stack.push({ leave: v });
    const children = Array.isArray(v) ? [...v.keys()] : Object.keys(v);
    for (let i = children.length - 1; i >= 0; i--) {
      const k = children[i]!;
      stack.push({ v: (v as Record<string | number, unknown>)[k], path: [...path, k], level: level + 1 });
    }
  }
  return undefined;
}
