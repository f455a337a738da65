/**
 * FilterAndDistribute: turns one AnnotatedRecord into a filtered view per registered
 * destination and hands each destination its view.
 *
 * `llm-session` (its view is the tool result) and `ui-stream` (its view is the `tool.result`
 * event's `view`) are built in and delivered by the runtime; consumers register the others
 * (`cache`, `audit`, `peer-response`, `formatter:<name>`, or their own ids).
 * Each destination has a stream of its views (`views$(id)`); a consumer's `deliver` reads it
 * through a bounded buffer, so a slow destination never holds up the turn.
 * Views share unannotated subtrees with the record's data: treat them as read-only.
 */
import { Subject, type Observable } from 'rxjs';
import { TurnstateError } from '../errors.js';
import { setOwn, type Scope } from '../types.js';
import { ContainedObservable } from './contained.js';
import { BoundedDelivery, boundedDeliveryOptions, DEFAULT_BUFFER_SIZE, type BoundedDeliveryOptions, type DeliveryOutcome } from './bounded-delivery.js';
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

/** One destination's view of one record, as its stream carries it. */
export interface DistributedView {
  readonly destination: DestinationId;
  readonly view: unknown;
  readonly meta: DistributionMeta;
}

export interface Destination extends BoundedDeliveryOptions {
  id: DestinationId;
  /**
   * Receives this destination's view; not called when nothing of the record is visible to it.
   * A promise makes the destination busy until it settles: views arriving meanwhile wait in its
   * buffer (`bufferSize`, default 1024), and when that is full `overflow` (default `drop-oldest`)
   * drops one and `onOverflow` hears of it. The turn never waits for a destination.
   * A throw or a rejected promise is reported through `onError` and affects no other destination.
   */
  deliver?: ((view: unknown, meta: DistributionMeta) => void | Promise<void>) | undefined;
}

/** Counts of one destination's deliveries since it was registered. */
export interface DestinationStats {
  delivered: number;
  failed: number;
  dropped: number;
  /** Views handed to the destination and not yet delivered, failed or dropped. */
  pending: number;
}

export interface FilterAndDistributeOptions {
  destinations?: readonly Destination[] | undefined;
  /**
   * Errors from a destination's deliver, and throws of a `views$(id)` subscriber (`meta` is then
   * the latest view's put on that stream). Default: a process warning.
   */
  onError?: ((error: unknown, destination: string, meta: DistributionMeta) => void) | undefined;
  /**
   * A view a full buffer dropped (`dropped` is the destination's running count). Default: one
   * process warning (code TURNSTATE_DESTINATION_OVERFLOW) per burst, a burst ending when the
   * destination's buffer is empty again.
   */
  onOverflow?: ((destination: string, dropped: number, meta: DistributionMeta) => void) | undefined;
}

export interface Distribution {
  /** One entry per registered destination; `undefined` when nothing is visible to it. */
  views: Map<string, unknown>;
}

/** Destinations every FilterAndDistribute has; their delivery is the runtime's. */
export const BUILT_IN_DESTINATIONS = ['llm-session', 'ui-stream'] as const;

const HIDDEN: unique symbol = Symbol('hidden');
type Hidden = typeof HIDDEN;

interface Entry {
  destination: Destination;
  /** The destination's stream of views (`views$(id)`). */
  stream: Subject<DistributedView>;
  /** The buffer in front of its deliver (the same one `deliverBounded` uses). */
  delivery: BoundedDelivery<DistributedView> | undefined;
  stats: DestinationStats;
  /** A burst of drops is under way (for the default warning). */
  overflowing: boolean;
  /** The meta of the latest view put on `stream` (what a throwing `views$` subscriber is reported with). */
  lastMeta: DistributionMeta | undefined;
}

/** The meta a `views$` subscriber's throw is reported with when no view was ever put on its stream. */
const NO_META: DistributionMeta = Object.freeze({ sessionId: '', turnId: '', actor: '', tool: '', callId: '' });

export class FilterAndDistribute {
  private readonly entries = new Map<string, Entry>();
  private readonly onError: (error: unknown, destination: string, meta: DistributionMeta) => void;
  private readonly onOverflow: (destination: string, dropped: number, meta: DistributionMeta) => void;

  constructor(opts: FilterAndDistributeOptions = {}) {
    this.onError = opts.onError ?? defaultOnError;
    this.onOverflow = opts.onOverflow ?? ((destination, dropped) => this.warnOverflow(destination, dropped));
    for (const id of BUILT_IN_DESTINATIONS) this.entries.set(id, newEntry({ id }));
    for (const d of opts.destinations ?? []) this.register(d);
  }

