/**
 * The components a surface draws once its data is applied (surfaces:a2ui:drawn). a2ui.ts's tree
 * check counts a template (a List's, Row's or Column's `children: { componentId, path }`) once;
 * a renderer draws it once per element of the array its `path` resolves to, so a List over a data
 * array of 30,000 rows drew 300,000 components and froze the page. This check replays a list that
 * passed every other check and, after each `updateComponents` or `updateDataModel` of a surface
 * (a renderer may paint between messages), counts what a renderer draws from `root` with the data
 * model as the list leaves it: `@a2ui/web_core`'s own `DataModel` holds the data, and paths
 * resolve as its `DataContext` resolves them (a template's relative path from the data path of
 * the component holding it; each element is drawn at `<array path>/<index>`), so nested Lists
 * multiply. An array's `length` counts (a renderer walks every index).
 *
 * Cost: a subtree without templates is counted once per component (memoized); a template over
 * such a subtree is `length × its count`, without walking the array; only templates that hold
 * templates walk their elements, and every sum stops once it passes the bound (each element draws
 * at least its template's component). Recursion is bounded by the tree's depth, which a2ui.ts
 * has already held to MAX_SURFACE_DEPTH.
 *
 * Contract: pure (the list is not changed: a write below the root works on a copy); no problems
 * for a list within the bound. Called on lists a2ui.ts accepted, never throws on them.
 */
import { DataModel } from '@a2ui/web_core/v0_9';
import { isObject, type Obj } from './json-object.js';

/** A problem at a JSON Pointer (a2ui.ts's A2uiProblem; declared here so the two do not import each other). */
export interface DrawnProblem {
  path: string;
  message: string;
}


/** A component as applied to its surface, and the path of the message item that gave it (a2ui.ts's Placed). */
export interface PlacedComponent {
  component: Obj;
  at: string;
  /** Given by an earlier part (rebuilt): `at` is the path of the message that updates its surface, and so are its references'. */
  earlier?: boolean;
}

/** One child reference (a2ui.ts's ChildRef): the child's id, the reference's path, and a template's data path. */
export interface ComponentRef {
  id: string;
  at: string;
  /** Set for a template (`{ componentId, path }`): the data path its array is read from. */
  template?: string;
}

/** A surface as the list has built it so far. */
interface Surface {
  graph: Map<string, PlacedComponent>;
  data: DataModel;
  /** The data is the model's own copy (a write below the root may change it in place). */
  owned: boolean;
  /** What depends on the components only, kept across data updates (reset by an updateComponents). */
  shape: Shape;
}

/** Per component id: its child references (to components that exist), whether a template is below it, what it draws when none is. */
interface Shape {
  refs: Map<string, ComponentRef[]>;
  templated: Map<string, boolean>;
  plain: Map<string, number>;
}
const newShape = (): Shape => ({ refs: new Map(), templated: new Map(), plain: new Map() });

/** `DataContext.resolvePath` of @a2ui/web_core v0.9: `path` from the data path `base`. */
function resolvePath(base: string, path: string): string {
  if (path.startsWith('/')) return path;
  if (path === '' || path === '.') return base;
  let b = base.endsWith('/') && base.length > 1 ? base.slice(0, -1) : base;
  if (b === '/') b = '';
  return `${b}/${path}`;
}

/** One message's key and body (`undefined` for what is not a message). */
function messageOf(m: unknown): { key: string; body: Obj } | undefined {
  if (!isObject(m)) return undefined;
  const [key] = Object.keys(m).filter((k) => k !== 'version');
  const body = key === undefined ? undefined : m[key];
  return key !== undefined && isObject(body) ? { key, body } : undefined;
}

/** Applies an updateComponents or updateDataModel body to `s`, each component placed at `at(j)`; false for any other message. */
function apply(s: Surface, key: string, body: Obj, at: (j: number) => string, earlier = false): boolean {
  if (key === 'updateComponents' && Array.isArray(body.components)) {
    s.shape = newShape();
    body.components.forEach((c: unknown, j) => {
      if (isObject(c) && typeof c.id === 'string') s.graph.set(c.id, { component: c, at: at(j), ...(earlier ? { earlier } : {}) });
    });
    return true;
  }
  if (key !== 'updateDataModel') return false;
  const path = typeof body.path === 'string' && body.path !== '' ? body.path : '/';
  if (path === '/') {
    // The value becomes the model as it is, and is not written into: no copy.
    s.data.set('/', body.value);
    s.owned = false;
  } else {
    if (!s.owned) s.data.set('/', structuredClone(s.data.get('/')));
    s.owned = true;
    s.data.set(path, structuredClone(body.value));
  }
  return true;
}

