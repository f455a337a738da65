/**
 * A session's live surfaces: the A2UI surfaces its published `a2ui-surface` parts created (an
 * actor's respond() parts, the surface templates' parts, a peer's) and no later part deleted, each
 * as a client that applies every part of the conversation to one `MessageProcessor` holds it:
 * the createSurface, the components by id, the data model (docs/concepts/surfaces.md,
 * surfaces:live).
 *
 * A fold over the session's `part.received` events (`apply`, in seq order), so it is the same
 * after a restart or passivation: the journal keeps it as it commits and rebuilds it from the
 * store when it has none (host/journal.ts). The respond() check of a later part reads it
 * (`LiveSurfaceView`, checkSurfaceData): an update of a live surface needs no createSurface, and
 * a createSurface of a live id is refused. What it applies was checked before it was published;
 * a message it cannot apply (a peer's, say) is skipped, as a renderer skips what it refuses.
 */
import { DataModel } from '@a2ui/web_core/v0_9';
import type { LiveSurfaceView } from '../registries/types.js';
import type { SessionEvent } from '../types.js';
import { isObject, type Obj } from './json-object.js';


interface LiveSurface {
  /** The createSurface body (surfaceId, catalogId, theme, sendDataModel). */
  create: Obj;
  /** Components by id, each as a client holds it (`{ id, component, ...properties }`). */
  components: Map<string, Obj>;
  /** The data model's root (undefined until an updateDataModel sets it). */
  data: unknown;
}

export class LiveSurfaces implements LiveSurfaceView {
  /**
   * Live surfaces by id, in creation order. Every new session keeps one of these from its start,
   * and most never show a surface: the map is made with the first createSurface.
   */
  private surfaces: Map<string, LiveSurface> | undefined;
  /** The seq of the last event applied (events at or before it are skipped). */
  seq = 0;

  has(surfaceId: string): boolean {
    return this.surfaces?.has(surfaceId) ?? false;
  }

  ids(): string[] {
    return this.surfaces === undefined ? [] : [...this.surfaces.keys()];
  }

  rebuild(surfaceId: string): unknown[] | undefined {
    const s = this.surfaces?.get(surfaceId);
    if (s === undefined) return undefined;
    const out: unknown[] = [{ version: 'v0.9', createSurface: s.create }];
    if (s.components.size > 0) out.push({ version: 'v0.9', updateComponents: { surfaceId, components: [...s.components.values()] } });
    if (s.data !== undefined) out.push({ version: 'v0.9', updateDataModel: { surfaceId, path: '/', value: s.data } });
    return structuredClone(out);
  }

  /** Applies the session's events after `seq` (only `a2ui-surface` parts change anything). */
  applyEvents(events: readonly SessionEvent[]): void {
    for (const e of events) {
      if (e.seq !== 0 && e.seq <= this.seq) continue;
      if (e.seq > this.seq) this.seq = e.seq;
      if (e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface' && isObject(e.part.data)) this.apply(e.part.data);
    }
  }

  /** Applies one part's data (`{ messages }`, or one message), message by message. */
  apply(data: Readonly<Obj>): void {
    // One message as the data is a list of one (normalizeSurfaceData delivers it so; a stored part may predate that).
    const messages = 'messages' in data ? data.messages : [data];
    if (!Array.isArray(messages)) return;
    for (const m of messages) {
      try {
        this.applyMessage(m);
      } catch {
        // What a renderer refuses it does not apply either.
      }
    }
  }

  private applyMessage(m: unknown): void {
    if (!isObject(m)) return;
    if (isObject(m.createSurface)) {
      const body = structuredClone(m.createSurface);
      const id = body.surfaceId;
      // A re-create of a live id (a part published before surfaces:live:recreate) replaces it, as the demo page does.
      if (typeof id === 'string') {
        this.surfaces ??= new Map();
        this.surfaces.delete(id);
        this.surfaces.set(id, { create: body, components: new Map(), data: undefined });
      }
      return;
    }
    if (isObject(m.deleteSurface)) {
      if (typeof m.deleteSurface.surfaceId === 'string') this.surfaces?.delete(m.deleteSurface.surfaceId);
      return;
    }
    if (isObject(m.updateComponents)) {
      const s = typeof m.updateComponents.surfaceId === 'string' ? this.surfaces?.get(m.updateComponents.surfaceId) : undefined;
      if (s === undefined || !Array.isArray(m.updateComponents.components)) return;
      for (const c of structuredClone(m.updateComponents.components) as unknown[]) {
        if (!isObject(c) || typeof c.id !== 'string' || c.id === '') continue;
        // As MessageProcessor applies it: a component keeps its type unless the message names another; its properties are replaced.
        const { id, component, ...props } = c;
        const type = typeof component === 'string' && component !== '' ? component : s.components.get(id)?.component;
        if (type !== undefined) s.components.set(id, { id, component: type, ...props });
      }
      return;
    }
    if (isObject(m.updateDataModel)) {
      const body = m.updateDataModel;
      const s = typeof body.surfaceId === 'string' ? this.surfaces?.get(body.surfaceId) : undefined;
      if (s === undefined) return;
      const path = typeof body.path === 'string' && body.path !== '' ? body.path : '/';
      // The processor's own data model decides what a path means (it throws on a path it refuses).
      const model = new DataModel();
      model.set('/', s.data === undefined ? undefined : structuredClone(s.data));
      model.set(path, body.value === undefined ? undefined : structuredClone(body.value));
      s.data = model.get('/');
    }
  }
}

/** Why an update names a surface that is neither created in the list nor live (surfaces:a2ui:order, surfaces:live:update). */
export function notCreated(surfaceId: string, live: LiveSurfaceView | undefined): string {
  const ids = live?.ids() ?? [];
  const shown = ids.length === 0 ? 'this session has none' : `the live ones are ${ids.slice(-10).map((id) => JSON.stringify(id)).join(', ')}${ids.length > 10 ? ` (the last 10 of ${ids.length})` : ''}`;
  return `surface "${surfaceId}" is not created before this message: put its createSurface first in the same list (a MessageProcessor refuses updates of a surface it has not created). Only a live surface (one an earlier part created and none deleted since) is updated without a createSurface, and "${surfaceId}" is not live: ${shown}`;
}

/** A live surface's components as the client holds them, placed at the path of the message that first refers to them. */
export function liveGraph(live: LiveSurfaceView, surfaceId: string, at: string): Map<string, { component: Obj; at: string }> {
  const graph = new Map<string, { component: Obj; at: string }>();
  for (const m of live.rebuild(surfaceId) ?? []) {
    const body = isObject(m) && isObject(m.updateComponents) ? m.updateComponents : undefined;
    if (body !== undefined && Array.isArray(body.components)) for (const c of body.components) if (isObject(c) && typeof c.id === 'string') graph.set(c.id, { component: c, at });
  }
  return graph;
}
