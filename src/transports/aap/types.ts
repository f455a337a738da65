/**
 * Wire types of the Agent Application Protocol (AAP), protocol version 3, as turnstate speaks it.
 * Tool specs use `parameters`; tool-use blocks carry `toolCallId` (not `id`).
 */

import type { AgentCard } from '../../types.js';

export const AAP_PROTOCOL_VERSION = 3;

export type StreamMode = 'delta' | 'message' | 'none';
export const STREAM_MODES: readonly StreamMode[] = ['delta', 'message', 'none'];

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'refusal' | 'error';

export interface AapTextBlock { type: 'text'; text: string }
export interface AapThinkingBlock { type: 'thinking'; thinking: string }
export interface AapToolUseBlock { type: 'tool_use'; toolCallId: string; name: string; input: Record<string, unknown> }
export interface AapImageBlock { type: 'image'; url: string }
export type AapContentBlock = AapTextBlock | AapThinkingBlock | AapToolUseBlock | AapImageBlock;

export interface AapSystemMessage { role: 'system'; content: string }
export interface AapUserMessage { role: 'user'; content: string | AapContentBlock[] }
export interface AapAssistantMessage { role: 'assistant'; content: string | AapContentBlock[] }
export interface AapToolMessage { role: 'tool'; toolCallId: string; content: string | AapContentBlock[] }
export interface AapToolPermissionMessage { role: 'tool_permission'; toolCallId: string; granted: boolean; reason?: string }

export type HistoryMessage = AapSystemMessage | AapUserMessage | AapAssistantMessage | AapToolMessage;
export type TurnMessage = AapUserMessage | AapToolMessage | AapToolPermissionMessage;

export interface ToolSpec {
  name: string;
  title?: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ServerToolRef { name: string; trust?: boolean }

export interface AgentConfig {
  name: string;
  tools?: ServerToolRef[];
  options?: Record<string, string>;
}

export interface CreateSessionRequest {
  agent: AgentConfig;
  messages?: HistoryMessage[];
  tools?: ToolSpec[];
  /** turnstate extension: part types the client consumes (['llm-context']: it is a peer LLM). */
  consumes?: string[];
}

export interface SessionTurnRequest {
  agent?: Omit<AgentConfig, 'name'>;
  stream?: StreamMode;
  messages: TurnMessage[];
  tools?: ToolSpec[];
  /** turnstate extension: replaces the session's `consumes` from this turn on (like `agent` and `tools`). */
  consumes?: string[];
}

/** JSON body of a `stream: "none"` turn. */
export interface AgentResponse {
  stopReason: StopReason;
  messages: HistoryMessage[];
  /** turnstate extension, spec 003 compatibility turns only: what a voice or messaging channel delivers. */
  userResponse?: string;
  /** turnstate extension, spec 003 compatibility turns only: the final text for display. */
  finalContent?: string;
}

export interface SessionResponse {
  sessionId: string;
  agent: AgentConfig;
  tools?: ToolSpec[];
  consumes?: string[];
}

/** SSE event names and their `data:` objects. */
export interface AapSseEvents {
  turn_start: Record<string, never>;
  text_delta: { delta: string };
  thinking_delta: { delta: string };
  text: { text: string };
  thinking: { thinking: string };
  tool_call: { toolCallId: string; name: string; input: Record<string, unknown> };
  tool_result: { toolCallId: string; content: string | AapContentBlock[] };
  /** `userResponse` / `finalContent`: turnstate extension, spec 003 compatibility turns only. */
  turn_stop: { stopReason: StopReason; userResponse?: string; finalContent?: string };
}
export type AapSseEventName = keyof AapSseEvents;

export interface AgentOptionSpec {
  type: 'text' | 'secret' | 'select';
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  options?: string[] | undefined;
  default: string;
}

/** A server tool as `/meta` shows it, with turnstate's trust-policy details. */
export interface MetaToolSpec extends ToolSpec {
  /** turnstate extension: how the tool is gated and whether `trust: true` may pre-approve it. */
  trust: {
    /** 'none' (runs without asking), 'always', 'cel' (auto-approves when the expression holds), 'handler'. */
    policy: 'none' | 'always' | 'cel' | 'handler';
    expression?: string;
    /** False when the tool's policy forbids standing approvals: `trust: true` is refused with 400. */
    allowStandingApproval: boolean;
  };
}

export interface AgentInfo {
  name: string;
  /** turnstate extension: the agent's Agent Card (A2A 1.0 field names; part types in its parts extension). */
  card?: AgentCard;
  title?: string;
  version: string;
  description?: string;
  tools?: MetaToolSpec[];
  options?: AgentOptionSpec[];
  capabilities?: {
    history?: { compacted?: Record<string, never>; full?: Record<string, never> };
    stream?: { delta?: Record<string, never>; message?: Record<string, never>; none?: Record<string, never> };
    application?: { tools?: Record<string, never> };
    image?: { http?: Record<string, never>; data?: Record<string, never> };
  };
}

export interface MetaResponse {
  version: number;
  agents: AgentInfo[];
}
