/**
 * JSON Schemas as tools declare them (a registered tool's `inputSchema` / `outputSchema`, a client
 * tool's `parameters`): the draft is chosen by `$schema` (draft-07 when absent, 2019-09, 2020-12;
 * anything else is refused naming the supported drafts), and each draft has its own ajv instance,
 * made on first use. A `SchemaCompiler` belongs to one registry: a schema it compiled stays
 * compiled (its `$id` taken) until `release()`, which a registration that fails later calls, so a
 * refused registration leaves nothing behind.
 */
import { createHash } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { formatValue } from '../limits.js';

/** ajv-formats is CommonJS: under NodeNext its plugin is the `.default` of the module. */
const addFormats = addFormatsModule.default;

type Draft = 'draft-07' | '2019-09' | '2020-12';

/** The `$schema` URIs each draft answers to (with or without a trailing `#`). */
const DRAFT_URIS: Readonly<Record<string, Draft>> = {
  'http://json-schema.org/draft-07/schema': 'draft-07',
  'https://json-schema.org/draft/2019-09/schema': '2019-09',
  'https://json-schema.org/draft/2020-12/schema': '2020-12',
};

/** The drafts a schema may declare, as its `$schema` says them (for messages and docs). */
const SUPPORTED_SCHEMA_DRAFTS = 'draft-07 (the default, "http://json-schema.org/draft-07/schema#"), 2019-09 ("https://json-schema.org/draft/2019-09/schema") or 2020-12 ("https://json-schema.org/draft/2020-12/schema")';

/** ajv's own normalisation of an id (a trailing `#` or `#/` names the same schema). */
function normalizeId(id: string): string {
  return id.replace(/#\/?$/, '');
}

/**
 * A schema's own declarations refused (its `$schema`, an `$id` another schema took), as opposed
 * to a schema ajv cannot compile: the message names the keyword itself.
 */
export class SchemaDeclarationError extends Error {}

function draftOf(schema: Record<string, unknown>): Draft {
  const s = schema.$schema;
  if (s === undefined) return 'draft-07';
  const id = typeof s === 'string' ? normalizeId(s) : undefined;
  const draft = id !== undefined && Object.hasOwn(DRAFT_URIS, id) ? DRAFT_URIS[id] : undefined;
  if (draft === undefined) throw new SchemaDeclarationError(`$schema ${JSON.stringify(s) ?? String(s)} is not a supported JSON Schema draft; declare ${SUPPORTED_SCHEMA_DRAFTS}`);
  return draft;
}

/** An ajv for `draft` (draft-07's class, or 2019-09's, or 2020-12's). */
function newAjv(draft: Draft, opts: { allErrors: true; strict: false; logger?: false }): Ajv {
  return draft === '2020-12' ? new Ajv2020(opts) : draft === '2019-09' ? new Ajv2019(opts) : new Ajv(opts);
}

function makeAjv(draft: Draft): Ajv {
  const ajv = newAjv(draft, { allErrors: true, strict: false });
  addFormats(ajv);
  return ajv;
}

/** A compiled schema, and how to forget it (its `$id` free again). */
export interface CompiledSchema {
  validate: ValidateFunction;
  release(): void;
}

export class SchemaCompiler {
  readonly #instances = new Map<Draft, Ajv>();
  /** Who compiled each id an instance holds (`tool 'x' (inputSchema)`), to name them in a clash. */
  readonly #owners = new Map<string, string>();

  /**
   * Compiles `schema` for `owner` (who declares it, for messages). Throws a
   * SchemaDeclarationError (an unsupported `$schema`, an `$id` another schema took) or an Error
   * with ajv's message, and leaves nothing behind.
   */
  compile(schema: Record<string, unknown>, owner: string): CompiledSchema {
    const draft = draftOf(schema);
    const id = typeof schema.$id === 'string' ? normalizeId(schema.$id) : undefined;
    const taken = id === undefined || id === '' ? undefined : this.#owners.get(id);
    if (taken !== undefined) {
      throw new SchemaDeclarationError(`$id "${id}" already exists in this registry: ${taken} declares it; each $id names one schema, so choose another $id or remove it`);
    }
    let ajv = this.#instances.get(draft);
    if (ajv === undefined) this.#instances.set(draft, (ajv = makeAjv(draft)));
    const a = ajv;
    const refsBefore = new Set(Object.keys(a.refs));
    const schemasBefore = new Set(Object.keys(a.schemas));
    const added: string[] = [];
    const release = (): void => {
      a.removeSchema(schema);
      for (const k of Object.keys(a.refs)) if (!refsBefore.has(k)) delete a.refs[k];
      for (const k of Object.keys(a.schemas)) if (!schemasBefore.has(k)) delete a.schemas[k];
      for (const k of added) this.#owners.delete(k);
    };
    let validate: ValidateFunction;
    try {
      validate = a.compile(schema);
    } catch (e) {
      release();
      const message = e instanceof Error ? e.message : String(e);
      // ajv names a clashing id ("already exists", "resolves to more than one schema"): say whose it is.
      const clash = /"([^"]*)"/.exec(message)?.[1];
      const other = clash === undefined ? undefined : this.#owners.get(normalizeId(clash));
      throw new Error(other === undefined ? message : `${message} (${other} declares it)`);
    }
    for (const k of Object.keys(a.refs)) {
      if (k !== '' && !refsBefore.has(k)) {
        this.#owners.set(k, owner);
        added.push(k);
      }
    }
    if (id !== undefined && id !== '' && !this.#owners.has(id)) {
      this.#owners.set(id, owner);
      added.push(id);
    }
    return { validate, release };
  }
}

