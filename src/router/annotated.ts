/**
 * AnnotatedRecord<T>: a tool handler's result that says, field by field, which destinations
 * may see it. Plain JSON (tagged `kind: 'annotated-record'`), so it survives persistence and
 * replay: `isAnnotatedRecord(JSON.parse(JSON.stringify(r)))` is still true.
 *
 * Field paths are JSON Pointers (RFC 6901) into `data`; a `*` segment matches every member
 * of an object or element of an array. The most specific matching path decides a node's
 * audience (longer beats shorter, a literal segment beats `*`); a node no path matches
 * inherits its nearest annotated ancestor's audience, or `default`.
 */
import { TurnstateError } from '../errors.js';

/** The destination ids the runtime knows; any other registered id is accepted too. */
export type CanonicalDestination = 'llm-session' | 'ui-stream' | 'cache' | 'audit' | 'peer-response';
export type DestinationId = CanonicalDestination | `formatter:${string}` | (string & {});

/**
 * Who may see a node: destination ids, `*` (every destination), or a prefix pattern ending
 * in `:*` such as `formatter:*` (every formatter).
 */
export type Audience = readonly (DestinationId | '*' | `${string}:*`)[];

type Prev = [never, 0, 1, 2, 3, 4, 5, 6];
type EscapeKey<K extends string> = K extends `${infer A}~${infer B}`
  ? `${A}~0${EscapeKey<B>}`
  : K extends `${infer A}/${infer B}`
    ? `${A}~1${EscapeKey<B>}`
    : K;

/**
 * The JSON Pointers into T (to depth 6), with `*` for any member or element; `string` where T is
 * not known statically. An unknown path in an object literal is a compile error.
 */
export type JsonPointer<T, D extends number = 6> = [D] extends [never]
  ? string
  : unknown extends T
    ? string
    : T extends readonly (infer E)[]
      ? `/${number}` | '/*' | `/${number}${JsonPointer<E, Prev[D]>}` | `/*${JsonPointer<E, Prev[D]>}`
      : T extends object
        ?
            | {
                [K in keyof T & string]: `/${EscapeKey<K>}` | `/${EscapeKey<K>}${JsonPointer<NonNullable<T[K]>, Prev[D]>}`;
              }[keyof T & string]
            | '/*'
            | `/*${JsonPointer<NonNullable<T[keyof T & string]>, Prev[D]>}`
        : never;

/** What `annotate()` takes besides the data. */
export interface AnnotationSpec<T = unknown> {
  /** Per-path audiences. `''` addresses the whole record. */
  fields?: { readonly [P in JsonPointer<T> | '']?: Audience } | undefined;
  /** Audience of every node no path covers. Default `['*']`: unannotated fields are visible everywhere. */
  default?: Audience | undefined;
  /** The domain kind of the data (e.g. 'flights'); carried for destinations and the envelope. */
  kind?: string | undefined;
}

export const ANNOTATED_RECORD = 'annotated-record' as const;

/** A data-bearing handler result with per-field destination annotations. JSON-safe. */
export interface AnnotatedRecord<T = unknown> {
  readonly kind: typeof ANNOTATED_RECORD;
  readonly data: T;
  readonly fields: Readonly<Record<string, Audience>>;
  readonly default: Audience;
  /** The `kind` given to annotate(), e.g. 'flights'. */
  readonly dataKind?: string;
}

const ALL: Audience = Object.freeze(['*']);
const NO_FIELDS: Readonly<Record<string, Audience>> = Object.freeze({});

/**
 * Wraps `data` with destination annotations. Throws a TurnstateError (`annotated.invalid`)
 * naming the offending path when a path is not a JSON Pointer or an audience is not a list
 * of non-empty strings. Validation is cached per `fields` object, so a spec reused across
 * calls is checked once.
 */
export function annotate<T>(data: T, spec: AnnotationSpec<T> = {}): AnnotatedRecord<T> {
  const fields = (spec.fields ?? NO_FIELDS) as Readonly<Record<string, Audience>>;
  const dflt = spec.default ?? ALL;
  compileAnnotations(fields);
  checkAudience(dflt, 'default');
  const record: { kind: typeof ANNOTATED_RECORD; data: T; fields: Readonly<Record<string, Audience>>; default: Audience; dataKind?: string } = {
    kind: ANNOTATED_RECORD,
    data,
    fields,
    default: dflt,
  };
  if (spec.kind !== undefined) {
    if (typeof spec.kind !== 'string' || spec.kind === '') {
      throw new TurnstateError('annotated.invalid', 'annotate(): `kind` must be a non-empty string');
    }
    record.dataKind = spec.kind;
  }
  return record;
}

