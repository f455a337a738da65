/**
 * FilterAndDistribute: turns one AnnotatedRecord into a filtered view per registered
 * destination and hands each destination its view.
 *
 * `llm-session` (its view is the tool result) and `ui-stream` (its view is the `tool.result`
 * event's `view`) are built in and delivered by the runtime; consumers register the others
 * (`cache`, `audit`, `peer-response`, `formatter:<name>`, or their own ids).
 * Views share unannotated subtrees with the record's data: treat them as read-only.
 */
import { TurnstateError } from '../errors.js';
import type { Scope } from '../types.js';
import {
  audienceIncludes,
  compileAnnotations,
  isAnnotatedRecord,
  type AnnotatedRecord,
  type AnnotationNode,
  type Audience,
  type DestinationId,
} from './annotated.js';

/** What a destination learns about the call that produced the record. */
export interface DistributionMeta {
  sessionId: string;
  turnId: string;
  actor: string;
  tool: string;
  callId: string;
  scope?: Scope;
  /** The record's `dataKind`, when it has one. */
  dataKind?: string;
}

export interface Destination {
  id: DestinationId;
  /**
   * Receives this destination's view; not called when nothing of the record is visible to it.
   * A throw or a rejected promise is reported through `onError` and affects no other destination.
   */
  deliver?(view: unknown, meta: DistributionMeta): void | Promise<void>;
}

export interface FilterAndDistributeOptions {
  destinations?: readonly Destination[];
  /** Errors from a destination's deliver. Default: a process warning. */
  onError?(error: unknown, destination: string, meta: DistributionMeta): void;
}

export interface Distribution {
  /** One entry per registered destination; `undefined` when nothing is visible to it. */
  views: Map<string, unknown>;
}

/** Destinations every FilterAndDistribute has; their delivery is the runtime's. */
export const BUILT_IN_DESTINATIONS = ['llm-session', 'ui-stream'] as const;

const HIDDEN: unique symbol = Symbol('hidden');
type Hidden = typeof HIDDEN;

export class FilterAndDistribute {
  private readonly destinations = new Map<string, Destination>();
  private readonly onError: (error: unknown, destination: string, meta: DistributionMeta) => void;

  constructor(opts: FilterAndDistributeOptions = {}) {
    this.onError = opts.onError ?? defaultOnError;
    for (const id of BUILT_IN_DESTINATIONS) this.destinations.set(id, { id });
    for (const d of opts.destinations ?? []) this.register(d);
  }

  /**
   * Adds a destination. Throws `router.destination_invalid` for a malformed id and
   * `router.destination_exists` for an id already registered (built-ins included).
   * Returns a function that removes it again.
   */
  register(destination: Destination): () => void {
    const id = destination?.id;
    if (typeof id !== 'string' || id === '' || id.includes('*') || id === 'formatter:') {
      throw new TurnstateError(
        'router.destination_invalid',
        `FilterAndDistribute.register(): destination id ${JSON.stringify(id)} is invalid: use a non-empty id without '*', e.g. 'audit' or 'formatter:email'`,
      );
    }
    if (destination.deliver !== undefined && typeof destination.deliver !== 'function') {
      throw new TurnstateError('router.destination_invalid', `FilterAndDistribute.register(): "${id}".deliver must be a function`);
    }
    if (this.destinations.has(id)) {
      const builtIn = (BUILT_IN_DESTINATIONS as readonly string[]).includes(id);
      throw new TurnstateError(
        'router.destination_exists',
        builtIn
          ? `FilterAndDistribute.register(): "${id}" is built in; the runtime delivers its view`
          : `FilterAndDistribute.register(): destination "${id}" is already registered`,
      );
    }
    this.destinations.set(id, destination);
    return () => {
      if (this.destinations.get(id) === destination) this.destinations.delete(id);
    };
  }

  has(id: string): boolean {
    return this.destinations.has(id);
  }

  ids(): string[] {
    return [...this.destinations.keys()];
  }

