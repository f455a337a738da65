/**
 * A2UI v0.9 validation of `a2ui-surface` parts with the official core library
 * (@a2ui/web_core, its `/v0_9` entry points: the bare package name is v0.8).
 *
 * A surface part's data is `{ messages: [...] }`: A2UI server-to-client messages, each an
 * object with `version` and exactly one of createSurface / updateComponents / updateDataModel /
 * deleteSurface (protocols.md §2.1: spec 001's single object holding all three is not valid
 * A2UI). An actor may also write one message as the data (spec 000's example); it is checked as
 * a list of one and delivered as `{ messages: [message] }`. The list is checked by `A2uiMessageListSchema`, then against the basic catalog: the
 * catalog id, each component's name, and each component's properties by the catalog's own
 * schema (which `MessageProcessor` does not check). A list that passes is then applied by a fresh
 * `MessageProcessor` with the basic catalog, as a renderer given this part alone applies it: what
 * it refuses (a component without an id, an updateDataModel path through a primitive or a
 * non-numeric segment on an array, a forbidden segment such as __proto__) is a problem too.
 *
 * Every problem is reported with a JSON Pointer into the part's data, e.g.
 * `/messages/1/updateComponents/components/2/component`. Pure; never throws.
 */
import {
  A2uiMessageListSchema,
  MessageProcessor,
  CreateSurfaceMessageSchema,
  DeleteSurfaceMessageSchema,
  UpdateComponentsMessageSchema,
  UpdateDataModelMessageSchema,
} from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { A2UI_BASIC_CATALOG_ID } from '../registries/surface-templates.js';

export interface A2uiProblem {
  /** JSON Pointer into the part's data. */
  path: string;
  message: string;
}

/** The MIME type of A2UI messages (v0.9.1; v0.9 said `application/json+a2ui`). */
export const A2UI_MIME_TYPE = 'application/a2ui+json';

/** A zod issue as web_core's schemas report it (zod itself is web_core's dependency, not ours). */
type ZodIssue = NonNullable<ReturnType<typeof A2uiMessageListSchema.safeParse>['error']>['issues'][number];
type Schema = { safeParse(v: unknown): { success: true } | { success: false; error: { issues: ZodIssue[] } } };

const MESSAGE_SCHEMAS: Readonly<Record<string, Schema>> = {
  createSurface: CreateSurfaceMessageSchema,
  updateComponents: UpdateComponentsMessageSchema,
  updateDataModel: UpdateDataModelMessageSchema,
  deleteSurface: DeleteSurfaceMessageSchema,
};
const MESSAGE_KEYS = Object.keys(MESSAGE_SCHEMAS);
const COMPONENT_NAMES = [...basicCatalog.components.keys()];
const MAX_PROBLEMS = 20;

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const seg = (s: string | number): string => String(s).replace(/~/g, '~0').replace(/\//g, '~1');
const pointer = (base: string, path: readonly (string | number)[]): string => base + path.map((p) => `/${seg(p)}`).join('');

function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
  return v;
}

