/**
 * AAP agents: which actors are offered, which of their server tools are exposed for
 * configuration (`/meta` tools), and how a session's `agent.tools` turn into SendOptions.
 *
 * Exposed tools are the approval-gated tools an agent can reach (its own and its hand-off
 * targets', transitively) unless `exposedTools` names them. Exposed tools are off until a
 * client enables them; unexposed tools always run (trusted, inline).
 */
import { formatValue } from '../../limits.js';
import { clientToolNameProblem } from '../../registries/client-tools.js';
import { argumentSchemaProblem } from '../../registries/json-schema.js';
import { TOOL_NAME, TOOL_NAME_RULE } from '../../registries/tools.js';
import type { PartTypeRegistryApi, Registries, RegisteredTool } from '../../registries/types.js';
import type { AgentCard } from '../../types.js';
import type { DoubleTextingPolicy } from '../../types.js';
import { HttpError } from '../http.js';
import type { AgentConfig, AgentInfo, AgentOptionSpec, MetaToolSpec, ServerToolRef, StreamMode, ToolSpec } from './types.js';

export interface AapAgentConfig {
  /** The entry actor's name (the AAP agent name). */
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  version?: string | undefined;
  /** Server tools offered for configuration; default: every approval-gated tool the agent reaches. */
  exposedTools?: string[] | undefined;
  options?: AgentOptionSpec[] | undefined;
  /** Double-texting policy of sessions created for this agent (default: the runtime's). */
  doubleTexting?: DoubleTextingPolicy | undefined;
}

export interface ResolvedAgent {
  config: AapAgentConfig;
  /** Every server tool the agent can reach. */
  reachable: Map<string, RegisteredTool>;
  exposed: Map<string, RegisteredTool>;
}

/** The tools an actor can reach, following hand-offs. */
export function reachableTools(registries: Registries, actor: string): Map<string, RegisteredTool> {
  const out = new Map<string, RegisteredTool>();
  const seen = new Set<string>();
  const queue = [actor];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const def = registries.actors.get(name);
    if (def === undefined) continue;
    for (const t of def.tools ?? []) {
      const tool = registries.tools.get(t);
      if (tool !== undefined) out.set(t, tool);
    }
    for (const h of def.handoffs ?? []) queue.push(h);
  }
  return out;
}

export function resolveAgent(registries: Registries, config: AapAgentConfig): ResolvedAgent {
  const reachable = reachableTools(registries, config.name);
  const exposed = new Map<string, RegisteredTool>();
  if (config.exposedTools !== undefined) {
    for (const name of config.exposedTools) {
      const tool = reachable.get(name) ?? registries.tools.get(name);
      if (tool !== undefined) exposed.set(name, tool);
    }
  } else {
    for (const [name, tool] of reachable) if (tool.approval.kind !== 'none') exposed.set(name, tool);
  }
  return { config, reachable, exposed };
}

export function metaTool(tool: RegisteredTool): MetaToolSpec {
  const trust: MetaToolSpec['trust'] = { policy: tool.approval.kind, allowStandingApproval: tool.approval.allowStandingApproval };
  if (tool.approval.expression !== undefined) trust.expression = tool.approval.expression;
  return { name: tool.name, description: tool.description, parameters: tool.inputSchema, trust };
}

/** `consumes` (turnstate extension) must name registered part types: else 400 naming the entry. */
export function checkConsumes(partTypes: PartTypeRegistryApi, consumes: readonly string[], base: string): void {
  consumes.forEach((t, i) => {
    if (!partTypes.has(t)) {
      throw new HttpError(400, 'consumes.unknown_part_type', `"${t}" is not a part type this server knows (part types: ${partTypes.ids().join(', ')})`, { path: `${base}/${i}` });
    }
  });
}

export function agentInfo(agent: ResolvedAgent, modes: readonly StreamMode[], cardOf?: (actor: string) => AgentCard | undefined): AgentInfo {
  const { config } = agent;
  const stream: NonNullable<AgentInfo['capabilities']>['stream'] = {};
  for (const m of modes) stream[m] = {};
  const info: AgentInfo = {
    name: config.name,
    version: config.version ?? '1.0.0',
    tools: [...agent.exposed.values()].map(metaTool),
    capabilities: {
      history: { compacted: {}, full: {} },
      stream,
      application: { tools: {} },
    },
  };
  if (config.title !== undefined) info.title = config.title;
  const description = config.description;
  if (description !== undefined) info.description = description;
  if (config.options !== undefined && config.options.length > 0) info.options = config.options;
  const card = cardOf?.(config.name);
  if (card) info.card = card;
  return info;
}

/**
 * Checks `agent.tools` against the exposed tools: unknown names and `trust: true` on a tool
 * that forbids standing approvals are 400s naming the field.
 */
