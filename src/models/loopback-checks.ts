/**
 * Request rules of the Messages API that the loopback server enforces as the real API does, with
 * a 400 `invalid_request_error` and the API's message: a client that breaks them offline would be
 * refused online.
 * - A forced tool choice (`any` or `tool`) with extended thinking enabled is refused, and so is a
 *   `max_tokens` that does not exceed the thinking budget.
 * - A text block must hold non-whitespace text (an empty one is refused too).
 * - Every tool_use of an assistant message is answered by a tool_result in the next message, and
 *   the tool_results come first in that message's content (no tool_result after another block).
 * - With thinking on, the assistant message holding the lastmost tool_use blocks starts with a
 *   `thinking` or `redacted_thinking` block (they are sent back unchanged).
 */

type Block = { type?: unknown; id?: unknown; tool_use_id?: unknown; text?: unknown };
type Message = { role?: unknown; content?: unknown };
type Body = { messages?: unknown; max_tokens?: unknown; thinking?: { type?: unknown; budget_tokens?: unknown }; tool_choice?: { type?: unknown } };

const blocksOf = (m: Message): Block[] => (Array.isArray(m.content) ? (m.content as Block[]) : []);

/** The first rule the request body breaks, as the API's message, or undefined. */
export function requestProblem(body: Body): string | undefined {
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
  const thinking = body.thinking?.type === 'enabled';
  const choice = body.tool_choice?.type;
  if (thinking && (choice === 'any' || choice === 'tool')) return 'Thinking may not be enabled when tool_choice forces tool use.';
  const budget = body.thinking?.budget_tokens;
  if (thinking && typeof budget === 'number' && typeof body.max_tokens === 'number' && body.max_tokens <= budget) {
    return '`max_tokens` must be greater than `thinking.budget_tokens`.';
  }
  return textProblem(messages) ?? toolResultProblem(messages) ?? (thinking ? thinkingProblem(messages) : undefined);
}

function textProblem(messages: Message[]): string | undefined {
  for (const m of messages) {
    for (const b of blocksOf(m)) {
      if (b.type !== 'text' || typeof b.text !== 'string') continue;
      if (b.text.length === 0) return 'messages: text content blocks must be non-empty';
      if (b.text.trim().length === 0) return 'messages: text content blocks must contain non-whitespace text';
    }
  }
  return undefined;
}

function toolResultProblem(messages: Message[]): string | undefined {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const prev = messages[i - 1];
    const uses = prev?.role === 'assistant' ? blocksOf(prev).filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
    if (m.role === 'user') {
      const blocks = blocksOf(m);
      const lead = blocks.findIndex((b) => b.type !== 'tool_result');
      const leading = lead === -1 ? blocks : blocks.slice(0, lead);
      const late = lead === -1 ? -1 : blocks.findIndex((b, j) => j > lead && b.type === 'tool_result');
      if (late !== -1) {
        if (uses.length === 0) {
          return (
            `messages.${i}.content.${late}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(blocks[late]!.tool_use_id)}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.'
          );
        }
        const answered = new Set(leading.map((b) => b.tool_use_id));
        const missing = Math.max(1, uses.filter((id) => !answered.has(id)).length);
        return (
          `messages.${i}: Did not find ${missing} \`tool_result\` block(s) at the beginning of this message. ` +
          'Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.'
        );
      }
    }
    if (m.role !== 'assistant') continue;
    const own = blocksOf(m).filter((b) => b.type === 'tool_use').map((b) => b.id);
    const next = messages[i + 1];
    if (own.length === 0 || next === undefined) continue;
    const answered = new Set(blocksOf(next).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id));
    const missing = own.filter((id) => !answered.has(id));
    if (missing.length > 0) {
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  return undefined;
}

function thinkingProblem(messages: Message[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant' || !blocksOf(m).some((b) => b.type === 'tool_use')) continue;
    const first = blocksOf(m)[0]?.type;
    if (first === 'thinking' || first === 'redacted_thinking') return undefined;
    return (
      `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. ` +
      'When `thinking` is enabled, a final `assistant` message must start with a thinking block ' +
      '(preceeding the lastmost set of `tool_use` and `tool_result` blocks).'
    );
  }
  return undefined;
}
