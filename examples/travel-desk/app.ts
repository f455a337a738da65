/**
 * The travel desk: the demo app `turnstate serve` runs.
 *
 * - `triage` greets, asks where to when a request has no destination (clarify), and hands
 *   flight requests to `flights` with passTo.
 * - `flights` searches (`search_flights`: generalist, routed, returns an AnnotatedRecord whose
 *   `supplierCost` is visible to the audit destination only) and books (`book_flight`:
 *   approval-gated, auto-approved when `args.totalCost < 50 && ctx.user.tier == 'trusted'`).
 * - `cancel_booking` always asks and refuses standing approvals (`trust: true` on AAP).
 * - Surfaces (surfaces.ts): the flights found, and a pending booking with Approve / Deny.
 */
import { readFileSync } from 'node:fs';
import { annotate, type EventRouter, type ModelScript, type Runtime } from 'turnstate';
import { registerTravelDeskSurfaces } from './surfaces.js';

export interface Flight {
  id: string;
  from: string;
  to: string;
  departs: string;
  price: number;
  currency: 'EUR';
  seatsLeft: number;
  /** What the desk pays the airline: internal, audit only. */
  supplierCost: number;
}

export interface Booking {
  bookingRef: string;
  flightId: string;
  totalCost: number;
  status: 'confirmed';
}

/** The flights every search returns, to the requested destination (deterministic for demos and tests). */
export const FLIGHT_TEMPLATES: readonly Omit<Flight, 'to'>[] = Object.freeze([
  { id: 'TS205', from: 'London', departs: '2026-06-12T07:40:00Z', price: 42, currency: 'EUR', seatsLeft: 3, supplierCost: 31 },
  { id: 'TS101', from: 'London', departs: '2026-06-12T11:15:00Z', price: 94, currency: 'EUR', seatsLeft: 9, supplierCost: 70 },
]);

export interface AuditEntry {
  tool: string;
  callId: string;
  sessionId: string;
  /** The audit destination's view of the record: internal fields included. */
  view: unknown;
}

export interface TravelDesk {
  /** Bookings made in this process, by reference. */
  readonly bookings: Map<string, Booking>;
  /** What the `audit` destination received (the last 1,000 records), when the runtime exposes its router. */
  readonly audit: AuditEntry[];
  /** The agent names to offer (the entry actor first). */
  readonly agents: { name: string; title: string; description: string }[];
}

/** Registers the travel desk's tools and actors on a runtime. */
export function createTravelDesk(runtime: Runtime & { router?: EventRouter }): TravelDesk {
  const bookings = new Map<string, Booking>();
  const audit: AuditEntry[] = [];
  let nextRef = 1;
  // The booking surface shows the flight being booked from the timetable (static data) and the
  // call's arguments, not from a search this process ran: a replay runs no handler, and renders the same.
  registerTravelDeskSurfaces(runtime.registries.surfaceTemplates, (flightId) => FLIGHT_TEMPLATES.find((f) => f.id === flightId));

  // The audit destination sees fields annotated for it (supplierCost); the model and the UI do not.
  runtime.router?.filterAndDistribute.register({
    id: 'audit',
    deliver(view, meta) {
      if (audit.length >= 1000) audit.shift();
      audit.push({ tool: meta.tool, callId: meta.callId, sessionId: meta.sessionId, view });
    },
  });

  runtime.registries.tools.register<{ to: string; from?: string }, unknown>({
    name: 'search_flights',
    description: 'Search direct flights to a destination. Returns flights with id, departure time, price and seats left.',
    inputSchema: {
      type: 'object',
      properties: { to: { type: 'string', minLength: 1 }, from: { type: 'string' } },
      required: ['to'],
      additionalProperties: false,
    },
    scope: 'generalist',
    tags: ['read', 'flights'],
    handler: (args) => {
      const flights: Flight[] = FLIGHT_TEMPLATES.map((f) => ({ ...f, to: args.to, ...(args.from ? { from: args.from } : {}) }));
      return annotate(
        { flights },
        { kind: 'flights', fields: { '/flights/*/supplierCost': ['audit'] } },
      );
    },
  });

  runtime.registries.tools.register<{ flightId: string; totalCost: number; passenger?: string }, Booking>({
    name: 'book_flight',
    description: 'Book a seat on a flight found by search_flights. Needs approval unless cheap and the user is trusted.',
    inputSchema: {
      type: 'object',
      properties: {
        flightId: { type: 'string', minLength: 1 },
        totalCost: { type: 'number', minimum: 0 },
        passenger: { type: 'string' },
      },
      required: ['flightId', 'totalCost'],
      additionalProperties: false,
    },
    scope: 'generalist',
    tags: ['write', 'flights', 'payment'],
    requiresApproval: { autoApproveIf: "args.totalCost < 50 && ctx.user.tier == 'trusted'" },
    handler: (args) => {
      const booking: Booking = {
        bookingRef: `BK${String(nextRef++).padStart(4, '0')}`,
        flightId: args.flightId,
        totalCost: args.totalCost,
        status: 'confirmed',
      };
      bookings.set(booking.bookingRef, booking);
      return booking;
    },
  });

  runtime.registries.tools.register<{ bookingRef: string }, { bookingRef: string; status: 'cancelled' }>({
    name: 'cancel_booking',
    description: 'Cancel a booking by reference. Always asks for approval; a standing approval is not accepted.',
    inputSchema: {
      type: 'object',
      properties: { bookingRef: { type: 'string', minLength: 1 } },
      required: ['bookingRef'],
      additionalProperties: false,
    },
    scope: 'generalist',
    tags: ['write', 'flights'],
    requiresApproval: true,
    allowStandingApproval: false,
    handler: (args) => {
      bookings.delete(args.bookingRef);
      return { bookingRef: args.bookingRef, status: 'cancelled' as const };
    },
  });

  runtime.registries.actors.register({
    name: 'triage',
    description: 'Front desk: understands what the traveller wants and hands flight requests to the flights desk.',
    system: 'You are the front desk of a travel agency. Hand flight searches and bookings to the flights desk with passTo. Ask for the destination when it is missing.',
    handoffs: ['flights'],
  });
  runtime.registries.actors.register({
    name: 'flights',
    description: 'Flights desk: searches and books flights.',
    system: 'You are the flights desk. Search with search_flights, book with book_flight, cancel with cancel_booking. Quote prices in EUR.',
    tools: ['search_flights', 'book_flight', 'cancel_booking'],
  });

  return {
    bookings,
    audit,
    agents: [{ name: 'triage', title: 'Travel desk', description: 'Find and book flights: try "flights to Corfu", then "book TS205".' }],
  };
}

/** The ScriptedModel script that plays the travel desk without an API key. */
export function travelDeskScript(): ModelScript {
  return JSON.parse(readFileSync(new URL('./script.json', import.meta.url), 'utf8')) as ModelScript;
}
