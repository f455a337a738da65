/**
 * The travel desk's A2UI surface templates (docs/concepts/surfaces.md):
 *
 * - `flights` (search_flights' AnnotatedRecord kind): the flights found, one row per flight,
 *   bound by relative JSON Pointers into each item of `/flights`.
 * - `approval:book_flight` (a pending booking): the flight being booked and the total, with an
 *   **Approve** and a **Deny** button whose actions carry the approvalId, so a click answers
 *   the approval.
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

const V = 'v0.9';
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

export function registerTravelDeskSurfaces(
  templates: SurfaceTemplateRegistryApi,
  findFlight: (sessionId: string, flightId: string) => SurfaceFlight | undefined,
): void {
  templates.register({
    kind: 'flights',
    description: 'The flights a search found.',
    build(data, ctx) {
      const flights = ((data as { flights?: SurfaceFlight[] }).flights ?? []).map(shown);
      return [
        createSurface(ctx),
        {
          version: V,
          updateComponents: {
            surfaceId: ctx.surfaceId,
            components: [
              { id: 'root', component: 'Column', children: ['title', 'list'] },
              text('title', `${flights.length} flight${flights.length === 1 ? '' : 's'} found`, 'h4'),
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
      const found = findFlight(ctx.sessionId, req.args.flightId);
      const flight = found ? shown(found) : { id: req.args.flightId, from: '', to: '', departs: '', price: req.args.totalCost, currency: 'EUR' };
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
              { id: 'body', component: 'Column', children: ['title', 'route', 'departs', 'total', 'actions'] },
              text('title', `Book flight ${flight.id}?`, 'h3'),
              { id: 'route', component: 'Row', children: ['from', 'arrow', 'to'] },
              text('from', { path: '/flight/from' }),
              text('arrow', '→'),
              text('to', { path: '/flight/to' }),
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