  /**
   * Adds a destination. Throws `router.destination_invalid` for a malformed id or delivery
   * option and `router.destination_exists` for an id already registered (built-ins included).
   * Returns a function that removes it again (its buffered views are discarded).
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
    let delivery: Required<BoundedDeliveryOptions>;
    try {
      delivery = boundedDeliveryOptions(destination, `FilterAndDistribute.register("${id}")`);
    } catch (e) {
      throw new TurnstateError('router.destination_invalid', (e as Error).message);
    }
    if (this.entries.has(id)) {
      const builtIn = (BUILT_IN_DESTINATIONS as readonly string[]).includes(id);
      throw new TurnstateError(
        'router.destination_exists',
        builtIn
          ? `FilterAndDistribute.register(): "${id}" is built in; the runtime delivers its view`
          : `FilterAndDistribute.register(): destination "${id}" is already registered`,
      );
    }
    const entry = newEntry(destination);
    const deliver = destination.deliver;
    if (deliver !== undefined) {
      entry.delivery = new BoundedDelivery<DistributedView>((v) => deliver.call(destination, v.view, v.meta), delivery, (kind, v, detail) =>
        this.outcome(entry, kind, v, detail),
      );
    }
    this.entries.set(id, entry);
    return () => {
      if (this.entries.get(id) !== entry) return;
      this.entries.delete(id);
      entry.delivery?.stop();
      entry.stream.complete();
    };
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * The stream of views a registered destination is given, built-ins included (`llm-session`
   * carries every distributed tool result's model view). Synchronous with `distribute()`;
   * completes when the destination is removed. Throws `router.destination_unknown` for an id
   * not registered. A subscriber's throw goes to `onError` (with the latest view's meta), never
   * to distribute() or the process.
   */
  views$(id: string): Observable<DistributedView> {
    const entry = this.entries.get(id);
    if (entry === undefined) {
      throw new TurnstateError('router.destination_unknown', `FilterAndDistribute.views$(): no destination "${id}" is registered (registered: ${this.ids().join(', ')})`);
    }
    return new ContainedObservable((e) => this.report(e, id, entry.lastMeta ?? NO_META), entry.stream);
  }

  /** Delivery counts of a registered destination; undefined for an unknown id. */
  stats(id: string): DestinationStats | undefined {
    const s = this.entries.get(id)?.stats;
    return s === undefined ? undefined : { ...s };
  }

  /** The view of `record` for one destination id (registered or not); undefined when nothing is visible. */
  view(record: AnnotatedRecord, destination: string): unknown {
    return filterView(record, destination);
  }

  /**
   * Computes every registered destination's view and returns them (the llm-session view is the
   * tool result, so it is there synchronously), then puts each visible view on its destination's
   * stream. A synchronous deliver runs before this returns; an async one is buffered and never
   * awaited.
   */
  distribute(record: AnnotatedRecord, meta: DistributionMeta): Distribution {
    const d = this.viewsOf(record);
    this.send(d, meta);
    return d;
  }

  /**
   * distribute()'s first half: every registered destination's view, handed to no one yet. The
   * router checks the llm-session view (it must serialise) before `send`: a call the model is
   * told failed is never distributed as a success.
   * @internal
   */
  viewsOf(record: AnnotatedRecord): Distribution {
    if (!isAnnotatedRecord(record)) {
      throw new TurnstateError('router.not_annotated', 'FilterAndDistribute.distribute(): expected an AnnotatedRecord (see annotate())');
    }
    const root = compileAnnotations(record.fields);
    const active = [root];
    const views = new Map<string, unknown>();
    for (const id of this.entries.keys()) {
      const v = walk(record.data, active, record.default, id);
      views.set(id, v === HIDDEN ? undefined : v);
    }
    return { views };
  }

  /**
   * distribute()'s second half: each visible view of `viewsOf()` onto its destination's stream and
   * buffer, in registration order. Never throws (subscribers are contained, buffers never throw).
   * @internal
   */
  send({ views }: Distribution, meta: DistributionMeta): void {
    for (const [id, entry] of this.entries) {
      const observed = entry.stream.observed;
      if (entry.delivery === undefined && !observed) continue;
      const view = views.get(id);
      if (view === undefined) continue;
      const dv: DistributedView = { destination: id, view, meta };
      if (observed) {
        entry.lastMeta = meta;
        entry.stream.next(dv);
      }
      if (entry.delivery !== undefined) {
        // A burst of drops ends when the buffer has emptied (checked here, where the next drop
        // would be decided); a buffer of 0 is always empty, so there the burst ends when nothing
        // is pending (see outcome()).
        if (entry.overflowing && entry.delivery.waiting === 0 && entry.delivery.bufferSize > 0) entry.overflowing = false;
        entry.stats.pending++;
        entry.delivery.push(dv);
      }
    }
  }

  private outcome(entry: Entry, kind: DeliveryOutcome<DistributedView>['kind'], v: DistributedView, error: unknown): void {
    const s = entry.stats;
    s.pending--;
    if (kind === 'delivered') s.delivered++;
    else if (kind === 'failed') {
      s.failed++;
      this.report(error, entry.destination.id, v.meta);
    } else {
      s.dropped++;
      try {
        this.onOverflow(entry.destination.id, s.dropped, v.meta);
      } catch {
        // onOverflow is the last resort; a throw here has nowhere else to go.
      }
    }
    if (s.pending === 0) entry.overflowing = false;
  }

  private warnOverflow(destination: string, dropped: number): void {
    const entry = this.entries.get(destination);
    if (entry === undefined || entry.overflowing) return;
    entry.overflowing = true;
    process.emitWarning(
      `destination "${destination}" is slower than the router: its buffer (${entry.destination.bufferSize ?? DEFAULT_BUFFER_SIZE}) is full and views are being dropped (${dropped} so far, policy ${entry.destination.overflow ?? 'drop-oldest'})`,
      { code: 'TURNSTATE_DESTINATION_OVERFLOW' },
    );
  }

  private report(error: unknown, destination: string, meta: DistributionMeta): void {
    try {
      this.onError(error, destination, meta);
    } catch {
      // onError is the last resort; a throw here has nowhere else to go.
    }
  }
}

function newEntry(destination: Destination): Entry {
  return {
    destination,
    stream: new Subject<DistributedView>(),
    delivery: undefined,
    stats: { delivered: 0, failed: 0, dropped: 0, pending: 0 },
    overflowing: false,
    lastMeta: undefined,
  };
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
    setOwn(out, key, v);
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