export function checkServerTools(agent: ResolvedAgent, tools: readonly ServerToolRef[], base: string): void {
  const seen = new Set<string>();
  tools.forEach((ref, i) => {
    const tool = agent.exposed.get(ref.name);
    if (tool === undefined) {
      const offered = [...agent.exposed.keys()];
      throw new HttpError(
        400,
        'tool.unknown',
        `agent "${agent.config.name}" exposes no server tool "${ref.name}"` +
          (offered.length > 0 ? ` (exposed: ${offered.join(', ')})` : ' (it exposes none)'),
        { path: `${base}/${i}/name` },
      );
    }
    if (seen.has(ref.name)) {
      throw new HttpError(400, 'tool.duplicate', `server tool "${ref.name}" is listed twice`, { path: `${base}/${i}/name` });
    }
    seen.add(ref.name);
    if (ref.trust === true && !tool.approval.allowStandingApproval) {
      throw new HttpError(
        400,
        'tool.standing_approval_forbidden',
        `server tool "${ref.name}" forbids standing approvals: trust: true is not accepted, each call asks for permission`,
        { path: `${base}/${i}/trust` },
      );
    }
  });
}

/**
 * Client tool names must be names the model APIs accept (TOOL_NAME), unique, and must not shadow
 * the runtime's or the agent's server tools (clientToolNameProblem), and each tool's `parameters`
 * must be what a registered tool's inputSchema may be (argumentSchemaProblem): the rules `send()`
 * applies to `clientTools` (the schema has already made `description` a string and `parameters`
 * an object), checked when a session is created or a turn sends tools, so a session never keeps
 * tools its turns would refuse.
 */
export function checkClientTools(agent: ResolvedAgent, tools: readonly ToolSpec[], base: string): void {
  tools.forEach((t, i) => {
    if (!TOOL_NAME.test(t.name)) {
      throw new HttpError(400, 'request.invalid', `client tool name ${formatValue(t.name)} is not a tool name the model APIs accept: use ${TOOL_NAME_RULE}`, {
        path: `${base}/${i}/name`,
      });
    }
  });
  const problem = clientToolNameProblem(tools, (name) => agent.reachable.has(name));
  if (problem !== undefined) {
    const path = `${base}/${problem.index}/name`;
    if (problem.kind === 'unnamed') throw new HttpError(400, 'request.invalid', 'every client tool needs a non-empty "name"', { path });
    if (problem.kind === 'duplicate') throw new HttpError(400, 'tool.duplicate', `client tool "${problem.name}" is declared twice`, { path });
    throw new HttpError(400, 'tool.name_conflict', `client tool "${problem.name}" has the name of one of the agent's tools; tool names must be unique`, { path });
  }
  tools.forEach((t, i) => {
    const why = argumentSchemaProblem(t.parameters);
    if (why !== undefined) throw new HttpError(400, 'request.invalid', `the parameters of client tool "${t.name}" ${why}`, { path: `${base}/${i}/parameters` });
  });
}

/** Checks options against the agent's declared options (unknown keys and bad select values are 400s). */
export function checkOptions(agent: ResolvedAgent, options: Record<string, string>, base: string): void {
  const declared = agent.config.options ?? [];
  for (const [key, value] of Object.entries(options)) {
    const spec = declared.find((o) => o.name === key);
    if (spec === undefined) {
      throw new HttpError(
        400,
        'option.unknown',
        `agent "${agent.config.name}" declares no option "${key}"` +
          (declared.length > 0 ? ` (options: ${declared.map((o) => o.name).join(', ')})` : ' (it declares none)'),
        { path: `${base}/${key}` },
      );
    }
    if (spec.type === 'select' && !(spec.options ?? []).includes(value)) {
      throw new HttpError(400, 'option.invalid', `option "${key}" must be one of ${JSON.stringify(spec.options ?? [])}`, {
        path: `${base}/${key}`,
      });
    }
  }
}

/** How an AAP client enables an exposed server tool of `agent` (SendOptions.howToEnableTools; `{tool}` is the tool's name). */
export function howToEnableTools(agent: string): string {
  return `An AAP client enables it by listing it in the session's agent.tools: {"agent":{"name":${JSON.stringify(agent)},"tools":[{"name":"{tool}"}]}} in POST /sessions or in the next turn request (GET /meta lists the tools an agent exposes).`;
}

/** The server tool names a turn may use: every unexposed reachable tool plus the enabled exposed ones. */
export function enabledToolNames(agent: ResolvedAgent, config: AgentConfig): string[] {
  const enabled = new Set((config.tools ?? []).map((t) => t.name));
  const out: string[] = [];
  for (const name of agent.reachable.keys()) if (!agent.exposed.has(name) || enabled.has(name)) out.push(name);
  return out;
}

/** Tools the client trusts (standing approvals). */
export function trustedToolNames(config: AgentConfig): string[] {
  return (config.tools ?? []).filter((t) => t.trust === true).map((t) => t.name);
}

/** Secret option values are never echoed. */
export function redactOptions(agent: ResolvedAgent | undefined, options: Record<string, string> | undefined): Record<string, string> | undefined {
  if (options === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(options)) {
    const spec = agent?.config.options?.find((o) => o.name === k);
    out[k] = spec?.type === 'secret' ? '***' : v;
  }
  return out;
}
