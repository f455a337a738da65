/**
 * Test harness: a real runtime (ScriptedModel + memory or SQLite store) behind the real AAP
 * transport on a loopback node:http server, driven with plain fetch and eventsource-parser.
 */
import { createParser } from 'eventsource-parser';
import { createRuntime } from '../../../src/runtime.js';
import { createScriptedModel, type ScriptedModel } from '../../../src/models/scripted.js';
import type { ModelScript } from '../../../src/models/script.js';
import type { SessionStore } from '../../../src/machines/ports.js';
import type { Runtime, RuntimeLimits, RuntimeOptions } from '../../../src/api.js';
import { createAapTransport, type AapAgentConfig, type AapOptions } from '../../../src/transports/aap/index.js';
import { PART_BOUNDARY } from '../../../src/transports/aap/projector.js';
import { startServer, type RunningServer } from '../../../src/transports/server.js';
import type { Authenticate } from '../../../src/transports/types.js';
import { createTravelDesk, travelDeskScript, type TravelDesk } from '../../../examples/travel-desk/app.js';

export interface Harness {
  url: string;
  /** The travel desk, when the harness registered it. */
  desk?: TravelDesk;
  runtime: Runtime;
  model: ScriptedModel;
  server: RunningServer;
  close(): Promise<void>;
}

export interface HarnessOptions {
  script?: ModelScript;
  store?: SessionStore;
  authenticate?: Authenticate;
  maxBodyBytes?: number;
  agents?: AapAgentConfig[];
  limits?: Partial<RuntimeLimits>;
  canAnswerApproval?: RuntimeOptions['canAnswerApproval'];
  /** Further AAP options (heartbeatMs, closeGraceMs, ...). */
  aap?: Partial<Omit<AapOptions, 'runtime'>>;
  /** startServer's grace before it destroys open connections on close. */
  closeTimeoutMs?: number;
  /** Register tools/actors (default: the travel desk). */
  setup?: (runtime: Runtime) => void;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const model = createScriptedModel(opts.script ?? travelDeskScript());
  const runtime = createRuntime({
    model,
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.canAnswerApproval ? { canAnswerApproval: opts.canAnswerApproval } : {}),
  });
  let agents = opts.agents;
  let desk: TravelDesk | undefined;
  if (opts.setup) opts.setup(runtime);
  else {
    desk = createTravelDesk(runtime);
    agents ??= desk.agents;
  }
  const transport = createAapTransport({
    runtime,
    ...(opts.authenticate ? { authenticate: opts.authenticate } : {}),
    ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
    ...(agents ? { agents } : {}),
    ...opts.aap,
  });
  const server = await startServer({ runtime, transports: [transport], port: 0, ...(opts.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: opts.closeTimeoutMs }) });
  return { url: server.url, runtime, model, server, ...(desk ? { desk } : {}), close: () => server.close() };
}

export interface SseEvent {
  event: string;
  data: any;
  rawData: string;
}

export interface TurnResult {
  status: number;
  contentType: string;
  /** SSE modes. */
  events: SseEvent[];
  /** The raw body. */
  raw: string;
  /** JSON body (none mode or errors). */
  json: any;
  headers: Headers;
}

