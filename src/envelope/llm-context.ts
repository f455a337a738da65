/**
 * The llm-context part (spec 001 "Part 2 — LLM context"): a fast secondary model translates an
 * actor's response parts and the turn's domain data into dense analytical prose for a peer LLM.
 *
 * Contract: one model call with `purpose: 'llm-context'`, forced to call the single tool
 * `write_llm_context({ text })`, so free text never leaks into the part. Resolves with a Part
 * tagged `llm-context`; rejects with a ModelError when the call fails, is aborted, refuses, or
 * ends without a usable `text`. When to call it (only for a peer-LLM consumer, once per turn,
 * cached) is the caller's decision.
 */
import { ModelError } from '../errors.js';
import type { ModelPort, ModelRequest } from '../api.js';
import type { ContentBlock, ModelTool, Part, Usage } from '../types.js';
import { pairSafeEnd } from '../text.js';

export const LLM_CONTEXT_TOOL_NAME = 'write_llm_context';

export interface LlmContextInput {
  sessionId: string;
  turnId: string;
  /** The actor whose response is translated. */
  actor: string;
  /** The actor's response parts for the turn. */
  parts: Part[];
  /** Domain data of the turn (data-bearing records, domain-data parts' data). */
  data: unknown[];
  signal: AbortSignal;
  /** Model id for this call (default: the port's context model). */
  model?: string | undefined;
  /** Default 1024. */
  maxTokens?: number | undefined;
}

export interface LlmContextResult {
  part: Part;
  usage: Usage;
}

/** Text parts not worth translating: bookkeeping and the translation itself. */
const SKIPPED_PART_TYPES: ReadonlySet<string> = new Set(['ack', 'thinking', 'progress', 'llm-context', 'reasoning-trace']);
/** Serialised data beyond this many characters (UTF-16 code units) is cut, never inside a surrogate pair (the peer has the data itself). */
const MAX_DATA_CHARS = 24_000;

const TOOL: ModelTool = Object.freeze({
  name: LLM_CONTEXT_TOOL_NAME,
  description:
    'Write the llm-context part: natural-language analysis of the response and its data for another LLM. Call exactly once.',
  input_schema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: {
        type: 'string',
        minLength: 1,
        description: 'Dense analytical prose: what the data means, trade-offs, notable facts, caveats. No restatement of the raw data.',
      },
    },
  },
}) as ModelTool;
const TOOLS: ModelTool[] = [TOOL];

export const LLM_CONTEXT_SYSTEM_PROMPT = [
  'You translate an agent\'s reply into context for another LLM (a peer agent) that will reason about it.',
  'The peer receives the structured data separately, so do not restate it field by field: explain it.',
  'Write analytical, dense prose: the key findings, comparisons and trade-offs, anything surprising, caveats and what is missing.',
  'Keep concrete figures that carry the argument (prices, times, counts, deltas). Use the language of the reply.',
  `Answer only by calling the ${LLM_CONTEXT_TOOL_NAME} tool, once. Never write free text.`,
].join('\n');

/** Produces the llm-context part for one turn. */
export async function produceLlmContext(model: ModelPort, input: LlmContextInput): Promise<LlmContextResult> {
  const req: ModelRequest = {
    sessionId: input.sessionId,
    turnId: input.turnId,
    actor: input.actor,
    system: LLM_CONTEXT_SYSTEM_PROMPT,
    messages: [{ role: 'user', content: [{ type: 'text', text: describeTurn(input.actor, input.parts, input.data) }] }],
    tools: TOOLS,
    toolChoice: 'any',
    maxTokens: input.maxTokens ?? 1024,
    purpose: 'llm-context',
    ...(input.model !== undefined ? { model: input.model } : {}),
  };
  let content: ContentBlock[] | undefined;
  let usage: Usage = { inputTokens: 0, outputTokens: 0 };
  let stopReason: string | undefined;
  for await (const ev of model.stream(req, input.signal)) {
    if (ev.type === 'message.stop') {
      content = ev.content;
      usage = ev.usage;
      stopReason = ev.stopReason;
    }
  }
  if (stopReason === 'refusal') throw new ModelError('model.refusal', 'the llm-context model refused to write the context');
  const call = content?.find((b): b is ContentBlock & { type: 'tool_use' } => b.type === 'tool_use' && b.name === LLM_CONTEXT_TOOL_NAME);
  const text = call !== undefined && call.inputError === undefined ? (call.input as { text?: unknown }).text : undefined;
  if (typeof text !== 'string' || text.trim().length === 0) {
    if (stopReason === 'max_tokens') {
      throw new ModelError('model.max_tokens', 'the llm-context model ran out of tokens before finishing write_llm_context');
    }
    throw new ModelError(
      'model.unknown',
      call === undefined
        ? `the llm-context model did not call ${LLM_CONTEXT_TOOL_NAME} (stop reason: ${stopReason ?? 'none'})`
        : `the llm-context model called ${LLM_CONTEXT_TOOL_NAME} without a non-empty string \`text\``,
    );
  }
  return {
    part: { text: text.trim(), metadata: { partType: 'llm-context', actor: input.actor, source: 'translator' } },
    usage,
  };
}

/** The user message: the reply's text parts, then the data as JSON. */
export function describeTurn(actor: string, parts: readonly Part[], data: readonly unknown[]): string {
  const lines: string[] = [`Reply of the agent "${actor}":`];
  let any = false;
  const dataItems: unknown[] = [...data];
  for (const p of parts) {
    const type = p.metadata.partType;
    if (p.data !== undefined && type === 'domain-data') dataItems.push(p.data);
    if (typeof p.text !== 'string' || p.text.length === 0 || SKIPPED_PART_TYPES.has(type)) continue;
    lines.push(`[${type}] ${p.text}`);
    any = true;
  }
  if (!any) lines.push('(no text)');
  lines.push('', 'Domain data:');
  if (dataItems.length === 0) {
    lines.push('(none)');
  } else {
    let json: string;
    try {
      json = JSON.stringify(dataItems.length === 1 ? dataItems[0] : dataItems, null, 1) ?? 'null';
    } catch {
      json = '(not serialisable)';
    }
    if (json.length > MAX_DATA_CHARS) {
      const end = pairSafeEnd(json, MAX_DATA_CHARS);
      json = `${json.slice(0, end)}\n… (cut: ${json.length - end} more characters)`;
    }
    lines.push(json);
  }
  return lines.join('\n');
}
