/** Recorded sessions for the replay tests: real runtimes, scripted models, SQLite files. */
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import type { Registries } from '../../src/registries/types.js';
import type { SessionStore } from '../../src/machines/ports.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { expect } from 'vitest';

export const respond = (parts: { text?: string; data?: Record<string, unknown>; partType: string }[], turnState: string, passTo?: string) => ({
  type: 'tool_use' as const,
  name: 'respond',
  input: {
    parts: parts.map((p) => ({ ...(p.text !== undefined ? { text: p.text } : {}), ...(p.data ? { data: p.data } : {}), metadata: { partType: p.partType } })),
    turnState,
    ...(passTo ? { passTo } : {}),
  },
});

/** Counts handler executions: replay must leave it at zero. */
export const handlerCalls = { n: 0 };

/** The travel app's registrations, as its bootstrap would run them. */
export function travelSetup(registries: Registries, opts: { bookNeedsApproval?: boolean; onRun?: (tool: string, callId: string) => void } = {}): void {
  const ran = (tool: string, callId: string) => {
    handlerCalls.n++;
    opts.onRun?.(tool, callId);
  };
  registries.tools.register({
    name: 'search',
    description: 'Search flights',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    scope: 'generalist',
    handler: (a: { to: string }, ctx) => {
      ran('search', ctx.callId);
      return { flights: [{ to: a.to, price: 94 }, { to: a.to, price: 120 }] };
    },
  });
  registries.tools.register({
    name: 'book',
    description: 'Book a flight',
    inputSchema: { type: 'object', properties: { price: { type: 'number' } }, required: ['price'] },
    scope: 'generalist',
    requiresApproval: opts.bookNeedsApproval ?? true,
    handler: (a: { price: number }, ctx) => {
      ran('book', ctx.callId);
      return { booked: true, price: a.price };
    },
  });
  registries.tools.register({
    name: 'fare_rules',
    description: 'Private fare rules lookup',
    inputSchema: { type: 'object' },
    scope: 'specialist',
    routing: 'bypass',
    bypassRouting: { reason: 'inline lookup' },
    justification: 'fare rules are internal to the flights actor',
    handler: (_a: unknown, ctx) => {
      ran('fare_rules', ctx.callId);
      throw new Error('fare rules service is down');
    },
  });
  registries.actors.register({ name: 'front', tools: [], handoffs: ['flights'] });
  registries.actors.register({ name: 'flights', tools: ['search', 'book', 'fare_rules'] });
}

export const TRAVEL_SCRIPT: ModelScript = {
  rules: [
    { id: 'greet', when: { actor: 'front', on: 'user', text: '^hello' }, respond: { blocks: [respond([{ text: 'Hello! Where to?', partType: 'response' }], 'complete')] } },
    { id: 'book', when: { actor: 'front', on: 'user', text: '^book' }, respond: { blocks: [respond([{ text: 'Booking.', partType: 'ack' }], 'passed', 'flights')] } },
    { id: 'broken', when: { actor: 'front', on: 'user', text: '^break' }, respond: { blocks: [], fail: { code: 'model.overloaded', message: 'scripted overload' } } },
    { id: 'handoff', when: { actor: 'front', on: 'user' }, respond: { blocks: [respond([{ text: 'Passing you to our flights desk.', partType: 'ack' }], 'passed', 'flights')] } },
    {
      id: 'search',
      when: { actor: 'flights', on: 'handoff', text: 'flights desk' },
      respond: { blocks: [respond([{ text: 'Searching.', partType: 'ack' }], 'awaiting'), { type: 'tool_use', name: 'search', input: { to: 'Corfu' } }] },
    },
    {
      id: 'rules',
      when: { actor: 'flights', on: 'tool_result', tool: 'search' },
      respond: { blocks: [respond([{ text: 'Checking fare rules.', partType: 'progress' }], 'awaiting'), { type: 'tool_use', name: 'fare_rules', input: {} }] },
    },
    {
      id: 'offer',
      when: { actor: 'flights', on: 'rejection', text: 'fare rules' },
      respond: { chunkSize: 9, blocks: [respond([{ text: 'Two flights: 94 and 120.', partType: 'response' }, { data: { cheapest: 94 }, partType: 'domain-data' }], 'complete')] },
    },
    { id: 'ask-book', when: { actor: 'flights', on: 'handoff', text: 'Booking' }, respond: { blocks: [{ type: 'tool_use', name: 'book', input: { price: 94 } }] } },
    { id: 'booked', when: { actor: 'flights', on: 'tool_result', tool: 'book' }, respond: { blocks: [respond([{ text: 'Booked at 94.', partType: 'response' }], 'complete')] } },
    { id: 'unknown', when: { actor: 'flights', on: 'rejection', text: 'outcome of \\w+ is unknown' }, respond: { blocks: [respond([{ text: 'I could not confirm that; please check before we retry.', partType: 'response' }], 'complete')] } },
    { id: 'denied', when: { actor: 'flights', on: 'rejection', text: 'denied' }, respond: { blocks: [respond([{ text: 'Not booked.', partType: 'response' }], 'complete')] } },
  ],
};

export function travelRuntime(store: SessionStore, script: ModelScript = TRAVEL_SCRIPT): TurnstateRuntime {
  const rt = createRuntime({ model: createScriptedModel(script), store });
  travelSetup(rt.registries);
  return rt;
}

export const THINKING = 'The user wants the weather; internal notes nobody else may read.';

const answer = {
  type: 'tool_use' as const,
  name: 'respond',
  input: { parts: [{ text: 'Sunny.', metadata: { partType: 'response' } }], turnState: 'complete' },
};

/** One turn whose model thinks before it answers, recorded under `reasoningTraces` in the SQLite file `path` (returned open read-only). */
export async function recordThinking(id: string, reasoningTraces: 'keep' | 'redact' | 'drop', path: string) {
  const rt = createRuntime({
    reasoningTraces,
    store: createSqliteStore({ path }),
    model: createScriptedModel({ rules: [{ respond: { blocks: [{ type: 'thinking', thinking: THINKING, signature: 'sig' }, answer] } }] }),
  });
  rt.registries.actors.register({ name: 'a', tools: [] });
  const s = await rt.createSession({ id, actor: 'a' });
  expect((await (await s.send('weather?')).settled).finalizedBy).toBe('complete');
  await rt.close();
  return createSqliteStore({ path, readonly: true });
}

/** One turn that runs out of model calls under `maxModelCallsPerTurn: 3` (the tool is called forever), in the SQLite file `path` (returned open read-only). */
export async function recordBudget(id: string, path: string) {
  const rt = createRuntime({
    store: createSqliteStore({ path }),
    limits: { maxModelCallsPerTurn: 3 },
    model: createScriptedModel({ rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'lookup', input: { q: 'x' } }] } }] }),
  });
  rt.registries.tools.register({ name: 'lookup', description: 'Look up', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => ({ ok: 1 }) });
  rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
  const s = await rt.createSession({ id, actor: 'a' });
  const out = await (await s.send('go')).settled;
  expect(out.finalizedBy).toBe('error');
  expect(out.error?.code).toBe('turn.model_call_budget');
  await rt.close();
  return createSqliteStore({ path, readonly: true });
}
