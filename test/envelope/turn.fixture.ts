/**
 * One recorded turn carrying the whole envelope (issue 13): ack, thinking, a reasoning trace,
 * progress, two tools' data-bearing records, and a final respond() with response, the actor's
 * own domain-data, llm-context, an artifact, a citation, an A2UI surface written by hand, and two
 * consumer part types (spec 000's `audio`, and an operator note no streaming transport may see).
 */
import type { ModelScript } from '../../src/models/script.js';
import { createRegistries } from '../../src/create-registries.js';
import type { PartTypeMeta, Registries, ToolContext } from '../../src/registries/types.js';
import type { Runtime, SendOptions } from '../../src/api.js';
import { createDelivery } from '../../src/envelope/delivery.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { Part } from '../../src/types.js';
import { respond } from '../runtime/helpers.js';

/** Spec 000's consumer example: streaming-preferred, dropped by buffered delivery, base64. */
export const AUDIO: { id: string; meta: PartTypeMeta } = {
  id: 'audio',
  meta: {
    description: 'Synthesised speech for voice channels.',
    streamingPreferred: true,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    channels: { whatsapp: 'attach' },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'data',
    serialisation: 'base64',
  },
};

/** Buffered-only: never on a streaming transport; rendered into an email, dropped on SMS. */
export const OPS_NOTE: { id: string; meta: PartTypeMeta } = {
  id: 'ops-note',
  meta: {
    description: 'An operator note for buffered channels only.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'drop', buffered: 'deliver' },
    channels: { email: 'render-as-text', sms: 'drop', whatsapp: 'drop' },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'text',
  },
};

export function turnRegistries(): Registries {
  const r = createRegistries();
  r.partTypes.register(AUDIO);
  r.partTypes.register(OPS_NOTE);
  return r;
}

export const FLIGHTS = { flights: [{ flightNumber: 'TS205', price: 42 }, { flightNumber: 'TS101', price: 94 }] };
export const PRICES = { currency: 'EUR', cheapest: 'TS205' };
/** The itinerary check_prices stores (2,048 bytes). */
export const ITINERARY = new Uint8Array(2048).fill(0x25);
export const ACTOR_DATA = { route: { origin: 'LGW', destination: 'CFU' } };
/** A valid A2UI v0.9 surface (one message per key), as the actor writes it by hand. */
export const SURFACE = {
  messages: [
    { version: 'v0.9', createSurface: { surfaceId: 'flight-results', catalogId: 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json' } },
    { version: 'v0.9', updateComponents: { surfaceId: 'flight-results', components: [{ id: 'root', component: 'Text', text: { path: '/cheapest' } }] } },
    { version: 'v0.9', updateDataModel: { surfaceId: 'flight-results', path: '/', value: { cheapest: 'TS205' } } },
  ],
};

export function registerDesk(rt: Runtime): void {
  rt.registries.tools.register({
    name: 'search_flights',
    description: 'Search flights.',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
    scope: 'generalist',
    handler: () => FLIGHTS,
  });
  rt.registries.tools.register({
    name: 'check_prices',
    description: 'Check fares and store the itinerary.',
    inputSchema: { type: 'object', properties: {} },
    scope: 'generalist',
    // The itinerary is a real artifact: the actor's artifact part names the id the tool got back.
    handler: async (_args: unknown, ctx: ToolContext) => {
      const ref = await ctx.artifacts!.put({ mimeType: 'application/pdf', data: ITINERARY, name: 'itinerary.pdf' });
      return { ...PRICES, itinerary: ref.artifactId };
    },
  });
  rt.registries.actors.register({ name: 'desk', tools: ['search_flights', 'check_prices'] });
}

const p = (partType: string, body: { text: string } | { data: Record<string, unknown> }) => ({ ...body, metadata: { partType } });

export const TURN_SCRIPT: ModelScript = {
  rules: [
    {
      when: { on: 'user' },
      respond: {
        chunkSize: 9,
        blocks: [
          { type: 'thinking', thinking: 'The user wants Corfu; search first.' },
          { type: 'tool_use', name: 'respond', input: { parts: [p('ack', { text: 'Looking up flights to Corfu.' })], turnState: 'awaiting', note: 'audit: user asked for Corfu' } },
          { type: 'tool_use', name: 'search_flights', input: { to: 'CFU' } },
        ],
      },
    },
    {
      when: { on: 'tool_result', tool: 'search_flights' },
      respond: {
        chunkSize: 9,
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: { parts: [p('thinking', { text: 'Comparing fares.' }), p('progress', { data: { done: 1, of: 2 } })], turnState: 'awaiting' },
          },
          { type: 'tool_use', name: 'check_prices', input: {} },
        ],
      },
    },
    {
      when: { on: 'tool_result', tool: 'check_prices', text: '"itinerary":"(art_[A-Za-z0-9_-]+)"' },
      respond: {
        chunkSize: 9,
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: {
              parts: [
                p('response', { text: 'I found 2 direct flights to Corfu; TS205 is cheapest at EUR 42.' }),
                p('domain-data', { data: ACTOR_DATA }),
                p('llm-context', { text: 'Two direct LGW-CFU options; TS205 at EUR 42 is cheapest.' }),
                p('artifact', { data: { artifactId: '$1', mimeType: 'application/pdf', sizeBytes: 2048, name: 'itinerary.pdf' } }),
                p('citation', { data: { path: '/search_flights/flights/0', title: 'Flight search', url: 'https://fares.example/TS205' } }),
                p('a2ui-surface', { data: SURFACE }),
                p('audio', { data: { base64: 'UklGRg==', mimeType: 'audio/wav' } }),
                p('ops-note', { text: 'Upsell travel insurance next time.' }),
              ],
              turnState: 'complete',
            },
          },
        ],
      },
    },
  ],
};

/** One settled turn of a fresh runtime whose model answers with respond(parts, turnState); `register` runs first. */
export async function settleOnce(parts: Part[], turnState = 'complete', register: (rt: ReturnType<typeof createRuntime>) => void = () => {}, send?: SendOptions) {
  const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: { blocks: [respond(parts, turnState)] } }] }) });
  register(rt);
  rt.registries.actors.register({ name: 'a', system: 'x' });
  const s = await rt.createSession({ actor: 'a' });
  const outcome = await (await s.send('hello', send)).settled;
  const delivery = createDelivery(rt.registries.partTypes);
  await rt.close();
  return { outcome, delivery };
}

/** The desk actor with `export_fares`, a tool that stores `csv` as an artifact (fares.csv) and returns its ref; each ref is pushed on `refs`. */
export function registerExportFares(registries: Registries, csv: string, refs: unknown[]): void {
  registries.tools.register({
    name: 'export_fares',
    description: 'Exports the fares as CSV.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    scope: 'generalist',
    handler: async (_args, ctx) => {
      const ref = await ctx.artifacts!.put({ mimeType: 'text/csv', data: csv, name: 'fares.csv' });
      refs.push(ref);
      return ref;
    },
  });
  registries.actors.register({ name: 'desk', system: 'x', tools: ['export_fares'] });
}
