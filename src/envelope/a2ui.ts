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
 * What the processor accepts but a renderer cannot draw is checked here as well: each surface's
 * components must form a tree from `root`, without a loop of child references and at most
 * MAX_SURFACE_DEPTH deep (surfaces:a2ui:tree, surfaces:a2ui:depth). Before any of that, each
 * message's JSON is measured without recursion: a data model (`updateDataModel.value`) nested
 * deeper than MAX_SURFACE_DATA_DEPTH levels, or any other member of a message nested as deep, is
 * refused at the container past the bound (surfaces:a2ui:data-depth), so no check (nor the
 * processor, nor a renderer) recurses through it.
 *
 * Every problem is reported with a JSON Pointer into the part's data, e.g.
 * `/messages/1/updateComponents/components/2/component`. Pure; never throws (a value that cannot
 * be checked at all, such as one that is not JSON data, is a problem at the list's path).
 */
import { drawnWithData, type ComponentRef } from './a2ui-drawn.js';
import {
  A2uiMessageListSchema,
  extractRefFields,
  MessageProcessor,
  CreateSurfaceMessageSchema,
  DeleteSurfaceMessageSchema,
  UpdateComponentsMessageSchema,
  UpdateDataModelMessageSchema,
} from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { A2UI_BASIC_CATALOG_ID } from '../registries/surface-templates.js';
import type { LiveSurfaceView } from '../registries/types.js';
import { dataDepthProblem, MAX_SURFACE_DATA_DEPTH } from './a2ui-data-depth.js';
import { liveGraph, notCreated } from './live-surfaces.js';
import { isObject, type Obj } from './json-object.js';
import { escapeSegment } from './pointer.js';

export { MAX_SURFACE_DATA_DEPTH };

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
/**
 * The deepest component tree a surface may have, in components from `root` to a leaf (root
 * counts 1). A renderer nests an element per level; protocols.md §2.4 "DoS by very deep trees".
 */
export const MAX_SURFACE_DEPTH = 64;
/**
 * Components a surface may draw from `root`, counting a component once at every place it is
 * referred to from: a chain of components that each refer to the next twice is no loop and not
 * deep, yet draws 2^depth (surfaces:a2ui:drawn). A List's template counts once per element of the
 * array its data path resolves to in the list's data model (a2ui-drawn.ts), at least once here.
 */
export const MAX_SURFACE_DRAWN = 5_000;

const seg = (s: string | number): string => escapeSegment(String(s));
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
 * (`/messages` for a part's data). `live`: the session's live surfaces, which the list may update
 * without creating them and may not create again without deleting them first (surfaces:live).
 */
export function checkA2uiMessages(messages: unknown, base = '', live?: LiveSurfaceView): A2uiProblem[] {
  try {
    return checkMessages(messages, base, live);
  } catch (e) {
    // Not reached by JSON data within the bounds; a template's own objects (a getter that throws,
    // a Proxy) may still fail a check, and that is a problem with the list, not an exception.
    return [{ path: base, message: `could not be checked as A2UI v0.9 messages (${e instanceof Error ? e.message : String(e)}): give plain JSON data` }];
  }
}

function checkMessages(messages: unknown, base: string, live: LiveSurfaceView | undefined): A2uiProblem[] {
  const out: A2uiProblem[] = [];
  if (!Array.isArray(messages)) {
    out.push({ path: base, message: 'must be an array of A2UI v0.9 messages, each { version: "v0.9", <one of createSurface, updateComponents, updateDataModel, deleteSurface> }' });
    return out;
  }
  if (messages.length === 0) {
    out.push({ path: base, message: 'is empty: give at least a createSurface, an updateComponents with a "root" component, and the data model' });
    return out;
  }
  // Depth first, without recursion: every later check (the schemas, the clone, the processor) may recurse.
  for (let i = 0; i < messages.length && out.length < MAX_PROBLEMS; i++) {
    const problem = dataDepthProblem(messages[i], `${base}/${i}`, MESSAGE_KEYS);
    if (problem !== undefined) out.push(problem);
  }
  if (out.length > 0) return out;
  const listOk = A2uiMessageListSchema.safeParse(messages).success;
  const created = new Map<string, number>();
  const deleted = new Map<string, number>();
  const roots = new Set<string>();
  const updated = new Map<string, number>();
  // Each created surface's components as applied so far (id -> component and its path), and the
  // surfaces already reported for their tree (one problem each).
  const graphs = new Map<string, Map<string, Placed>>();
  const treeReported = new Set<string>();
  // The session's live surfaces (an earlier part created them, none deleted them) that this list
  // deletes, and those it refers to without creating them (rebuilt first for the processor below).
  const liveGone = new Set<string>();
  const liveUsed = new Set<string>();
  const isLive = (id: string): boolean => live !== undefined && live.has(id) && !liveGone.has(id);
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
    // yet, and one deleted is gone until a createSurface makes it again (A2UI v0.9.1: an id is
    // unique among active surfaces). A deleteSurface with no createSurface before it is a no-op
    // there (a part may remove a surface an earlier part showed), so it is not refused; a second
    // createSurface while the surface is active is reported below as a duplicate.
    if (key !== 'createSurface' && deleted.has(surfaceId)) {
      out.push({ path: `${at}/${key}/surfaceId`, message: `surface "${surfaceId}" is deleted by message ${deleted.get(surfaceId)}; no message for it may follow its deleteSurface unless a createSurface creates it again first (its id is free once it is deleted)` });
      continue;
    }
    if ((key === 'updateComponents' || key === 'updateDataModel') && !created.has(surfaceId)) {
      if (isLive(surfaceId)) {
        // A live surface is updated where it is (surfaces:live:update), with what it holds.
        liveUsed.add(surfaceId);
        if (key === 'updateComponents' && !graphs.has(surfaceId)) graphs.set(surfaceId, liveGraph(live!, surfaceId, `${at}/updateComponents/components`));
      } else {
        out.push({ path: `${at}/${key}/surfaceId`, message: notCreated(surfaceId, live) });
      }
    }
    if (key === 'deleteSurface') {
      if (isLive(surfaceId) && !created.has(surfaceId)) {
        liveUsed.add(surfaceId);
        liveGone.add(surfaceId);
      }
      // The surface is gone; its id may be created again (A2UI v0.9.1: ids are unique among
      // active surfaces). What it was given is judged now, as it was.
      noRoot(surfaceId, created, updated, roots, base, out);
      created.delete(surfaceId);
      updated.delete(surfaceId);
      roots.delete(surfaceId);
      graphs.delete(surfaceId);
      treeReported.delete(surfaceId);
      deleted.set(surfaceId, i);
    }
    if (key === 'createSurface') {
      if (body.catalogId !== A2UI_BASIC_CATALOG_ID) {
        out.push({ path: `${at}/createSurface/catalogId`, message: `${JSON.stringify(body.catalogId)} is not a catalog this runtime renders; use the basic catalog "${A2UI_BASIC_CATALOG_ID}"` });
      }
      if (created.has(surfaceId)) {
        out.push({ path: `${at}/createSurface/surfaceId`, message: `surface "${surfaceId}" is already created by message ${created.get(surfaceId)} and not deleted since; a surface is created once while it is active` });
      } else if (isLive(surfaceId)) {
        // surfaces:live:recreate: an A2UI client refuses a second createSurface of a surface it holds.
        out.push({
          path: `${at}/createSurface/surfaceId`,
          message: `surface "${surfaceId}" is already live (an earlier part created it and it is not deleted): an A2UI client refuses a second createSurface of it. To change it, leave out this createSurface and send updateComponents / updateDataModel for "${surfaceId}" (they apply to the surface as it is); to replace it, put { "version": "v0.9", "deleteSurface": { "surfaceId": "${surfaceId}" } } before this createSurface in the same list`,
        });
      }
      created.set(surfaceId, i);
      deleted.delete(surfaceId);
      if (!graphs.has(surfaceId)) graphs.set(surfaceId, new Map());
    } else if (key === 'updateComponents') {
      updated.set(surfaceId, i);
      const components = body.components as Obj[];
      const graph = graphs.get(surfaceId);
      for (let j = 0; j < components.length && out.length < MAX_PROBLEMS; j++) {
        const c = components[j]!;
        const cAt = `${at}/updateComponents/components/${j}`;
        checkComponent(c, cAt, out);
        if (c.id === 'root') roots.add(surfaceId);
        if (graph !== undefined && typeof c.id === 'string') graph.set(c.id, { component: c, at: cAt });
      }
      // The tree as it stands after this message (a renderer may paint between messages).
      if (graph !== undefined && !treeReported.has(surfaceId) && out.length < MAX_PROBLEMS) {
        const problem = checkTree(surfaceId, graph);
        if (problem !== undefined) {
          out.push(problem);
          treeReported.add(surfaceId);
        }
      }
    }
  }
  for (const surfaceId of created.keys()) noRoot(surfaceId, created, updated, roots, base, out);
  if (out.length === 0 && !listOk) {
    // The per-message schemas agree with the list schema; keep its verdict if they ever do not.
    const r = A2uiMessageListSchema.safeParse(messages);
    if (!r.success) for (const issue of r.error.issues) out.push(issueProblem(base, issue, messages));
  }
  if (out.length === 0) {
    // The renderer's own verdict: a fresh processor applies the list (on a copy: it keeps what it is given).
    // One message at a time, so the problem names the message the processor refused.
    const processor = new MessageProcessor([basicCatalog]);
    // The live surfaces the list acts on, as the client holds them (its processor has them already).
    for (const id of liveUsed) {
      try {
        processor.processMessages((live!.rebuild(id) ?? []) as never);
      } catch {
        // A surface its client could not rebuild either: the list's own messages are judged as they come.
      }
    }
    let copy: unknown[];
    try {
      copy = structuredClone(messages) as unknown[];
    } catch (e) {
      out.push({ path: base, message: `is not plain JSON data (${e instanceof Error ? e.message : String(e)}): give only objects, arrays, strings, numbers, booleans and null` });
      return out;
    }
    for (let i = 0; i < copy.length; i++) {
      try {
        processor.processMessages([copy[i]] as never);
      } catch (e) {
        out.push({ path: `${base}/${i}`, message: `an A2UI renderer refuses this message: ${e instanceof Error ? e.message : String(e)}` });
        break;
      }
    }
  }
  // What a list valid in every other way draws once its data is applied (surfaces:a2ui:drawn-data).
  if (out.length === 0) out.push(...drawnWithData(messages, base, MAX_SURFACE_DRAWN, childRefs, live && ((id) => live.rebuild(id))));
  return out;
}

/** A surface given components but no `root`: nothing renders until one exists. */
function noRoot(surfaceId: string, created: Map<string, number>, updated: Map<string, number>, roots: Set<string>, base: string, out: A2uiProblem[]): void {
  const i = created.get(surfaceId);
  if (i === undefined || !updated.has(surfaceId) || roots.has(surfaceId)) return;
  out.push({ path: `${base}/${updated.get(surfaceId)}/updateComponents/components`, message: `surface "${surfaceId}" (created by message ${i}) has no component with id "root": nothing renders until one exists` });
}

/** A component as applied to its surface, and the path of the message item that gave it. */
interface Placed {
  component: Obj;
  at: string;
}

/** One child reference of a component: the child's id, the path of the reference, a template's data path. */
type ChildRef = ComponentRef;

/**
 * Every child reference a component makes, as the basic catalog defines them (web_core's own
 * `extractRefFields` of the component's schema): `children` (an id list, or a template's
 * `componentId`), `child`, Tabs' `tabs[].child`, Modal's `trigger` and `content`.
 */
function childRefs({ component, at }: Placed): ChildRef[] {
  const api = typeof component.component === 'string' ? basicCatalog.components.get(component.component) : undefined;
  if (api === undefined) return [];
  const out: ChildRef[] = [];
  for (const [key, ref] of extractRefFields(api.schema)) {
    const v = component[key];
    if (ref.kind === 'single') {
      if (typeof v === 'string') out.push({ id: v, at: `${at}/${seg(key)}` });
    } else if (ref.kind === 'list') {
      if (Array.isArray(v)) v.forEach((id, k) => typeof id === 'string' && out.push({ id, at: `${at}/${seg(key)}/${k}` }));
      else if (isObject(v) && typeof v.componentId === 'string') {
        // A template is drawn per element of its array (a path, as web_core's binder requires one); without one, once.
        out.push({ id: v.componentId, at: `${at}/${seg(key)}/componentId`, ...(typeof v.path === 'string' && v.path !== '' ? { template: v.path } : {}) });
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, k) => {
        if (!isObject(item)) return;
        for (const sub of ref.keys) if (typeof item[sub] === 'string') out.push({ id: item[sub], at: `${at}/${seg(key)}/${k}/${seg(sub)}` });
      });
    }
  }
  return out;
}