export async function api(url: string, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; json: any; headers: Headers; raw: string }> {
  const res = await fetch(url + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  const raw = await res.text();
  let json: any;
  try {
    json = raw === '' ? undefined : JSON.parse(raw);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, headers: res.headers, raw };
}

export async function createSession(url: string, agent: Record<string, unknown> = { name: 'triage', tools: [{ name: 'book_flight' }, { name: 'cancel_booking' }] }, headers?: Record<string, string>): Promise<string> {
  const r = await api(url, '/sessions', { body: { agent }, ...(headers ? { headers } : {}) });
  if (r.status !== 201) throw new Error(`createSession: ${r.status} ${r.raw}`);
  return r.json.sessionId as string;
}

/** POST /sessions/{id}/turns and read the whole response (SSE parsed with eventsource-parser). */
export async function turn(url: string, sessionId: string, body: Record<string, unknown>, headers?: Record<string, string>): Promise<TurnResult> {
  const res = await fetch(`${url}/sessions/${encodeURIComponent(sessionId)}/turns`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const raw = await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  const events: SseEvent[] = [];
  let json: any;
  if (contentType.startsWith('text/event-stream')) {
    const parser = createParser({
      onEvent(e) {
        events.push({ event: e.event ?? 'message', rawData: e.data, data: JSON.parse(e.data) });
      },
    });
    parser.feed(raw);
  } else if (raw !== '') {
    json = JSON.parse(raw);
  }
  return { status: res.status, contentType, events, raw, json, headers: res.headers };
}

export function user(text: string, stream: 'delta' | 'message' | 'none' = 'none', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { stream, messages: [{ role: 'user', content: text }], ...extra };
}

/** Text of a turn in any mode: concatenated text deltas, text events, or assistant text. */
/**
 * The text of a turn as a client shows it: delta mode concatenates the deltas (the boundary
 * between parts is in the stream); message mode and none join the separate messages with the
 * same boundary. The three are equal for one turn (aap:content:same-across-modes).
 */
export function textOf(r: TurnResult): string {
  if (r.events.length > 0) {
    if (r.events.some((e) => e.event === 'text_delta')) return r.events.map((e) => (e.event === 'text_delta' ? e.data.delta : '')).join('');
    return r.events.filter((e) => e.event === 'text').map((e) => e.data.text).join(PART_BOUNDARY);
  }
  const texts: string[] = [];
  for (const m of r.json.messages) {
    if (m.role !== 'assistant') continue;
    if (typeof m.content === 'string') texts.push(m.content);
    else for (const b of m.content) if (b.type === 'text') texts.push(b.text);
  }
  return texts.join(PART_BOUNDARY);
}

export function thinkingOf(r: TurnResult): string {
  if (r.events.length > 0) {
    if (r.events.some((e) => e.event === 'thinking_delta')) return r.events.map((e) => (e.event === 'thinking_delta' ? e.data.delta : '')).join('');
    return r.events.filter((e) => e.event === 'thinking').map((e) => e.data.thinking).join(PART_BOUNDARY);
  }
  const texts: string[] = [];
  for (const m of r.json.messages) {
    if (m.role !== 'assistant' || typeof m.content === 'string') continue;
    for (const b of m.content) if (b.type === 'thinking') texts.push(b.thinking);
  }
  return texts.join(PART_BOUNDARY);
}

/** The tool_use blocks / tool_call events of a turn, in order. */
export function toolCalls(r: TurnResult): { toolCallId: string; name: string; input: any }[] {
  if (r.events.length > 0) return r.events.filter((e) => e.event === 'tool_call').map((e) => e.data);
  const out: { toolCallId: string; name: string; input: any }[] = [];
  for (const m of r.json.messages) {
    if (m.role !== 'assistant' || typeof m.content === 'string') continue;
    for (const b of m.content) if (b.type === 'tool_use') out.push({ toolCallId: b.toolCallId, name: b.name, input: b.input });
  }
  return out;
}

export function toolResults(r: TurnResult): { toolCallId: string; content: any }[] {
  if (r.events.length > 0) return r.events.filter((e) => e.event === 'tool_result').map((e) => e.data);
  return r.json.messages.filter((m: any) => m.role === 'tool').map((m: any) => ({ toolCallId: m.toolCallId, content: m.content }));
}

export function stopReason(r: TurnResult): string {
  if (r.events.length > 0) return r.events[r.events.length - 1]!.data.stopReason;
  return r.json.stopReason;
}

export async function history(url: string, sessionId: string, type: 'full' | 'compacted' = 'full'): Promise<any[]> {
  const r = await api(url, `/sessions/${sessionId}/history?type=${type}`);
  if (r.status !== 200) throw new Error(`history: ${r.status} ${r.raw}`);
  return r.json.history[type];
}

export const MODES = ['delta', 'message', 'none'] as const;
