/**
 * The Claude path end to end, offline: the loopback Messages API server, the real
 * `@anthropic-ai/sdk` through createAnthropicModel, and the real runtime with a memory store.
 *
 * `timeline` interleaves what the adapter yielded (tapped on its way into the runtime, unchanged)
 * with the session events a subscriber saw, in the order they happened.
 */
import type { SessionHandle, RuntimeOptions } from '../../../src/api.js';
import type { ModelEvent, ModelPort, ModelRequest } from '../../../src/machines/ports.js';
import { createAnthropicModel } from '../../../src/models/anthropic.js';
import type { AnthropicModelOptions } from '../../../src/models/anthropic.js';
import { startLoopbackMessagesServer } from '../../../src/models/loopback-server.js';
import type { LoopbackMessagesServer, LoopbackReply, LoopbackServerOptions, LoopbackTurn } from '../../../src/models/loopback-server.js';
import { createRuntime, type TurnstateRuntime } from '../../../src/runtime.js';
import type { Part, SessionEvent, SessionEventOf, SessionEventType } from '../../../src/types.js';

export const API_KEY = 'sk-ant-api03-INTEGRATION-7c1e5a9d3f-DO-NOT-LEAK';

export type TimelineEntry = { kind: 'model'; call: number; ev: ModelEvent } | { kind: 'session'; ev: SessionEvent };

export interface Rig {
  server: LoopbackMessagesServer;
  rt: TurnstateRuntime;
  /** The adapter the runtime uses (wrapped by the tap). */
  model: ModelPort;
  timeline: TimelineEntry[];
  /** Requests the runtime made through the port, in order (what the adapter was asked). */
  modelRequests: ModelRequest[];
  close(): Promise<void>;
}

export interface RigOptions {
  script?: LoopbackTurn[];
  server?: Omit<LoopbackServerOptions, 'script'>;
  model?: Partial<AnthropicModelOptions>;
  runtime?: Omit<RuntimeOptions, 'model'>;
}

/** A passthrough that records each yielded ModelEvent in the timeline before the runtime sees it. */
function tap(inner: ModelPort, timeline: TimelineEntry[], requests: ModelRequest[]): ModelPort {
  let calls = 0;
  return {
    name: inner.name,
    async *stream(req: ModelRequest, signal: AbortSignal) {
      const call = calls++;
      requests.push(req);
      for await (const ev of inner.stream(req, signal)) {
        timeline.push({ kind: 'model', call, ev });
        yield ev;
      }
    },
  };
}

export async function rig(opts: RigOptions = {}): Promise<Rig> {
  const server = await startLoopbackMessagesServer({ ...(opts.server ?? {}), script: opts.script ?? [] });
  const adapter = createAnthropicModel({
    baseURL: server.url,
    apiKey: API_KEY,
    model: 'claude-sonnet-4-6',
    retry: { baseDelayMs: 1, maxDelayMs: 5, retries: 2 },
    ...(opts.model ?? {}),
  });
  const timeline: TimelineEntry[] = [];
  const modelRequests: ModelRequest[] = [];
  const model = tap(adapter, timeline, modelRequests);
  const rt = createRuntime({ model, ...(opts.runtime ?? {}) });
  return {
    server,
    rt,
    model,
    timeline,
    modelRequests,
    async close() {
      await rt.close();
      await server.close();
    },
  };
}

/** Subscribes to a session's events (live), recording them and appending them to the timeline. */
export function record(s: SessionHandle, timeline?: TimelineEntry[]) {
  const events: SessionEvent[] = [];
  const sub = s.events().subscribe((ev) => {
    events.push(ev);
    timeline?.push({ kind: 'session', ev });
  });
  return {
    events,
    of<T extends SessionEventType>(type: T): SessionEventOf<T>[] {
      return events.filter((e): e is SessionEventOf<T> => e.type === type);
    },
    stop: () => sub.unsubscribe(),
  };
}

export function respondInput(parts: Part[], turnState: string): { parts: Part[]; turnState: string } {
  return { parts, turnState };
}

export function textPart(partType: string, text: string): Part {
  return { text, metadata: { partType } };
}

/** A reply that settles the turn: one respond() call with a response part, `complete`. */
export function doneReply(id: string, text: string): LoopbackReply {
  return { content: [{ type: 'tool_use', name: 'respond', id, input: { parts: [textPart('response', text)], turnState: 'complete' } }] };
}

/** The Messages API request bodies the server received, in order. */
export function bodies(server: LoopbackMessagesServer): any[] {
  return server.requests.map((r) => r.body);
}

/** True when a request body offers the given tool. */
export function hasTool(body: any, name: string): boolean {
  return Array.isArray(body?.tools) && body.tools.some((t: { name: string }) => t.name === name);
}
