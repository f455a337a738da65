/**
 * A machine compiled for the turn loop: the same XState machine definition (its state nodes,
 * transitions, guards and action specs), executed without an actor.
 *
 * XState's interpreter is general (parallel regions, history, invocations, delays, spawned
 * children, inspection) and the turn loop pays for that generality on every event: a new
 * snapshot, a tag set, transition domains recomputed. The session machine uses none of it, so
 * `compileMachine` resolves the definition once into per-state tables — each event's candidate
 * transitions in XState's selection order, each transition's exit and entry path — and a
 * `CompiledRun` steps through them: select the first enabled transition from the active leaf
 * outwards, exit up to the transition's domain, run its actions, enter the target and its
 * initial descendants, then take eventless (`always`) transitions until none is enabled;
 * events the machine sends itself are handled after the current one, in order. Context updates
 * are immutable (a new object per assign), as in XState, and the persisted snapshot has
 * XState's shape: either side restores the other's.
 *
 * A machine that uses anything outside that subset (parallel or history states, final states,
 * invocations, delayed transitions, wildcard events, re-entering transitions, several targets,
 * an action without a spec, a guard without an implementation) does not compile
 * (`compileMachine` returns null) and its sessions run on an XState actor. An inspected session
 * always runs on an actor. test/machines/compiled.test.ts drives both in lock step over seeded
 * walks of every event kind and compares state, context, effects and `can()` after each event;
 * test/machines/effects.test.ts checks every generated path's effects on both.
 */
import type { AnyStateMachine } from 'xstate';
import type { ActionOps, ActionSpecs } from './action-specs.js';

type Ctx = Record<string, unknown>;
type Ev = { readonly type: string };
type Effect = { readonly type: string };

/** One action bound to its spec and params: applied to a run. */
type Act = (run: CompiledRun, event: Ev) => void;
type Guard = (context: Ctx, event: Ev) => boolean;

interface Transition {
  guard: Guard | null;
  actions: Act[];
  /** null: a targetless transition (actions only, nothing exited or entered). */
  target: Node | null;
  /** The transition's domain: states below it are exited, the target path below it entered. */
  domain: Node | null;
  /** The states entered, outermost first, ending in the atomic state the run rests in. */
  enter: Node[];
}

interface Node {
  id: string;
  parent: Node | null;
  children: Map<string, Node>;
  entry: Act[];
  exit: Act[];
  on: Map<string, Transition[]>;
  always: Transition[] | null;
  /** For an atomic node: its state value (frozen, shared by every run). */
  value: unknown;
  /** For a compound node: the atomic state entering it rests in. */
  initialLeaf: Node | null;
}

export interface CompiledMachine {
  readonly machine: AnyStateMachine;
  readonly root: Node;
  /** Every node by its XState id (`session.turn.awaiting`). */
  readonly byId: Map<string, Node>;
}

/** The persisted snapshot, in XState's shape (`actor.getPersistedSnapshot()`). */
export interface PersistedMachineSnapshot {
  status: 'active';
  value: unknown;
  historyValue: Record<string, never>;
  context: Ctx;
  children: Record<string, never>;
}

class Unsupported extends Error {}

const cache = new WeakMap<AnyStateMachine, CompiledMachine | null>();

/** Compiles `machine` with the specs of its actions; null when it uses more than this executor runs. */
export function compileMachine(machine: AnyStateMachine, specs: ActionSpecs): CompiledMachine | null {
  let c = cache.get(machine);
  if (c === undefined) {
    try {
      c = compile(machine, specs);
    } catch (err) {
      if (!(err instanceof Unsupported)) throw err;
      c = null;
    }
    cache.set(machine, c);
  }
  return c;
}

