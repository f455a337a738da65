/**
 * The travel desk's A2UI surface templates (docs/concepts/surfaces.md):
 *
 * - `flights` (search_flights' AnnotatedRecord kind): the flights found, one row per flight (the
 *   first MAX_FLIGHT_ROWS of them), bound by relative JSON Pointers into each item of `/flights`.
 * - `approval:book_flight` (a pending booking): the flight being booked (its departure) and the total, with an
 *   **Approve** and a **Deny** button whose actions carry the approvalId, so a click answers
 *   the approval. It is built from what the template receives (the call's arguments) and the
 *   app's timetable (static data), never from what a handler left in memory: a replay, which
 *   runs no handler, builds the same surface.
 */
import { SURFACE_APPROVE_ACTION, SURFACE_DENY_ACTION, approvalKind, type SurfaceContext, type SurfaceTemplateRegistryApi } from 'turnstate';

export interface SurfaceFlight {
  id: string;
  from: string;
  to: string;
  departs: string;
  price: number;
  currency: string;
}

/**
 * A timetabled flight: what is the same whatever was searched. The route is not (a search names
 * the destination, and may name the origin), and a booking's arguments name neither.
 */
export type ScheduledFlight = Omit<SurfaceFlight, 'from' | 'to'>;

const V = 'v0.9';

/**
 * The most flights the `flights` surface lists (the title gives how many were found). A row draws
 * 10 components, so 50 rows are about 500: far below the 5,000 a surface may draw with its data
 * (surfaces:a2ui:drawn), whatever a search returns.
 */
export const MAX_FLIGHT_ROWS = 50;

const text = (id: string, t: string | { path: string }, variant?: string) => ({ id, component: 'Text', text: t, ...(variant ? { variant } : {}) });

/** What a surface shows of a flight: its displayed fields only (the app's record also holds the audit-only supplierCost). */
function shown(f: SurfaceFlight): SurfaceFlight {
  return { id: f.id, from: f.from, to: f.to, departs: when(f.departs), price: f.price, currency: f.currency };
}

function createSurface(ctx: SurfaceContext) {
  return { version: V, createSurface: { surfaceId: ctx.surfaceId, catalogId: ctx.catalogId } };
}

/** "2026-06-12T07:40:00Z" as "2026-06-12 07:40 UTC" (the surface shows data, it does not format it). */
function when(iso: string): string {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : iso;
}

/** `timetable(flightId)`: the flight's schedule from static data (a pure lookup: templates must be pure). */
export function registerTravelDeskSurfaces(templates: SurfaceTemplateRegistryApi, timetable: (flightId: string) => ScheduledFlight | undefined): void {
  templates.register({
    kind: 'flights',
    description: 'The flights a search found.',
    build(data, ctx) {
      const found = (data as { flights?: SurfaceFlight[] }).flights ?? [];
      const flights = found.slice(0, MAX_FLIGHT_ROWS).map(shown);
      const title = `${found.length} flight${found.length === 1 ? '' : 's'} found${found.length > flights.length ? `, the first ${flights.length} shown` : ''}`;
      return [
        createSurface(ctx),
        {
          version: V,
          updateComponents: {
            surfaceId: ctx.surfaceId,
            components: [
              { id: 'root', component: 'Column', children: ['title', 'list'] },
              text('title', title, 'h3'),
              { id: 'list', component: 'List', children: { componentId: 'row', path: '/flights' } },
              { id: 'row', component: 'Row', justify: 'spaceBetween', children: ['f-id', 'f-route', 'f-departs', 'f-price'] },
              text('f-id', { path: 'id' }),
              { id: 'f-route', component: 'Row', children: ['f-from', 'f-arrow', 'f-to'] },
              text('f-from', { path: 'from' }),
              text('f-arrow', '→'),
              text('f-to', { path: 'to' }),
              text('f-departs', { path: 'departs' }),
              { id: 'f-price', component: 'Row', children: ['f-amount', 'f-currency'] },
              text('f-amount', { path: 'price' }),
              text('f-currency', { path: 'currency' }),
            ],
          },
        },
        { version: V, updateDataModel: { surfaceId: ctx.surfaceId, path: '/', value: { flights } } },
      ];
    },
  });

  templates.register({
    kind: approvalKind('book_flight'),
    description: 'A booking waiting for approval: the flight, the total, Approve and Deny.',
    build(data, ctx) {
      const req = data as { approvalId: string; args: { flightId: string; totalCost: number; passenger?: string }; reason?: string | null };
      const found = timetable(req.args.flightId);
      // Displayed fields only (the timetable also holds the audit-only supplierCost).
      const flight: ScheduledFlight = found
        ? { id: found.id, departs: when(found.departs), price: found.price, currency: found.currency }
        : { id: req.args.flightId, departs: '', price: req.args.totalCost, currency: 'EUR' };
      const answer = (id: string, name: string, label: string, variant: string) => [
        { id, component: 'Button', child: `${id}-label`, variant, action: { event: { name, context: { approvalId: { path: '/approvalId' } } } } },
        text(`${id}-label`, label),
      ];
      return [
        createSurface(ctx),
        {
          version: V,
          updateComponents: {
            surfaceId: ctx.surfaceId,
            components: [
              { id: 'root', component: 'Card', child: 'body' },
              { id: 'body', component: 'Column', children: ['title', 'when', 'total', 'actions'] },
              text('title', `Book flight ${flight.id}?`, 'h3'),
              { id: 'when', component: 'Row', children: ['departs-label', 'departs'] },
              text('departs-label', 'Departs'),
              text('departs', { path: '/flight/departs' }),
              { id: 'total', component: 'Row', children: ['total-label', 'total-value', 'total-currency'] },
              text('total-label', 'Total'),
              text('total-value', { path: '/totalCost' }),
              text('total-currency', { path: '/flight/currency' }),
              { id: 'actions', component: 'Row', children: ['approve', 'deny'] },
              ...answer('approve', SURFACE_APPROVE_ACTION, 'Approve', 'primary'),
              ...answer('deny', SURFACE_DENY_ACTION, 'Deny', 'default'),
            ],
          },
        },
        {
          version: V,
          updateDataModel: {
            surfaceId: ctx.surfaceId,
            path: '/',
            value: { approvalId: req.approvalId, flight, totalCost: req.args.totalCost, ...(req.args.passenger ? { passenger: req.args.passenger } : {}) },
          },
        },
      ];
    },
  });
}
