/**
 * The Messages API request for a ModelRequest: the params (model, max_tokens, thinking, tool
 * choice), the tool list and system prompt marked for prompt caching, and a history the API
 * accepts (normaliseHistory). Names the SDK's types only; `turnstate/anthropic` (anthropic.ts) is
 * what loads the SDK.
 */
import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ModelRequest } from '../api.js';
import type { ContentBlock, ModelMessage, ModelTool } from '../types.js';

const EPHEMERAL = Object.freeze({ type: 'ephemeral' as const });

type ToolParam = {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  eager_input_streaming?: boolean;
  cache_control?: { type: 'ephemeral' };
};

const toolCache = new WeakMap<readonly ModelTool[], ToolParam[]>();

/** Tool params; the last carries cache_control so the whole tool list is a cached prefix. Cached per tools array. */
export function buildTools(tools: readonly ModelTool[]): ToolParam[] {
  const hit = toolCache.get(tools);
  if (hit !== undefined) return hit;
  const out = tools.map((t, i): ToolParam => {
    const p: ToolParam = { name: t.name, description: t.description, input_schema: t.input_schema };
    if (t.eager_input_streaming === true) p.eager_input_streaming = true;
    if (i === tools.length - 1) p.cache_control = EPHEMERAL;
    return p;
  });
  toolCache.set(tools, out);
  return out;
}

/** The Messages API request for a ModelRequest (streaming). */
export function buildRequest(req: ModelRequest, d: { model: string; maxTokens: number }): MessageCreateParamsStreaming {
  let maxTokens = d.maxTokens;
  const params: Record<string, unknown> = {
    model: d.model,
    max_tokens: maxTokens,
    stream: true,
    messages: normaliseHistory(req.messages),
  };
  if (!isBlank(req.system)) params.system = [{ type: 'text', text: req.system, cache_control: EPHEMERAL }];
  if (req.tools.length > 0) {
    params.tools = buildTools(req.tools);
    params.tool_choice = req.thinking !== undefined || req.toolChoice === 'auto' ? { type: 'auto' } : { type: 'any' };
  }
  if (req.thinking !== undefined) {
    const budget = req.thinking.budgetTokens;
    // The thinking budget counts against max_tokens, which must exceed it.
    if (maxTokens <= budget) maxTokens = budget + d.maxTokens;
    params.max_tokens = maxTokens;
    params.thinking = { type: 'enabled', budget_tokens: budget };
  }
  return params as unknown as MessageCreateParamsStreaming;
}

const INTERRUPTED_RESULT = 'No result was recorded for this tool call (the turn was interrupted).';

/**
 * Makes a history the Messages API accepts: consecutive same-role messages merged; after an
 * assistant message with tool_use blocks, the next user message starts with exactly one
 * tool_result per tool_use, in the same order (a missing one is filled with an is_error result;
 * a result matching no tool_use becomes a text block); empty and whitespace-only text blocks (the
 * API refuses them: "text content blocks must contain non-whitespace text"), then empty messages,
 * dropped, the messages around a dropped one merging when they share a role; thinking and
 * redacted_thinking blocks passed through unchanged.
 */
export function normaliseHistory(messages: readonly ModelMessage[]): Array<{ role: 'user' | 'assistant'; content: unknown[] }> {
  // 1. drop empty and whitespace-only text blocks, then empty messages; merge consecutive same-role messages.
  const merged: Array<{ role: 'user' | 'assistant'; content: ContentBlock[] }> = [];
  for (const m of messages) {
    const blocks = m.content.filter((b) => !(b.type === 'text' && isBlank(b.text)));
    if (blocks.length === 0) continue;
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === m.role) last.content.push(...blocks);
    else merged.push({ role: m.role, content: blocks });
  }
  // 2. place tool_results.
  const out: Array<{ role: 'user' | 'assistant'; content: unknown[] }> = [];
  let expected: string[] = [];
  for (let i = 0; i < merged.length; i++) {
    const m = merged[i]!;
    if (m.role === 'assistant') {
      if (expected.length > 0) out.push({ role: 'user', content: expected.map(missingResult) });
      const content = m.content.map(toAssistantParam).filter((b): b is Record<string, unknown> => b !== undefined);
      expected = [];
      for (const b of m.content) if (b.type === 'tool_use') expected.push(b.id);
      if (content.length > 0) out.push({ role: 'assistant', content });
      continue;
    }
    const results = new Map<string, ContentBlock & { type: 'tool_result' }>();
    const rest: unknown[] = [];
    for (const b of m.content) {
      if (b.type === 'tool_result') {
        if (expected.includes(b.tool_use_id) && !results.has(b.tool_use_id)) results.set(b.tool_use_id, b);
        else rest.push({ type: 'text', text: `[result of tool call ${b.tool_use_id}${b.is_error ? ', error' : ''}]\n${b.content}` });
      } else {
        const p = toUserParam(b);
        if (p !== undefined) rest.push(p);
      }
    }
    const first: unknown[] = expected.map((id) => {
      const r = results.get(id);
      return r === undefined ? missingResult(id) : toolResultParam(r);
    });
    expected = [];
    const content = first.length > 0 ? first.concat(rest) : rest;
    if (content.length > 0) out.push({ role: 'user', content });
  }
  if (expected.length > 0) out.push({ role: 'user', content: expected.map(missingResult) });
  return out;
}

/** Empty or whitespace only: the API refuses such a text block. */
function isBlank(s: string): boolean {
  return s.length === 0 || s.trim().length === 0;
}

function missingResult(id: string): Record<string, unknown> {
  return { type: 'tool_result', tool_use_id: id, content: INTERRUPTED_RESULT, is_error: true };
}

function toolResultParam(b: { tool_use_id: string; content: string; is_error?: boolean }): Record<string, unknown> {
  const p: Record<string, unknown> = { type: 'tool_result', tool_use_id: b.tool_use_id, content: b.content };
  if (b.is_error === true) p.is_error = true;
  return p;
}

function toAssistantParam(b: ContentBlock): Record<string, unknown> | undefined {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'tool_use': {
      const input = b.input !== null && typeof b.input === 'object' && !Array.isArray(b.input) ? b.input : {};
      return { type: 'tool_use', id: b.id, name: b.name, input };
    }
    case 'thinking':
      return { type: 'thinking', thinking: b.thinking, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
    case 'tool_result':
      // A tool_result cannot sit in an assistant message; keep its text.
      return { type: 'text', text: `[result of tool call ${b.tool_use_id}]\n${b.content}` };
  }
}

function toUserParam(b: ContentBlock): Record<string, unknown> | undefined {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'tool_use':
    case 'thinking':
    case 'redacted_thinking':
      // Model-authored blocks cannot appear in a user message; they are dropped.
      return undefined;
    case 'tool_result':
      return toolResultParam(b);
  }
}