function compile(machine: AnyStateMachine, specs: ActionSpecs): CompiledMachine {
  const guards = (machine.implementations.guards ?? {}) as Record<string, unknown>;
  const byId = new Map<string, Node>();
  const nodes = new Map<unknown, Node>();

  const bindGuard = (g: unknown): Guard | null => {
    if (g === undefined || g === null) return null;
    const ref = typeof g === 'string' ? { type: g, params: undefined } : (g as { type?: unknown; params?: unknown });
    const impl = typeof ref.type === 'string' ? guards[ref.type] : undefined;
    if (typeof impl !== 'function' || typeof ref.params === 'function') throw new Unsupported(`guard ${String(ref.type)}`);
    const params = ref.params;
    const fn = impl as (args: { context: Ctx; event: Ev }, params: unknown) => boolean;
    return (context, event) => fn({ context, event }, params);
  };

  const bindAction = (a: unknown): Act => {
    const ref = typeof a === 'string' ? { type: a, params: undefined } : (a as { type?: unknown; params?: unknown });
    const spec = typeof ref.type === 'string' && Object.hasOwn(specs, ref.type) ? specs[ref.type] : undefined;
    if (!spec || typeof ref.params === 'function') throw new Unsupported(`action ${String(ref.type)}`);
    const params = ref.params;
    if ('assign' in spec) {
      const fn = spec.assign;
      return (run, event) => run.assign(fn({ context: run.ctx, event }, params));
    }
    if ('emit' in spec) {
      const fn = spec.emit;
      return (run, event) => run.emit(fn({ context: run.ctx, event }, params));
    }
    const fn = spec.ops;
    return (run, event) => fn({ context: run.ctx, event }, params, run);
  };

  // Nodes first (transitions point at any of them), then their transitions.
  const build = (sn: any, parent: Node | null): Node => {
    if (sn.type !== 'compound' && sn.type !== 'atomic') throw new Unsupported(`${sn.type} state ${sn.id}`);
    if ((sn.invoke?.length ?? 0) > 0 || (sn.after?.length ?? 0) > 0) throw new Unsupported(`invocation or delay in ${sn.id}`);
    const node: Node = { id: sn.id, parent, children: new Map(), entry: [], exit: [], on: new Map(), always: null, value: undefined, initialLeaf: null };
    nodes.set(sn, node);
    byId.set(sn.id, node);
    for (const [key, child] of Object.entries(sn.states as Record<string, unknown>)) node.children.set(key, build(child, node));
    return node;
  };
  const root = build(machine.root, null);

  const ancestors = (n: Node): Node[] => {
    const out: Node[] = [];
    for (let p = n.parent; p; p = p.parent) out.push(p);
    return out;
  };
  const isDescendant = (n: Node, of: Node): boolean => ancestors(n).includes(of);
  const initialLeaf = (n: Node, sn: any): Node[] => {
    if (n.children.size === 0) return [];
    const target = sn.initial?.target;
    if (!Array.isArray(target) || target.length !== 1) throw new Unsupported(`initial of ${n.id}`);
    const child = nodes.get(target[0])!;
    if (child.parent !== n) throw new Unsupported(`deep initial of ${n.id}`);
    return [child, ...initialLeaf(child, target[0])];
  };

  const bindTransition = (t: any, source: Node): Transition => {
    if (t.reenter) throw new Unsupported(`re-entering transition in ${source.id}`);
    const actions = (t.actions ?? []).map(bindAction);
    const guard = bindGuard(t.guard);
    const targets: unknown[] | undefined = t.target;
    if (!targets || targets.length === 0) return { guard, actions, target: null, domain: null, enter: [] };
    if (targets.length !== 1) throw new Unsupported(`several targets in ${source.id}`);
    const targetSn = targets[0];
    const target = nodes.get(targetSn);
    if (!target) throw new Unsupported(`target outside the machine from ${source.id}`);
    // XState's transition domain: the source itself when the target lies within it, else the
    // least common compound ancestor of source and target.
    let domain: Node;
    if (target === source || isDescendant(target, source)) domain = source;
    else domain = ancestors(source).find((a) => isDescendant(target, a))!;
    if (target === domain) throw new Unsupported(`transition to its own domain in ${source.id}`);
    const path: Node[] = [];
    for (let n: Node | null = target; n && n !== domain; n = n.parent) path.unshift(n);
    const enter = [...path, ...initialLeaf(target, targetSn)];
    return { guard, actions, target, domain, enter };
  };

  for (const [sn, node] of nodes) {
    const s = sn as any;
    if ((s.exit?.length ?? 0) > 0) node.exit = s.exit.map(bindAction);
    if ((s.entry?.length ?? 0) > 0) node.entry = s.entry.map(bindAction);
    for (const [type, list] of s.transitions as Map<string, unknown[]>) {
      if (type.includes('*')) throw new Unsupported(`wildcard event in ${node.id}`);
      node.on.set(type, list.map((t) => bindTransition(t, node)));
    }
    if (s.always?.length) node.always = s.always.map((t: unknown) => bindTransition(t, node));
    if (node.children.size === 0) node.value = valueOf(node);
    else node.initialLeaf = initialLeaf(node, s).at(-1)!;
  }
  return { machine, root, byId };
}