  /** The view of `record` for one destination id (registered or not); undefined when nothing is visible. */
  view(record: AnnotatedRecord, destination: string): unknown {
    return filterView(record, destination);
  }

  /**
   * Computes every registered destination's view, then calls each destination's deliver
   * with its view. Synchronous: async delivers run on, their rejections go to onError.
   */
  distribute(record: AnnotatedRecord, meta: DistributionMeta): Distribution {
    if (!isAnnotatedRecord(record)) {
      throw new TurnstateError('router.not_annotated', 'FilterAndDistribute.distribute(): expected an AnnotatedRecord (see annotate())');
    }
    const root = compileAnnotations(record.fields);
    const active = [root];
    const views = new Map<string, unknown>();
    for (const id of this.destinations.keys()) {
      const v = walk(record.data, active, record.default, id);
      views.set(id, v === HIDDEN ? undefined : v);
    }
    for (const d of this.destinations.values()) {
      if (d.deliver === undefined) continue;
      const view = views.get(d.id);
      if (view === undefined) continue;
      try {
        const r = d.deliver(view, meta);
        if (r !== undefined && typeof (r as Promise<void>).then === 'function') {
          (r as Promise<void>).then(undefined, (e: unknown) => this.report(e, d.id, meta));
        }
      } catch (e) {
        this.report(e, d.id, meta);
      }
    }
    return { views };
  }

  private report(error: unknown, destination: string, meta: DistributionMeta): void {
    try {
      this.onError(error, destination, meta);
    } catch {
      // onError is the last resort; a throw here has nowhere else to go.
    }
  }
}

/** The view of `record` for destination `dest`; undefined when nothing is visible to it. */
export function filterView(record: AnnotatedRecord, dest: string): unknown {
  const v = walk(record.data, [compileAnnotations(record.fields)], record.default, dest);
  return v === HIDDEN ? undefined : v;
}

function defaultOnError(error: unknown, destination: string): void {
  const msg = error instanceof Error ? error.message : String(error);
  process.emitWarning(`destination "${destination}" failed to deliver: ${msg}`, { code: 'TURNSTATE_DESTINATION_ERROR' });
}

/**
 * The visible part of `value` for `dest`. `active` are the annotation nodes matching this
 * path, most specific first; `inherited` the audience of the nearest annotated ancestor.
 */
function walk(value: unknown, active: readonly AnnotationNode[], inherited: Audience, dest: string): unknown | Hidden {
  let own: Audience | undefined;
  let deeper = false;
  for (let i = 0; i < active.length; i++) {
    const n = active[i]!;
    if (own === undefined) own = n.audience;
    if (n.children !== undefined || n.star !== undefined) deeper = true;
  }
  own ??= inherited;
  const visible = audienceIncludes(own, dest);
  if (!deeper || typeof value !== 'object' || value === null) return visible ? value : HIDDEN;
  if (!visible && !grantsBelow(active, dest)) return HIDDEN;

  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      const v = walk(value[i], childNodes(active, String(i)), own, dest);
      if (v !== HIDDEN) out.push(v);
    }
    return !visible && out.length === 0 ? HIDDEN : out;
  }
  const src = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const key of Object.keys(src)) {
    const v = walk(src[key], childNodes(active, key), own, dest);
    if (v === HIDDEN) continue;
    any = true;
    if (key === '__proto__') Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    else out[key] = v;
  }
  return !visible && !any ? HIDDEN : out;
}

function grantsBelow(active: readonly AnnotationNode[], dest: string): boolean {
  for (const n of active) for (const a of n.below) if (audienceIncludes(a, dest)) return true;
  return false;
}

/** Literal child before `*` child, parents in order: earlier literal segments win. */
function childNodes(active: readonly AnnotationNode[], seg: string): readonly AnnotationNode[] {
  let out: AnnotationNode[] | undefined;
  for (const n of active) {
    const lit = n.children?.get(seg);
    if (lit !== undefined) (out ??= []).push(lit);
    if (n.star !== undefined) (out ??= []).push(n.star);
  }
  return out ?? NO_NODES;
}

const NO_NODES: readonly AnnotationNode[] = [];
