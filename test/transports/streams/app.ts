/**
 * A small travel desk on the real runtime and the real streams transport, served on 127.0.0.1.
 * Tokens are `<tenant>:<user>[:approver]`, read from `Authorization: Bearer`, `?token=` or the
 * `ts_token` cookie.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import type { RuntimeOptions } from '../../../src/api.js';
import { createScriptedModel } from '../../../src/models/scripted.js';
import type { ModelScript } from '../../../src/models/script.js';
import { createRuntime, type TurnstateRuntime } from '../../../src/runtime.js';
import { createStreamsTransport, type StreamsTransport, type StreamsTransportOptions } from '../../../src/transports/streams/index.js';
import type { AuthResult, HttpTransport } from '../../../src/transports/types.js';
import type { Principal, SessionEvent } from '../../../src/types.js';

export const FLIGHTS = [
  { flightId: 'TS101', from: 'LHR', to: 'CFU', departs: '2026-06-01T07:10', price: 94 },
  { flightId: 'TS205', from: 'LGW', to: 'CFU', departs: '2026-06-01T13:45', price: 121 },
];

/** A large answer: about 24 KB of streamed text and 300 KB of domain data per turn. */
export const BIG_TEXT = 'Corfu fares by day and hour, every carrier considered. '.repeat(440);
export const BIG_DATA = { fares: Array.from({ length: 3000 }, (_, i) => ({ id: `F${i}`, note: 'x'.repeat(80) })) };

export const TRAVEL_SCRIPT: ModelScript = {
  rules: [
    {
      id: 'big',
      when: { on: 'user', text: '^big' },
      respond: {
        chunkSize: 400,
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: {
              parts: [
                { text: BIG_TEXT, metadata: { partType: 'response' } },
                { data: BIG_DATA, metadata: { partType: 'domain-data' } },
              ],
              turnState: 'complete',
            },
          },
        ],
      },
    },
    {
      id: 'search',
      when: { on: 'user', text: 'flights to (\\w+)' },
      respond: {
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: { parts: [{ text: 'Looking for flights to $1 now.', metadata: { partType: 'ack' } }], turnState: 'awaiting' },
          },
          { type: 'tool_use', name: 'search_flights', input: { to: '$1' } },
        ],
      },
    },
    {
      id: 'found',
      when: { on: 'tool_result', tool: 'search_flights' },
      respond: {
        chunkSize: 9,
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: {
              parts: [
                { text: 'I found 2 direct flights to Corfu on 1 June. The cheapest is TS101 at 94 EUR, leaving Heathrow at 07:10.', metadata: { partType: 'response' } },
                { data: { flights: FLIGHTS }, metadata: { partType: 'domain-data' } },
              ],
              turnState: 'complete',
            },
          },
        ],
      },
    },
    {
      id: 'book',
      when: { on: 'user', text: 'book' },
      respond: {
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: { parts: [{ text: 'Booking TS101 for you; this needs your approval.', metadata: { partType: 'ack' } }], turnState: 'awaiting' },
          },
          { type: 'tool_use', name: 'book_flight', input: { flightId: 'TS101' } },
        ],
      },
    },
    {
      id: 'booked',
      when: { on: 'tool_result', tool: 'book_flight' },
      respond: {
        chunkSize: 7,
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: { parts: [{ text: 'Done: TS101 is booked, confirmation CFU-7731.', metadata: { partType: 'response' } }], turnState: 'complete' },
          },
        ],
      },
    },
    {
      id: 'chat',
      when: { on: 'user' },
      respond: {
        chunkSize: 5,
        blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'You said: $user', metadata: { partType: 'response' } }], turnState: 'complete' } }],
      },
    },
  ],
};

export interface TravelDeskOptions {
  /** Awaited by search_flights before it answers (lets a test act mid-turn). */
  searchGate?: () => Promise<void>;
  transport?: Partial<Omit<StreamsTransportOptions, 'runtime'>>;
  canAnswerApproval?: RuntimeOptions['canAnswerApproval'];
  limits?: RuntimeOptions['limits'];
}

export function createTravelRuntime(opts: TravelDeskOptions = {}): TurnstateRuntime {
  const runtime = createRuntime({
    model: createScriptedModel(TRAVEL_SCRIPT),
    ...(opts.canAnswerApproval === undefined ? {} : { canAnswerApproval: opts.canAnswerApproval }),
    ...(opts.limits === undefined ? {} : { limits: opts.limits }),
  });
  runtime.registries.tools.register({
    name: 'search_flights',
    description: 'Search direct flights to a destination',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    scope: 'generalist',
    handler: async () => {
      await opts.searchGate?.();
      return { flights: FLIGHTS };
    },
  });
  runtime.registries.tools.register({
    name: 'book_flight',
    description: 'Book a flight by id',
    inputSchema: { type: 'object', properties: { flightId: { type: 'string' } }, required: ['flightId'] },
    scope: 'generalist',
    requiresApproval: true,
    handler: async (args: { flightId: string }) => ({ confirmation: 'CFU-7731', flightId: args.flightId }),
  });
  runtime.registries.actors.register({ name: 'desk', tools: ['search_flights', 'book_flight'], system: 'You are a travel desk.' });
  return runtime;
}

export function tokenAuth(req: IncomingMessage): AuthResult {
  const url = new URL(req.url ?? '/', 'http://x');
  const header = req.headers.authorization;
  const cookie = /(?:^|;\s*)ts_token=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
  const token = header?.startsWith('Bearer ') ? header.slice(7) : (url.searchParams.get('token') ?? (cookie === undefined ? undefined : decodeURIComponent(cookie)));
  if (token === undefined || token === '') return { ok: false, status: 401, message: 'a token is required' };
  const [tenantId, userId, role] = token.split(':');
  if (!tenantId || !userId) return { ok: false, status: 401, message: 'malformed token' };
  const principal: Principal = { tenantId, userId };
  if (role !== undefined) principal.roles = [role];
  return { ok: true, principal };
}

export interface Served {
  runtime: TurnstateRuntime;
  transport: StreamsTransport;
  server: Server;
  base: string;
  wsUrl: string;
  /** Sockets accepted by the server (to kill connections abruptly). */
  sockets: Set<Socket>;
  close(): Promise<void>;
}

/** Serves the given transports (the streams transport first) on 127.0.0.1 with a random port. */
export async function serve(runtime: TurnstateRuntime, opts: TravelDeskOptions = {}, extra: HttpTransport[] = []): Promise<Served> {
  const transport = createStreamsTransport({ runtime, authenticate: tokenAuth, ...opts.transport });
  const transports: HttpTransport[] = [transport, ...extra];
  const sockets = new Set<Socket>();
  const server = createServer(async (req, res) => {
    for (const t of transports) if (await t.handle(req, res)) return;
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"not found"}}');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, socket, head) => {
    for (const t of transports) if (t.upgrade?.(req, socket, head)) return;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    runtime,
    transport,
    server,
    sockets,
    base: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    async close() {
      for (const t of transports) await t.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await runtime.close();
    },
  };
}

/** Runs a turn to its stop (settled or suspended) and returns the session's whole event log. */
export async function recordTurns(runtime: TurnstateRuntime, sessionId: string): Promise<SessionEvent[]> {
  return [...(await runtime.store.readEvents(sessionId, 0))];
}