function issueProblem(base: string, issue: ZodIssue, root: unknown): A2uiProblem {
  if (issue.code === 'invalid_union' && valueAt(root, issue.path) === undefined) {
    return { path: pointer(base, issue.path), message: 'is required' };
  }
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const what = issue.keys.length === 1 ? `unknown property ${JSON.stringify(key)}` : `unknown properties ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    return { path: pointer(base, [...issue.path, key]), message: `${what}: not allowed here by A2UI v0.9; remove it` };
  }
  return { path: pointer(base, issue.path), message: issue.message };
}

/**
 * Problems of an A2UI message list (empty when valid). `base` prefixes every path
 * (`/messages` for a part's data).
 */
export function checkA2uiMessages(messages: unknown, base = ''): A2uiProblem[] {
  const out: A2uiProblem[] = [];
  if (!Array.isArray(messages)) {
    out.push({ path: base, message: 'must be an array of A2UI v0.9 messages, each { version: "v0.9", <one of createSurface, updateComponents, updateDataModel, deleteSurface> }' });
    return out;
  }
  if (messages.length === 0) {
    out.push({ path: base, message: 'is empty: give at least a createSurface, an updateComponents with a "root" component, and the data model' });
    return out;
  }
  const listOk = A2uiMessageListSchema.safeParse(messages).success;
  const created = new Map<string, number>();
  const deleted = new Map<string, number>();
  const roots = new Set<string>();
  const updated = new Map<string, number>();
  for (let i = 0; i < messages.length && out.length < MAX_PROBLEMS; i++) {
    const m: unknown = messages[i];
    const at = `${base}/${i}`;
    if (!isObject(m)) {
      out.push({ path: at, message: 'must be an object { version: "v0.9", <one message key> }' });
      continue;
    }
    const keys = MESSAGE_KEYS.filter((k) => k in m);
    if (keys.length !== 1) {
      out.push({
        path: at,
        message:
          keys.length === 0
            ? `has none of ${MESSAGE_KEYS.join(', ')}: each message carries exactly one`
            : `has ${keys.join(' and ')}: each A2UI message carries exactly one of them; split it into ${keys.length} messages`,
      });
      continue;
    }
    const key = keys[0]!;
    const r = MESSAGE_SCHEMAS[key]!.safeParse(m);
    if (!r.success) {
      for (const issue of r.error.issues) if (out.length < MAX_PROBLEMS) out.push(issueProblem(at, issue, m));
      continue;
    }
    const body = m[key] as Obj;
    const surfaceId = String(body.surfaceId);
    // Order within the list, as a MessageProcessor given this list alone applies it (the oracle
    // test feeds each part to a fresh one): it refuses an update of a surface it has not created
    // yet, and one deleted is gone. A deleteSurface with no createSurface before it is a no-op
    // there (a part may remove a surface an earlier part showed), so it is not refused; a second
    // createSurface is reported below as a duplicate.
    if (key !== 'createSurface' && deleted.has(surfaceId)) {
      out.push({ path: `${at}/${key}/surfaceId`, message: `surface "${surfaceId}" is deleted by message ${deleted.get(surfaceId)}; no message for it may follow its deleteSurface in the list` });
      continue;
    }
    if ((key === 'updateComponents' || key === 'updateDataModel') && !created.has(surfaceId)) {
      out.push({ path: `${at}/${key}/surfaceId`, message: `surface "${surfaceId}" is not created before this message: put its createSurface first in the same list (a MessageProcessor refuses updates of a surface it has not created)` });
    }
    if (key === 'deleteSurface') deleted.set(surfaceId, i);
    if (key === 'createSurface') {
      if (body.catalogId !== A2UI_BASIC_CATALOG_ID) {
        out.push({ path: `${at}/createSurface/catalogId`, message: `${JSON.stringify(body.catalogId)} is not a catalog this runtime renders; use the basic catalog "${A2UI_BASIC_CATALOG_ID}"` });
      }
      if (created.has(surfaceId)) {
        out.push({ path: `${at}/createSurface/surfaceId`, message: `surface "${surfaceId}" is already created by message ${created.get(surfaceId)}; a surface is created once` });
      }
      created.set(surfaceId, i);
    } else if (key === 'updateComponents') {
      updated.set(surfaceId, i);
      const components = body.components as Obj[];
      for (let j = 0; j < components.length && out.length < MAX_PROBLEMS; j++) {
        checkComponent(components[j]!, `${at}/updateComponents/components/${j}`, out);
        if (components[j]!.id === 'root') roots.add(surfaceId);
      }
    }
  }
  for (const [surfaceId, i] of created) {
    if (updated.has(surfaceId) && !roots.has(surfaceId)) {
      out.push({ path: `${base}/${updated.get(surfaceId)}/updateComponents/components`, message: `surface "${surfaceId}" (created by message ${i}) has no component with id "root": nothing renders until one exists` });
    }
  }
  if (out.length === 0 && !listOk) {
    // The per-message schemas agree with the list schema; keep its verdict if they ever do not.
    const r = A2uiMessageListSchema.safeParse(messages);
    if (!r.success) for (const issue of r.error.issues) out.push(issueProblem(base, issue, messages));
  }
  if (out.length === 0) {
    // The renderer's own verdict: a fresh processor applies the list (on a copy: it keeps what it is given).
    // One message at a time, so the problem names the message the processor refused.
    const processor = new MessageProcessor([basicCatalog]);
    const copy = structuredClone(messages) as unknown[];
    for (let i = 0; i < copy.length; i++) {
      try {
        processor.processMessages([copy[i]] as never);
      } catch (e) {
        out.push({ path: `${base}/${i}`, message: `an A2UI renderer refuses this message: ${e instanceof Error ? e.message : String(e)}` });
        break;
      }
    }
  }
  return out;
}

function checkComponent(c: Obj, at: string, out: A2uiProblem[]): void {
  const { id, component, ...props } = c;
  // The schema leaves id optional; a renderer cannot place a component without one.
  if (typeof id !== 'string' || id === '') out.push({ path: `${at}/id`, message: 'every component needs an "id" (a non-empty string; the top one is "root")' });
  if (typeof component !== 'string') return; // the message schema reports a missing name
  const api = basicCatalog.components.get(component);
  if (api === undefined) {
    out.push({ path: `${at}/component`, message: `${JSON.stringify(component)} is not a component of the A2UI basic catalog; use one of ${COMPONENT_NAMES.join(', ')}` });
    return;
  }
  const r = api.schema.safeParse(props);
  if (!r.success) for (const issue of r.error.issues) if (out.length < MAX_PROBLEMS) out.push(issueProblem(at, issue, props));
}

/** The A2UI message keys `data` holds when it is one message rather than `{ messages: [...] }`. */
function messageKeysOf(data: unknown): string[] {
  return isObject(data) && !('messages' in data) ? MESSAGE_KEYS.filter((k) => k in data) : [];
}

/**
 * Problems of an `a2ui-surface` part's data, paths from the data: `{ messages: [...] }`, or one
 * A2UI message (spec 000's `{ "version": "v0.9", "createSurface": { ... } }`), checked as the list
 * `[message]` (`normalizeSurfaceData` turns it into that list).
 */
export function checkSurfaceData(data: unknown): A2uiProblem[] {
  const keys = messageKeysOf(data);
  if (keys.length === 1) {
    // Checked as a list of one; its paths start /0, the message's own paths do not.
    return checkA2uiMessages([data]).map((p) => ({ path: p.path.slice(2), message: p.message }));
  }
  if (!isObject(data) || !('messages' in data)) {
    return [
      {
        path: '',
        message:
          keys.length > 1
            ? `has ${keys.join(' and ')}: each A2UI v0.9 message carries exactly one of them; give data { messages: [...] } with ${keys.length} messages, one per key, each with its own "version": "v0.9"`
            : `an a2ui-surface part carries one A2UI v0.9 message { version: "v0.9", <one of ${MESSAGE_KEYS.join(', ')}> } or { messages: [...] }, a list of them`,
      },
    ];
  }
  const extra = Object.keys(data).filter((k) => k !== 'messages');
  const out = extra.map((k) => ({ path: `/${seg(k)}`, message: `unknown property ${JSON.stringify(k)}: an a2ui-surface part's data has only messages` }));
  out.push(...checkA2uiMessages(data.messages, '/messages'));
  return out;
}

/**
 * An `a2ui-surface` part's data in the form every consumer reads, `{ messages: [...] }`: one
 * A2UI message becomes `{ messages: [message] }`; `undefined` when the data is already a list.
 */
export function normalizeSurfaceData(data: Readonly<Record<string, unknown>>): { messages: unknown[] } | undefined {
  return messageKeysOf(data).length === 1 ? { messages: [data] } : undefined;
}
