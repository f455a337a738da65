/**
 * Agent Cards: what an actor is and which envelope part types it produces and consumes
 * (spec 001 "how an agent declares which envelope parts it supports"), in A2A 1.0's AgentCard
 * shape where the two overlap (name, description, version, skills, capabilities, modes).
 *
 * The part types travel the A2A-idiomatic way: an extension in `capabilities.extensions` whose
 * `params` are `{ produces, consumes }` (A2A extensions cannot add fields). `partTypesOf()`
 * reads them back, from turnstate's cards and from a peer's.
 *
 * Contract: `agentCard()` is derived from the actor's registration (and the actors it can hand
 * off to) each time it is called, so part types and tools registered later show up; the
 * actor's `card` overrides replace the derived field they name. A card naming a part type that is
 * not registered is refused with TurnstateError('card.unknown_part_type').
 */
import { TurnstateError } from '../errors.js';
import type { ActorDefinition, AgentCardOverrides, AgentSkill, Registries } from '../registries/types.js';

export type { AgentCardOverrides, AgentSkill };

/** The URI of turnstate's part-types extension (A2A `AgentExtension.uri`). */
export const PARTS_EXTENSION_URI = 'https://turnstate.dev/a2a/ext/parts/v1';

import type { AgentCard, AgentExtension } from '../types.js';
export type { AgentCard, AgentExtension, AgentInterface } from '../types.js';

export const DEFAULT_CONSUMES: readonly string[] = Object.freeze(['llm-context']);
const DEFAULT_VERSION = '1.0.0';
const INPUT_MODES: readonly string[] = Object.freeze(['text/plain']);
const OUTPUT_MODES: readonly string[] = Object.freeze(['text/plain', 'application/json']);

/** The card of a registered actor. Throws TurnstateError('actor.unknown') for an unknown name. */
export function agentCard(registries: Registries, actorName: string): AgentCard {
  const actor = registries.actors.get(actorName);
  if (actor === undefined) {
    const known = registries.actors.list().map((a) => a.name);
    throw new TurnstateError('actor.unknown', `no actor named "${actorName}" is registered (registered: ${known.join(', ') || 'none'})`);
  }
  const o = actor.card ?? {};
  const description = o.description ?? actor.description ?? `The ${actor.name} agent.`;
  const produces = checked(registries, actor.name, 'produces', o.produces ?? derivedProduces(registries, actor));
  const consumes = checked(registries, actor.name, 'consumes', o.consumes ?? DEFAULT_CONSUMES);
  const card: AgentCard = {
    name: actor.name,
    description,
    version: o.version ?? DEFAULT_VERSION,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        {
          uri: PARTS_EXTENSION_URI,
          description: 'Envelope part types (partType in part metadata) this agent produces and consumes.',
          required: false,
          params: { produces, consumes },
        },
      ],
    },
    defaultInputModes: [...(o.defaultInputModes ?? INPUT_MODES)],
    defaultOutputModes: [...(o.defaultOutputModes ?? OUTPUT_MODES)],
    skills: o.skills?.map((s) => ({ ...s, tags: [...s.tags] })) ?? [{ id: actor.name, name: actor.name, description, tags: [actor.name] }],
  };
  if (o.provider !== undefined) card.provider = { ...o.provider };
  if (o.documentationUrl !== undefined) card.documentationUrl = o.documentationUrl;
  if (o.iconUrl !== undefined) card.iconUrl = o.iconUrl;
  return card;
}

/**
 * The part types a card declares, from its parts extension (turnstate's or a peer's using the
 * same URI). A card without the extension declares none. Throws TurnstateError('card.invalid')
 * when the card is not an object or the extension's lists are not arrays of strings.
 */
export function partTypesOf(card: unknown): { produces: string[]; consumes: string[] } {
  if (card === null || typeof card !== 'object' || Array.isArray(card)) {
    throw new TurnstateError('card.invalid', 'an Agent Card must be an object');
  }
  const exts = (card as { capabilities?: { extensions?: unknown } }).capabilities?.extensions;
  if (exts === undefined) return { produces: [], consumes: [] };
  if (!Array.isArray(exts)) throw new TurnstateError('card.invalid', 'capabilities.extensions of an Agent Card must be an array');
  const i = exts.findIndex((e) => e !== null && typeof e === 'object' && (e as AgentExtension).uri === PARTS_EXTENSION_URI);
  if (i < 0) return { produces: [], consumes: [] };
  const params = (exts[i] as AgentExtension).params ?? {};
  return { produces: strings(params.produces, `capabilities.extensions[${i}].params.produces`), consumes: strings(params.consumes, `capabilities.extensions[${i}].params.consumes`) };
}

function strings(v: unknown, path: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new TurnstateError('card.invalid', `${path} must be an array of part type names`);
  return [...v] as string[];
}

/**
 * What the actor's envelopes can carry: the part types respond() offers (or, in the spec 003
 * mode, response), error, llm-context (the runtime translates for a consumer), domain-data when
 * a tool can return data, approval-request when a tool asks for approval, reasoning-trace with
 * extended thinking; the same for every actor it can hand off to. In registration order.
 */
function derivedProduces(registries: Registries, entry: ActorDefinition): string[] {
  const set = new Set<string>(['error', 'llm-context']);
  const seen = new Set<string>();
  const queue: ActorDefinition[] = [entry];
  while (queue.length > 0) {
    const actor = queue.shift()!;
    if (seen.has(actor.name)) continue;
    seen.add(actor.name);
    if (actor.compat !== undefined) set.add('response');
    else for (const d of registries.partTypes.list()) if (d.meta.modelEmittable) set.add(d.id);
    if (actor.thinking !== undefined) set.add('reasoning-trace');
    for (const name of actor.tools ?? []) {
      const tool = registries.tools.get(name);
      if (tool === undefined) continue;
      set.add('domain-data');
      if (tool.approval.kind !== 'none') set.add('approval-request');
    }
    for (const h of actor.handoffs ?? []) {
      const next = registries.actors.get(h);
      if (next !== undefined) queue.push(next);
    }
  }
  return registries.partTypes.ids().filter((id) => set.has(id));
}

function checked(registries: Registries, actor: string, field: 'produces' | 'consumes', types: readonly string[]): string[] {
  for (const t of types) {
    if (!registries.partTypes.has(t)) {
      throw new TurnstateError('card.unknown_part_type', `the card of actor "${actor}" ${field} "${t}", which is not a registered part type (registered: ${registries.partTypes.ids().join(', ')})`);
    }
  }
  return [...types];
}