/**
 * A deep copy of a schema's objects and arrays, deep-frozen: what a registered tool keeps and
 * shows. Anything else in it (a function in an `x-` keyword, a RegExp, a Date) is kept as it is,
 * unfrozen: it is the caller's. A subschema used twice stays one object; a Proxy is read like the
 * object it shows.
 */
export function frozenCopy(schema: Record<string, unknown>): Record<string, unknown> {
  return copyData(schema, new Map()) as Record<string, unknown>;
}

function copyData(v: unknown, seen: Map<object, unknown>): unknown {
  if (v === null || typeof v !== 'object') return v;
  const done = seen.get(v);
  if (done !== undefined) return done;
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    seen.set(v, out);
    for (const x of v) out.push(copyData(x, seen));
    return Object.freeze(out);
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return v;
  const out: Record<PropertyKey, unknown> = {};
  seen.set(v, out);
  for (const k of Reflect.ownKeys(v)) {
    if (Object.prototype.propertyIsEnumerable.call(v, k)) out[k] = copyData((v as Record<PropertyKey, unknown>)[k], seen);
  }
  return Object.freeze(out);
}

/** Answers by the SHA-256 of the schema's JSON text, most recent first. */
const checked = new Map<string, string | undefined>();
const CHECKED_MAX = 512;

/**
 * Why `schema` is not a tool's argument schema (an object at the root, a JSON Schema of a
 * supported draft that compiles: its `$ref`s resolve, its patterns are regular expressions), or
 * undefined: the rules of a registered tool's inputSchema. A client declares its tools with every
 * message, so nothing it sends may stay in the server: each schema not seen lately is compiled by
 * an ajv of its own, silent (a client's unknown format must not write to the server's log), and
 * dropped with it; the answer is cached by the text's hash.
 */
export function argumentSchemaProblem(schema: Record<string, unknown>): string | undefined {
  if (schema.type !== 'object') return `must have type: 'object' at its root (tool arguments are always an object), got ${schema.type === undefined ? 'no type' : formatValue(schema.type)}`;
  let key: string;
  try {
    key = createHash('sha256').update(JSON.stringify(schema)).digest('base64url');
  } catch (e) {
    return `cannot be read as JSON: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (checked.has(key)) {
    const cached = checked.get(key);
    checked.delete(key);
    checked.set(key, cached);
    return cached;
  }
  let problem: string | undefined;
  try {
    // No formats: they change what validates, not whether the schema is one.
    newAjv(draftOf(schema), { allErrors: true, strict: false, logger: false }).compile(schema);
  } catch (e) {
    problem = `is not a valid JSON Schema: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (checked.size >= CHECKED_MAX) checked.delete(checked.keys().next().value as string);
  checked.set(key, problem);
  return problem;
}
