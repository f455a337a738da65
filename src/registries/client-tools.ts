/**
 * The one check of client-tool names (AAP client-side tools, `SendOptions.clientTools`): each
 * needs a name, no name twice, and no name the runtime or a server tool already gives the model
 * (respond(), the spec 003 tools, the actor's tools). Each caller maps the problem onto its own
 * error (a TurnstateError in the host, a 400 with a JSON pointer in AAP).
 */
import { RESERVED_TOOL_NAMES } from './tools.js';

export type ClientToolProblem =
  | { kind: 'unnamed'; index: number }
  | { kind: 'duplicate'; index: number; name: string }
  /** The name is reserved by the runtime or is one of the server tools given as taken. */
  | { kind: 'taken'; index: number; name: string };

/** The first problem among `tools`' names, in order; undefined when every name is free. */
export function clientToolNameProblem(
  tools: readonly { readonly name?: unknown }[],
  isServerTool: (name: string) => boolean,
): ClientToolProblem | undefined {
  const seen = new Set<string>();
  for (let index = 0; index < tools.length; index++) {
    const name = tools[index]?.name;
    if (typeof name !== 'string' || name === '') return { kind: 'unnamed', index };
    if (seen.has(name)) return { kind: 'duplicate', index, name };
    if (RESERVED_TOOL_NAMES.includes(name) || isServerTool(name)) return { kind: 'taken', index, name };
    seen.add(name);
  }
  return undefined;
}