const newSurface = (): Surface => ({ graph: new Map(), data: new DataModel(), owned: true, shape: newShape() });

/**
 * Problems of a list's drawn components with its data (at most one per surface), paths prefixed
 * by `base`. `refsOf` gives a component's child references (a2ui.ts's `childRefs`); `max` is
 * MAX_SURFACE_DRAWN. `rebuild`, when given, returns the messages that rebuild a surface the list
 * updates without creating it (one an earlier part created, as the client holds it, fresh
 * copies): the list's updates are then judged over it, its own components placed at the path of
 * the message that first updates it. Without it, such an update is not judged here.
 */
export function drawnWithData(
  messages: readonly unknown[],
  base: string,
  max: number,
  refsOf: (p: PlacedComponent) => ComponentRef[],
  rebuild?: (surfaceId: string) => readonly unknown[] | undefined,
): DrawnProblem[] {
  const surfaces = new Map<string, Surface>();
  const reported = new Set<string>();
  const out: DrawnProblem[] = [];
  messages.forEach((m, i) => {
    const msg = messageOf(m);
    if (msg === undefined) return;
    const { key, body } = msg;
    const surfaceId = String(body.surfaceId);
    if (key === 'createSurface') {
      surfaces.set(surfaceId, newSurface());
      reported.delete(surfaceId); // a surface created again is judged again
    }
    if (key === 'deleteSurface') surfaces.delete(surfaceId);
    let s = surfaces.get(surfaceId);
    if (s === undefined && key !== 'deleteSurface' && rebuild !== undefined) {
      const earlier = rebuild(surfaceId);
      if (earlier !== undefined) {
        surfaces.set(surfaceId, (s = newSurface()));
        for (const e of earlier) {
          const em = messageOf(e);
          if (em !== undefined) apply(s, em.key, em.body, () => `${base}/${i}/${key}`, true);
        }
        s.owned = true; // fresh copies: written into by no one else
      }
    }
    // A surface the list did not create and nothing rebuilds: its components are not here.
    if (s === undefined) return;
    if (!apply(s, key, body, (j) => `${base}/${i}/updateComponents/components/${j}`)) return;
    if (reported.has(surfaceId) || !s.graph.has('root')) return;
    const problem = new Count(s, max, refsOf).problem(surfaceId, i);
    if (problem !== undefined) {
      out.push(problem);
      reported.add(surfaceId);
    }
  });
  return out;
}

/** One judgement of one surface: counts memoized for this graph and data. */
class Count {
  private readonly refs: Map<string, ComponentRef[]>;
  private readonly templated: Map<string, boolean>;
  private readonly plain: Map<string, number>;
  private readonly at = new Map<string, Map<string, number>>();
  /** A sum stopped past the bound: the total is at least what it says. */
  private cut = false;

  constructor(
    private readonly s: Surface,
    private readonly max: number,
    private readonly refsOf: (p: PlacedComponent) => ComponentRef[],
  ) {
    ({ refs: this.refs, templated: this.templated, plain: this.plain } = s.shape);
  }

  private children(id: string): ComponentRef[] {
    let r = this.refs.get(id);
    if (r === undefined) this.refs.set(id, (r = this.refsOf(this.s.graph.get(id)!).filter((c) => this.s.graph.has(c.id))));
    return r;
  }

  /** The subtree below `id` holds a template (what it draws depends on the data). */
  private hasTemplate(id: string): boolean {
    let t = this.templated.get(id);
    if (t === undefined) this.templated.set(id, (t = this.children(id).some((c) => c.template !== undefined || this.hasTemplate(c.id))));
    return t;
  }

  /** What a subtree without templates draws (within the bound: a2ui.ts's tree check has passed). */
  private plainCount(id: string): number {
    let n = this.plain.get(id);
    if (n === undefined) this.plain.set(id, (n = this.children(id).reduce((sum, c) => sum + this.plainCount(c.id), 1)));
    return n;
  }