/** Cheap structural check; true for records restored from JSON as well. */
export function isAnnotatedRecord(x: unknown): x is AnnotatedRecord {
  return (
    typeof x === 'object' &&
    x !== null &&
    (x as { kind?: unknown }).kind === ANNOTATED_RECORD &&
    'data' in x &&
    Array.isArray((x as { default?: unknown }).default)
  );
}

/** True when `audience` admits destination `dest` (exact id, `*`, or a `prefix:*` pattern). */
export function audienceIncludes(audience: Audience, dest: string): boolean {
  for (let i = 0; i < audience.length; i++) {
    const a = audience[i]!;
    if (a === dest || a === '*') return true;
    if (a.length > 1 && a.endsWith(':*') && dest.startsWith(a.slice(0, -1))) return true;
  }
  return false;
}

/* ------------------------------------------------------------------ compiled form */

/** One node of the compiled annotation trie. */
export interface AnnotationNode {
  /** Audience set exactly at this path, if any. */
  audience: Audience | undefined;
  /** Children by unescaped segment. */
  children: Map<string, AnnotationNode> | undefined;
  /** The `*` child. */
  star: AnnotationNode | undefined;
  /** Every audience set at or below this node (to know whether a hidden subtree hides a visible field). */
  below: Audience[];
}

const compiled = new WeakMap<object, AnnotationNode>();

/** Compiles (and validates) a `fields` map into a trie; cached per `fields` object. */
export function compileAnnotations(fields: Readonly<Record<string, Audience>>): AnnotationNode {
  const hit = compiled.get(fields);
  if (hit !== undefined) return hit;
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    throw new TurnstateError('annotated.invalid', 'annotate(): `fields` must be an object of JSON Pointer -> audience');
  }
  const root = newNode();
  for (const pointer of Object.keys(fields)) {
    const audience = fields[pointer];
    if (audience === undefined) continue;
    checkAudience(audience, pointer);
    const segments = parsePointer(pointer);
    let node = root;
    node.below.push(audience);
    for (const seg of segments) {
      let next: AnnotationNode | undefined;
      if (seg === '*') {
        next = node.star ??= newNode();
      } else {
        node.children ??= new Map();
        next = node.children.get(seg);
        if (next === undefined) node.children.set(seg, (next = newNode()));
      }
      node = next;
      node.below.push(audience);
    }
    node.audience = audience;
  }
  compiled.set(fields, root);
  return root;
}

function newNode(): AnnotationNode {
  return { audience: undefined, children: undefined, star: undefined, below: [] };
}

/** RFC 6901 parse: '' is the root; otherwise '/'-separated segments with ~1 -> '/', ~0 -> '~'. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (pointer[0] !== '/') {
    throw new TurnstateError(
      'annotated.invalid',
      `annotate(): field path "${pointer}" is not a JSON Pointer: it must be '' or start with '/' (e.g. "/pricePerPerson")`,
      { details: { path: pointer } },
    );
  }
  const raw = pointer.slice(1).split('/');
  const out: string[] = new Array(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const s = raw[i]!;
    if (/~(?![01])/.test(s)) {
      throw new TurnstateError(
        'annotated.invalid',
        `annotate(): field path "${pointer}" has a '~' not followed by 0 or 1 (escape '~' as ~0 and '/' as ~1)`,
        { details: { path: pointer } },
      );
    }
    out[i] = s.indexOf('~') === -1 ? s : s.replace(/~1/g, '/').replace(/~0/g, '~');
  }
  return out;
}

function checkAudience(audience: unknown, where: string): void {
  if (!Array.isArray(audience)) {
    throw new TurnstateError(
      'annotated.invalid',
      `annotate(): the audience of ${where === 'default' ? '`default`' : `"${where}"`} must be an array of destination ids, e.g. ['llm-session', 'audit']`,
      { details: { path: where } },
    );
  }
  for (const a of audience) {
    if (typeof a !== 'string' || a === '') {
      throw new TurnstateError(
        'annotated.invalid',
        `annotate(): the audience of ${where === 'default' ? '`default`' : `"${where}"`} contains ${JSON.stringify(a)}; each entry must be a non-empty destination id`,
        { details: { path: where } },
      );
    }
  }
}
