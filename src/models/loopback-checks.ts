/**
 * Request rules of the Messages API that the loopback server enforces as the real API does, with
 * a 400 `invalid_request_error` naming the message and block: a client that breaks them offline
 * would be refused online.
 * - With thinking on, the assistant message holding the lastmost tool_use blocks starts with a
 *   `thinking` or `redacted_thinking` block (they are sent back unchanged).
 * - Every tool_use of an assistant message is answered by a tool_result in the next message.
 */

type Block = { type?: unknown; id?: unknown; tool_use_id?: unknown };
type Message = { role?: unknown; content?: unknown };

const blocksOf = (m: Message): Block[] => (Array.isArray(m.content) ? (m.content as Block[]) : []);

/** The first rule the request body breaks, as the API's message, or undefined. */
export function requestProblem(body: { messages?: unknown; thinking?: { type?: unknown } }): string | undefined {
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const uses = blocksOf(m).filter((b) => b.type === 'tool_use').map((b) => b.id);
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(next === undefined ? [] : blocksOf(next).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id));
    const missing = uses.filter((id) => !answered.has(id));
    if (next !== undefined && missing.length > 0) {
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  if (body.thinking?.type !== 'enabled') return undefined;
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