/**
 * The tree a renderer draws from `root`: a loop of child references (a component that contains
 * itself, directly or not) recurses forever, and a tree deeper than MAX_SURFACE_DEPTH nests past
 * what a page should. A reference to a missing component is skipped, as renderers skip it.
 * Iterative (no recursion on the model's input); linear in components and references.
 */
function checkTree(surfaceId: string, graph: ReadonlyMap<string, Placed>): A2uiProblem | undefined {
  if (!graph.has('root')) return undefined;
  const refs = new Map<string, ChildRef[]>();
  const refsOf = (id: string): ChildRef[] => {
    let r = refs.get(id);
    if (r === undefined) refs.set(id, (r = childRefs(graph.get(id)!).filter((c) => graph.has(c.id))));
    return r;
  };
  // Depth-first from root: `height` is set when a component's subtree is done (components on the
  // longest path below it, itself included); a component on the stack without one is open.
  const height = new Map<string, number>();
  // Components a renderer draws below each one, itself included (a shared child counts at each place), capped.
  const drawn = new Map<string, number>();
  const open = new Set<string>(['root']);
  const stack: { id: string; next: number }[] = [{ id: 'root', next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const children = refsOf(top.id);
    if (top.next < children.length) {
      const ref = children[top.next++]!;
      if (open.has(ref.id)) {
        // The path from root down to the reference, which goes back up to a component on it.
        const ids = [...stack.map((f) => f.id), ref.id].map((id) => JSON.stringify(id));
        const chain = (ids.length > 10 ? [ids[0], '…', ...ids.slice(-8)] : ids).join(' → ');
        return {
          path: ref.at,
          message: `closes a loop of components in surface "${surfaceId}": ${chain}; a component may not contain itself, directly or through its children (a renderer would nest it forever): refer to another component`,
        };
      }
      if (!height.has(ref.id)) {
        open.add(ref.id);
        stack.push({ id: ref.id, next: 0 });
      }
      continue;
    }
    let below = 0;
    let drawnBelow = 0;
    for (const c of children) {
      below = Math.max(below, height.get(c.id) ?? 0);
      drawnBelow = Math.min(drawnBelow + (drawn.get(c.id) ?? 0), MAX_SURFACE_DRAWN + 1);
    }
    height.set(top.id, 1 + below);
    drawn.set(top.id, Math.min(1 + drawnBelow, MAX_SURFACE_DRAWN + 1));
    open.delete(top.id);
    stack.pop();
  }
  if (height.get('root')! <= MAX_SURFACE_DEPTH) return drawnPastBound(surfaceId, graph, refsOf, drawn);
  // Down the longest path to the reference that goes one level past the bound.
  let id = 'root';
  for (let depth = 1; ; depth++) {
    const deepest = topRef(refsOf(id), height)!;
    if (depth === MAX_SURFACE_DEPTH) {
      return {
        path: deepest.at,
        message: `nests surface "${surfaceId}" ${height.get('root')} components deep (from "root"); a surface's tree may be at most ${MAX_SURFACE_DEPTH} components deep: flatten it`,
      };
    }
    id = deepest.id;
  }
}

/** The reference among `refs` whose component scores highest in `score` (the first of equals), if any. */
function topRef(refs: readonly ChildRef[], score: ReadonlyMap<string, number>): ChildRef | undefined {
  let top: ChildRef | undefined;
  for (const r of refs) if (top === undefined || score.get(r.id)! > score.get(top.id)!) top = r;
  return top;
}

/** A tree within the depth bound that still draws more than MAX_SURFACE_DRAWN components (shared children drawn at each place). */
function drawnPastBound(surfaceId: string, graph: ReadonlyMap<string, Placed>, refsOf: (id: string) => ChildRef[], drawn: ReadonlyMap<string, number>): A2uiProblem | undefined {
  if (drawn.get('root')! <= MAX_SURFACE_DRAWN) return undefined;
  // Down the largest subtree to the component whose references, together, draw past the bound.
  let at = graph.get('root')!.at;
  for (let id = 'root'; ; ) {
    const largest = topRef(refsOf(id), drawn);
    if (largest === undefined || drawn.get(largest.id)! <= MAX_SURFACE_DRAWN) break;
    at = largest.at;
    id = largest.id;
  }
  return {
    path: at,
    message: `draws more than ${MAX_SURFACE_DRAWN} components in surface "${surfaceId}" (a component referred to from several places is drawn at each, a List's template at least once); refer to fewer`,
  };
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
export function checkSurfaceData(data: unknown, live?: LiveSurfaceView): A2uiProblem[] {
  const keys = messageKeysOf(data);
  if (keys.length === 1) {
    // Checked as a list of one; its paths start /0, the message's own paths do not.
    return checkA2uiMessages([data], '', live).map((p) => ({ path: p.path.slice(2), message: p.message }));
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
  out.push(...checkA2uiMessages(data.messages, '/messages', live));
  return out;
}

/**
 * An `a2ui-surface` part's data in the form every consumer reads, `{ messages: [...] }`: one
 * A2UI message becomes `{ messages: [message] }`; `undefined` when the data is already a list.
 */
export function normalizeSurfaceData(data: Readonly<Record<string, unknown>>): { messages: unknown[] } | undefined {
  return messageKeysOf(data).length === 1 ? { messages: [data] } : undefined;
}