  /** The array a template draws its component over, from the data path `path`, and that array's path. */
  private array(ref: ComponentRef, path: string): { path: string; length: number } {
    const at = resolvePath(path, ref.template!);
    let v: unknown;
    try {
      v = this.s.data.get(at);
    } catch {
      v = undefined; // a forbidden segment: a renderer reads nothing there either
    }
    return { path: at, length: Array.isArray(v) ? v.length : 0 };
  }

  /** What `id` draws at the data path `path`, itself included. */
  count(id: string, path: string): number {
    if (!this.hasTemplate(id)) return this.plainCount(id);
    let byPath = this.at.get(id);
    const known = byPath?.get(path);
    if (known !== undefined) return known;
    let n = 1;
    const children = this.children(id);
    for (let j = 0; j < children.length; j++) {
      n += this.ref(children[j]!, path);
      if (n > this.max) {
        if (j < children.length - 1) this.cut = true;
        break;
      }
    }
    if (byPath === undefined) this.at.set(id, (byPath = new Map()));
    byPath.set(path, n);
    return n;
  }

  /** What one reference of a component at the data path `path` draws. */
  private ref(c: ComponentRef, path: string): number {
    if (c.template === undefined) return this.count(c.id, path);
    const arr = this.array(c, path);
    if (!this.hasTemplate(c.id)) return arr.length * this.plainCount(c.id);
    let n = 0;
    let k = 0;
    while (k < arr.length && n <= this.max) n += this.count(c.id, `${arr.path}/${k++}`);
    if (k < arr.length) this.cut = true;
    return n;
  }

  /** The child reference of `id` at the data path `path` that draws most (among those whose drawing depends on the data, with `data`). */
  private largest(id: string, path: string, data = false): { ref: ComponentRef; n: number } | undefined {
    let top: { ref: ComponentRef; n: number } | undefined;
    for (const ref of this.children(id)) {
      if (data && ref.template === undefined && !this.hasTemplate(ref.id)) continue;
      const n = this.ref(ref, path);
      if (top === undefined || n > top.n) top = { ref, n };
    }
    return top;
  }

  /** The problem when root draws past the bound, at the reference into the subtree that draws too many. */
  problem(surfaceId: string, message: number): DrawnProblem | undefined {
    const total = this.count('root', '/');
    if (total <= this.max) return undefined;
    let at = this.s.graph.get('root')!.at;
    let atOwner = 'root';
    let list: { owner: string; ref: ComponentRef; path: string; length: number } | undefined;
    // Down the largest subtree to the reference past the bound; through a template into an element
    // of its array when that element alone draws too many (a nested List).
    let [id, path] = ['root', '/'];
    for (;;) {
      const top = this.largest(id, path);
      if (top === undefined || top.n <= this.max) break;
      [at, atOwner] = [top.ref.at, id];
      if (top.ref.template === undefined) {
        id = top.ref.id;
        continue;
      }
      list = { owner: id, ref: top.ref, ...this.array(top.ref, path) };
      let k = 0;
      while (k < list.length && k <= this.max && this.count(top.ref.id, `${list.path}/${k}`) <= this.max) k++;
      if (k >= list.length || k > this.max) break;
      [id, path] = [top.ref.id, `${list.path}/${k}`];
    }
    // No template past the bound on its own: the largest one below where the descent stopped explains it.
    while (list === undefined) {
      const top = this.largest(id, path, true);
      if (top === undefined) break;
      if (top.ref.template !== undefined) list = { owner: id, ref: top.ref, ...this.array(top.ref, path) };
      else id = top.ref.id;
    }
    let why = 'its Lists\' templates are drawn once per element of their data';
    let fewer = 'fewer elements';
    if (list !== undefined) {
      const each = this.hasTemplate(list.ref.id) ? undefined : this.plainCount(list.ref.id);
      why = `"${list.owner}" draws its template "${list.ref.id}"${each === undefined ? '' : ` (${each} components each)`} once for each of the ${list.length} elements of the array at ${JSON.stringify(list.path)}`;
      if (each !== undefined && !this.cut) fewer = `at most ${Math.max(0, Math.floor((this.max - (total - list.length * each)) / each))} elements there`;
    }
    const owner = this.s.graph.get(atOwner)!;
    return {
      path: owner.earlier === true ? owner.at : at,
      message: `draws more than ${this.max} components in surface "${surfaceId}" with its data as message ${message} leaves it (${this.cut ? 'at least ' : ''}${total} drawn): ${why}; a surface may draw at most ${this.max}: give ${fewer} (the first ones, and how many more there are) or a summary`,
    };
  }
}
