import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { PARTS_EXTENSION_URI, agentCard, partTypesOf, type AgentCard } from '../../src/envelope/agent-card.js';
import { RegistrationError, TurnstateError } from '../../src/errors.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { api } from '../transports/aap/helpers.js';

const noModel = createScriptedModel({ rules: [] });

function extension(card: AgentCard) {
  return card.capabilities.extensions!.find((e) => e.uri === PARTS_EXTENSION_URI)!;
}

describe('Agent Cards (spec 001 "agent-card.md — how an agent declares which envelope parts it supports")', () => {
  it('cards:derived — a respond() actor\'s card has A2A 1.0 field names, one skill, produces what respond() offers plus error and llm-context, consumes llm-context', () => {
    const rt = createRuntime({ model: noModel });
    rt.registries.actors.register({ name: 'sally', description: 'Finds flights.' });
    const card = rt.agentCard('sally');
    const emittable = rt.registries.partTypes.list().filter((d) => d.meta.modelEmittable).map((d) => d.id);
    expect(card).toMatchObject({
      name: 'sally',
      description: 'Finds flights.',
      version: '1.0.0',
      capabilities: { streaming: true, pushNotifications: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain', 'application/json'],
      skills: [{ id: 'sally', name: 'sally', description: 'Finds flights.', tags: ['sally'] }],
    });
    const { produces, consumes } = partTypesOf(card);
    expect(produces).toEqual(rt.registries.partTypes.ids().filter((id) => emittable.includes(id) || id === 'error' || id === 'llm-context'));
    expect(produces).toContain('a2ui-surface');
    expect(produces).not.toContain('approval-request');
    expect(consumes).toEqual(['llm-context']);
    expect(extension(card)).toMatchObject({ uri: PARTS_EXTENSION_URI, required: false });
    // JSON-safe: it goes over HTTP as it is.
    expect(JSON.parse(JSON.stringify(card))).toEqual(card);
  });

  it('cards:derived:tools-handoffs — a respond_to_user actor with an approval-gated tool produces what the tool can put in an envelope, and an actor that hands off produces what its target can', () => {
    const rt = createRuntime({ model: noModel });
    rt.registries.tools.register({
      name: 'book',
      description: 'Book it',
      inputSchema: { type: 'object' },
      scope: 'generalist',
      requiresApproval: true,
      handler: async () => ({ ok: true }),
    });
    // A compatibility actor cannot hand off (actors:compat:no-handoffs): its hand-offs are a respond() actor's.
    rt.registries.actors.register({ name: 'voice', compat: 'respond_to_user', tools: ['book'] });
    rt.registries.actors.register({ name: 'thinker', compat: 'respond_to_user', thinking: { budgetTokens: 1024 } });
    rt.registries.actors.register({ name: 'front', handoffs: ['voice'] });
    rt.registries.actors.register({ name: 'alone' });
    expect(partTypesOf(rt.agentCard('voice')).produces.sort()).toEqual(['approval-request', 'domain-data', 'error', 'llm-context', 'response']);
    expect(partTypesOf(rt.agentCard('thinker')).produces.sort()).toEqual(['error', 'llm-context', 'reasoning-trace', 'response']);
    // What the hand-off target can put in the envelope is on the card of the actor that hands off.
    expect(partTypesOf(rt.agentCard('front')).produces).toContain('approval-request');
    expect(partTypesOf(rt.agentCard('alone')).produces).not.toContain('approval-request');
  });

  it('cards:overrides — the registration\'s card overrides replace the derived fields they name; a later part type is accepted once registered', () => {
    const rt = createRuntime({ model: noModel });
    rt.registries.actors.register({
      name: 'sally',
      card: {
        description: 'Flight search for Baxter.',
        version: '2.1.0',
        skills: [{ id: 'flights', name: 'Flight search', description: 'Direct flights by date', tags: ['travel', 'flights'], examples: ['LGW to CFU on 15 August'] }],
        produces: ['response', 'domain-data', 'llm-context', 'itinerary'],
        consumes: [],
        provider: { organization: 'Cool AI', url: 'https://cool-ai.dev' },
      },
    });
    expect(() => rt.agentCard('sally')).toThrow(expect.objectContaining({ code: 'card.unknown_part_type', message: expect.stringContaining('"itinerary"') }));
    rt.registries.partTypes.register({ id: 'itinerary', meta: { ...rt.registries.partTypes.get('domain-data')!.meta, description: 'An itinerary' } });
    const card = rt.agentCard('sally');
    expect(card).toMatchObject({ description: 'Flight search for Baxter.', version: '2.1.0', provider: { organization: 'Cool AI', url: 'https://cool-ai.dev' } });
    expect(card.skills).toEqual([{ id: 'flights', name: 'Flight search', description: 'Direct flights by date', tags: ['travel', 'flights'], examples: ['LGW to CFU on 15 August'] }]);
    expect(partTypesOf(card)).toEqual({ produces: ['response', 'domain-data', 'llm-context', 'itinerary'], consumes: [] });
    // A card is a fresh object: changing it changes nothing registered.
    card.skills[0]!.tags.push('x');
    expect(rt.agentCard('sally').skills[0]!.tags).toEqual(['travel', 'flights']);
  });

  it('cards:unknown-actor — agentCard of an unregistered actor is actor.unknown, naming the registered ones', () => {
    const rt = createRuntime({ model: noModel });
    rt.registries.actors.register({ name: 'sally' });
    let err: unknown;
    try {
      rt.agentCard('baxter');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TurnstateError);
    expect(err).toMatchObject({ code: 'actor.unknown', message: expect.stringContaining('registered: sally') });
  });

  it('cards:registration — malformed card overrides are refused at registration, naming the field', () => {
    const rt = createRuntime({ model: noModel });
    const cases: [unknown, string, string][] = [
      ['card', 'actors:card:object', 'card must be an object'],
      [{ name: 'x' }, 'actors:card:field', 'card.name is not a card field'],
      [{ version: 2 }, 'actors:card:string', 'card.version'],
      [{ consumes: 'llm-context' }, 'actors:card:strings', 'card.consumes'],
      [{ skills: [] }, 'actors:card:skills', 'non-empty array'],
      [{ skills: [{ id: 's', name: 'S', description: 'd', tags: [] }] }, 'actors:card:skills', 'card.skills[0].tags'],
      [{ provider: { organization: 'x' } }, 'actors:card:provider', 'card.provider'],
    ];
    for (const [card, rule, mention] of cases) {
      let err: unknown;
      try {
        rt.registries.actors.register({ name: 'a', card: card as never });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RegistrationError);
      expect((err as RegistrationError).rule).toBe(rule);
      expect((err as Error).message).toContain(mention);
    }
    expect(rt.registries.actors.has('a')).toBe(false);
  });

  it('cards:partTypesOf — a peer\'s card declares its part types in the parts extension; none without it; a malformed one is card.invalid', () => {
    const peer = {
      name: 'baxter',
      capabilities: { extensions: [{ uri: 'https://a2ui.org/a2a-extension/a2ui/v0.9' }, { uri: PARTS_EXTENSION_URI, params: { consumes: ['llm-context', 'custom'] } }] },
    };
    expect(partTypesOf(peer)).toEqual({ produces: [], consumes: ['llm-context', 'custom'] });
    expect(partTypesOf({ name: 'plain', capabilities: {} })).toEqual({ produces: [], consumes: [] });
    expect(() => partTypesOf('card')).toThrow(expect.objectContaining({ code: 'card.invalid' }));
    expect(() => partTypesOf({ capabilities: { extensions: [{ uri: PARTS_EXTENSION_URI, params: { consumes: 'llm-context' } }] } })).toThrow(
      expect.objectContaining({ code: 'card.invalid', message: expect.stringContaining('params.consumes') }),
    );
  });
});

describe('Agent Cards over HTTP', () => {
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('cards:aap:meta — GET /meta carries each agent\'s card, the same as runtime.agentCard()', async () => {
    const runtime = createRuntime({ model: noModel });
    runtime.registries.actors.register({ name: 'sally', description: 'Finds flights.' });
    runtime.registries.actors.register({ name: 'voice', compat: 'respond_to_user' });
    server = await startServer({ runtime, transports: [createAapTransport({ runtime })], port: 0 });
    const meta = await api(server.url, '/meta');
    expect(meta.status).toBe(200);
    const byName = new Map((meta.json.agents as { name: string; card: AgentCard }[]).map((a) => [a.name, a.card]));
    expect(byName.get('sally')).toEqual(agentCard(runtime.registries, 'sally'));
    expect(partTypesOf(byName.get('voice')).produces).toEqual(['response', 'error', 'llm-context']);
  });
});

