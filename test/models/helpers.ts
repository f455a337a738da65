import Anthropic from '@anthropic-ai/sdk';
import { ModelError } from '../../src/errors.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../../src/machines/ports.js';
import type { ModelTool } from '../../src/types.js';
import { createAnthropicModel } from '../../src/models/anthropic.js';
import type { AnthropicModelOptions } from '../../src/models/anthropic.js';
import { startLoopbackMessagesServer } from '../../src/models/loopback-server.js';
import type { LoopbackMessagesServer, LoopbackTurn } from '../../src/models/loopback-server.js';

export const TEST_KEY = 'sk-ant-test-9f8e7d6c5b4a-SECRET';

export const RESPOND_TOOL: ModelTool = {
  name: 'respond',
  description: 'Emit a structured response.',
  input_schema: { type: 'object', required: ['parts', 'turnState'], properties: { parts: { type: 'array' }, turnState: { type: 'string' } } },
  eager_input_streaming: true,
};
export const SEARCH_TOOL: ModelTool = {
  name: 'search_flights',
  description: 'Search flights.',
  input_schema: { type: 'object', properties: { from: { type: 'string' }, to: { type: 'string' } } },
};

export function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    sessionId: 's1',
    turnId: 't1',
    actor: 'sally',
    model: 'claude-test',
    system: 'You are Sally.',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Flights to Corfu?' }] }],
    tools: [SEARCH_TOOL, RESPOND_TOOL],
    toolChoice: 'any',
    ...over,
  };
}

export interface Rig {
  server: LoopbackMessagesServer;
  client: Anthropic;
  model: ModelPort;
}

/** A loopback server, the real SDK pointed at it, and the adapter; fast retries by default. */
export async function rig(script: LoopbackTurn[] = [], opts: Partial<AnthropicModelOptions> = {}): Promise<Rig> {
  const server = await startLoopbackMessagesServer({ script });
  const client = new Anthropic({ baseURL: server.url, apiKey: TEST_KEY, maxRetries: 0 });
  const model = createAnthropicModel({ client, retry: { baseDelayMs: 1, maxDelayMs: 5, ...(opts.retry ?? {}) }, ...opts });
  return { server, client, model };
}

export async function collect(it: AsyncIterable<ModelEvent>): Promise<{ events: ModelEvent[]; error: unknown }> {
  const events: ModelEvent[] = [];
  try {
    for await (const ev of it) events.push(ev);
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

export function asModelError(e: unknown): ModelError {
  if (!(e instanceof ModelError)) throw new Error(`expected a ModelError, got ${String(e)}`);
  return e;
}

export const respondInput = (text: string, partType = 'response', turnState = 'complete') => ({
  parts: [{ text, metadata: { partType } }],
  turnState,
});