/** An atomic node's state value: `'idle'`, `{ turn: 'complete' }`, `{ turn: { awaiting: 'ready' } }`. */
function valueOf(leaf: Node): unknown {
  const keys: string[] = [];
  for (let n: Node | null = leaf; n && n.parent; n = n.parent) keys.unshift(n.id.slice(n.parent.id.length + 1));
  let v: unknown = keys.pop()!;
  while (keys.length) v = Object.freeze({ [keys.pop()!]: v });
  return v;
}

/** The atomic node a state value names (XState's `resolveState`: a compound node resolves to its initial leaf). */
function leafOf(c: CompiledMachine, value: unknown): Node {
  let node = c.root;
  let v = value;
  for (;;) {
    let key: string;
    if (typeof v === 'string') {
      key = v;
      v = undefined;
    } else if (v !== null && typeof v === 'object' && Object.keys(v).length === 1) {
      key = Object.keys(v)[0]!;
      v = (v as Record<string, unknown>)[key];
    } else if (v === undefined) {
      break;
    } else {
      throw new Error(`invalid state value ${JSON.stringify(value)} for machine ${c.root.id}`);
    }
    const next = node.children.get(key);
    if (!next) throw new Error(`Child state '${key}' does not exist on '${node.id}'`);
    node = next;
  }
  return node.initialLeaf ?? node;
}

/** One session's machine: its active atomic state and context. */
export class CompiledRun implements ActionOps {
  leaf: Node;
  ctx: Ctx;
  private effects: Effect[] | null = null;
  private sent: Ev[] | null = null;
  private persistedSnap: PersistedMachineSnapshot | null = null;

  constructor(
    readonly compiled: CompiledMachine,
    snapshot: { value: unknown; context: Ctx },
  ) {
    this.leaf = leafOf(compiled, snapshot.value);
    this.ctx = snapshot.context;
    if ((snapshot as { status?: unknown }).status === 'active' && (snapshot as PersistedMachineSnapshot).value === this.leaf.value) {
      this.persistedSnap = snapshot as PersistedMachineSnapshot;
    }
  }

  get value(): unknown {
    return this.leaf.value;
  }

  /** Handles `event`; its effects (and those of events the machine sends itself) go to `out`, in order. */
  handle(event: Ev, out: Effect[]): void {
    this.effects = out;
    try {
      this.macrostep(event);
      while (this.sent !== null) {
        const next = this.sent;
        this.sent = null;
        for (const e of next) this.macrostep(e);
      }
    } finally {
      this.effects = null;
      this.sent = null;
    }
  }

  /** Whether `event` would be taken now (XState's `snapshot.can`): guards run, nothing is executed. */
  can(event: Ev): boolean {
    const t = this.select(event);
    return t !== null && (t.target !== null || t.actions.length > 0);
  }

  /** XState's persisted snapshot of this run (one object while nothing changes). */
  persisted(): PersistedMachineSnapshot {
    return (this.persistedSnap ??= { status: 'active', value: this.leaf.value, historyValue: {}, context: this.ctx, children: {} });
  }

  /* ActionOps, for the action specs */
  assign(patch: object): void {
    this.ctx = { ...this.ctx, ...patch };
  }

  emit(effect: Effect): void {
    this.effects?.push(effect);
  }

  /** An event to this machine, handled after the current one. */
  send(event: Ev): void {
    (this.sent ??= []).push(event);
  }

  private select(event: Ev): Transition | null {
    for (let n: Node | null = this.leaf; n; n = n.parent) {
      const list = n.on.get(event.type);
      if (list === undefined) continue;
      for (const t of list) if (t.guard === null || t.guard(this.ctx, event)) return t;
    }
    return null;
  }

  private selectAlways(event: Ev): Transition | null {
    for (let n: Node | null = this.leaf; n; n = n.parent) {
      const list = n.always;
      if (list === null) continue;
      for (const t of list) if (t.guard === null || t.guard(this.ctx, event)) return t;
    }
    return null;
  }

  private macrostep(event: Ev): void {
    const t = this.select(event);
    if (t === null) return;
    this.microstep(t, event);
    for (let a = this.selectAlways(event); a !== null; a = this.selectAlways(event)) this.microstep(a, event);
  }

  private microstep(t: Transition, event: Ev): void {
    this.persistedSnap = null;
    if (t.target !== null) for (let n: Node | null = this.leaf; n && n !== t.domain; n = n.parent) for (const a of n.exit) a(this, event);
    for (const a of t.actions) a(this, event);
    if (t.target === null) return;
    for (const n of t.enter) for (const a of n.entry) a(this, event);
    this.leaf = t.enter[t.enter.length - 1]!;
  }
}
