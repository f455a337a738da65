/**
 * What one actor sees: its resolved tools as model tools (plus respond(), or the respond_to_user
 * compatibility tools), the client's tools for the turn, and its system prompt (which names the
 * registered actors `passTo` may name, for an actor that declares handoffs). Cached per actor and
 * registry state (actors included: a target registered later joins the prompt); a per-turn tool
 * filter or client tools build a fresh (uncached) view.
 */
import type { SendOptions } from '../api.js';
import { TurnstateError } from '../errors.js';
import { clientToolNameProblem } from '../registries/client-tools.js';
import type { ActorDefinition, Registries, RegisteredTool } from '../registries/types.js';
import { buildRespondTool, compatOptions, compatTools, handoffTargets, respondPromptSnippet, COMPAT_PROMPT_SNIPPET } from '../respond/index.js';
import type { ClientTool, ModelTool } from '../types.js';

export interface ActorTools {
  system: string;
  modelTools: readonly ModelTool[];
  byName: ReadonlyMap<string, RegisteredTool>;
  client: ReadonlySet<string>;
  /** The actor's tools this turn's client did not enable (`SendOptions.enabledTools`). */
  disabled: ReadonlySet<string>;
}

/**
 * The tool result for a call to one of the actor's tools that the turn's client did not enable:
 * names the tool and says how it is enabled (`howToEnable`, from the transport), so the model
 * can tell the user instead of failing.
 */
export function toolNotEnabledMessage(tool: string, howToEnable: string | undefined): string {
  const how = howToEnable === undefined ? 'The application that sent this turn did not enable it.' : howToEnable.replaceAll('{tool}', tool);
  return `Tool "${tool}" is not enabled for this session. ${how} Tell the user this; do not call ${tool} again in this turn.`;
}

export interface ToolCatalog {
  forActor(actor: ActorDefinition, opts: SendOptions): ActorTools;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Refuses client tools whose names the model could not tell apart (see clientToolNameProblem)
 * with a TurnstateError 'message.invalid_client_tool' naming the tool; `isServerTool` says which
 * names the actor's own tools take.
 */
export function assertClientToolNames(tools: readonly ClientTool[], actor: string, isServerTool: (name: string) => boolean): void {
  const problem = clientToolNameProblem(tools, isServerTool);
  if (problem === undefined) return;
  if (problem.kind === 'unnamed') throw new TurnstateError('message.invalid_client_tool', 'every client tool needs a non-empty `name`');
  const why = problem.kind === 'duplicate' ? 'is declared twice' : `has the name of a tool of actor "${actor}"`;
  throw new TurnstateError('message.invalid_client_tool', `client tool "${problem.name}" ${why}; tool names must be unique`);
}

/** `handoffsAllowed`: false when the runtime allows no hand-off in a turn (`maxHandoffsPerTurn: 0`): an actor's prompt then says it has no targets. */
export function createToolCatalog(registries: Registries, handoffsAllowed = true): ToolCatalog {
  const cache = new Map<string, { stamp: string; value: ActorTools }>();
  const stampOf = () =>
    `${registries.tools.list().length}:${registries.partTypes.ids().length}:${registries.turnStates.ids().length}:${registries.actors.ids().length}`;

  const build = (actor: ActorDefinition, enabled?: readonly string[]): ActorTools => {
    const names = actor.tools ?? [];
    const resolved = registries.tools.resolve(enabled ? names.filter((n) => enabled.includes(n)) : names, actor.name);
    const disabled = enabled ? new Set(names.filter((n) => !enabled.includes(n))) : NONE;
    const byName = new Map(resolved.map((t) => [t.name, t]));
    const own: ModelTool[] = resolved.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
    const compat = compatOptions(actor) !== undefined;
    const modelTools = compat ? [...own, ...compatTools()] : [...own, buildRespondTool(registries)];
    const snippet = compat ? COMPAT_PROMPT_SNIPPET : respondPromptSnippet(registries, actor.handoffs === undefined ? {} : { handoffs: handoffsAllowed ? handoffTargets(registries, actor.name, actor.handoffs) : [] });
    const system = actor.system ? `${actor.system}\n\n${snippet}` : snippet;
    return { system, modelTools, byName, client: NONE, disabled };
  };

  return {
    forActor(actor, opts) {
      const custom = opts.enabledTools !== undefined;
      let base: ActorTools;
      if (custom) base = build(actor, opts.enabledTools);
      else {
        const stamp = stampOf();
        const hit = cache.get(actor.name);
        if (hit && hit.stamp === stamp) base = hit.value;
        else {
          base = build(actor);
          cache.set(actor.name, { stamp, value: base });
        }
      }
      const clientTools = opts.clientTools;
      if (!clientTools || clientTools.length === 0) return base;
      assertClientToolNames(clientTools, actor.name, (name) => base.byName.has(name));
      return {
        system: base.system,
        modelTools: [...base.modelTools, ...clientTools.map((c) => ({ name: c.name, description: c.description, input_schema: c.parameters }))],
        byName: base.byName,
        client: new Set(clientTools.map((c) => c.name)),
        disabled: base.disabled,
      };
    },
  };
}
