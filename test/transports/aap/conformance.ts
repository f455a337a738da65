/**
 * Invariants of AAP spec 004 / protocols.md 5.1 checked on every response a test reads.
 */
import { expect } from 'vitest';
import type { TurnResult } from './helpers.js';

export const STOP_REASONS = ['end_turn', 'tool_use', 'max_tokens', 'refusal', 'error'];
const DELTA_EVENTS = new Set(['turn_start', 'text_delta', 'thinking_delta', 'tool_call', 'tool_result', 'turn_stop']);
const MESSAGE_EVENTS = new Set(['turn_start', 'text', 'thinking', 'tool_call', 'tool_result', 'turn_stop']);

export interface StreamFacts {
  calls: Map<string, string>;
  results: Set<string>;
  unresolved: string[];
  stopReason: string;
}

/**
 * Framing, ordering, tool_call/tool_result pairing and the stopReason rule for one response.
 * `prior`: calls shown in earlier responses (the permission-granted follow-up may answer them).
 * `clientTools`: names of client-side tools (never get a tool_result).
 */
export function checkResponse(r: TurnResult, mode: 'delta' | 'message' | 'none', prior: ReadonlyMap<string, string> = new Map(), clientTools: readonly string[] = []): StreamFacts {
  expect(r.status).toBe(200);
  const calls = new Map<string, string>();
  const results = new Set<string>();
  if (mode === 'none') {
    expect(r.contentType).toMatch(/^application\/json/);
    expect(Object.keys(r.json).sort()).toEqual(['messages', 'stopReason']);
    expect(STOP_REASONS).toContain(r.json.stopReason);
    for (const m of r.json.messages) {
      expect(['assistant', 'tool']).toContain(m.role);
      if (m.role === 'assistant' && typeof m.content !== 'string') {
        for (const b of m.content) {
          expect(['text', 'thinking', 'tool_use']).toContain(b.type);
          if (b.type === 'tool_use') {
            expect(Object.keys(b).sort()).toEqual(['input', 'name', 'toolCallId', 'type']);
            expect(typeof b.input).toBe('object');
            calls.set(b.toolCallId, b.name);
          }
        }
      }
      if (m.role === 'tool') {
        expect(calls.has(m.toolCallId) || prior.has(m.toolCallId)).toBe(true);
        expect(results.has(m.toolCallId)).toBe(false);
        results.add(m.toolCallId);
      }
    }
  } else {
    expect(r.contentType).toMatch(/^text\/event-stream/);
    // Framing: every frame is exactly one `event:` line and one `data:` line holding a JSON object.
    const frames = r.raw.split('\n\n').filter((f) => f !== '' && !f.startsWith(':'));
    expect(r.raw.endsWith('\n\n')).toBe(true);
    for (const f of frames) {
      const lines = f.split('\n');
      expect(lines.length).toBe(2);
      expect(lines[0]).toMatch(/^event: [a-z_]+$/);
      expect(lines[1]).toMatch(/^data: \{.*\}$/);
    }
    const ev = r.events;
    expect(ev.length).toBeGreaterThanOrEqual(2);
    expect(ev[0]!.event).toBe('turn_start');
    expect(ev[0]!.data).toEqual({});
    expect(ev.filter((e) => e.event === 'turn_start')).toHaveLength(1);
    expect(ev[ev.length - 1]!.event).toBe('turn_stop');
    expect(ev.filter((e) => e.event === 'turn_stop')).toHaveLength(1);
    // Nothing after turn_stop: the raw body ends with its frame.
    expect(r.raw.endsWith(`event: turn_stop\ndata: ${ev[ev.length - 1]!.rawData}\n\n`)).toBe(true);
    const allowed = mode === 'delta' ? DELTA_EVENTS : MESSAGE_EVENTS;
    for (const e of ev) {
      expect(allowed.has(e.event)).toBe(true);
      if (e.event === 'tool_call') {
        expect(Object.keys(e.data).sort()).toEqual(['input', 'name', 'toolCallId']);
        expect(typeof e.data.input === 'object' && e.data.input !== null && !Array.isArray(e.data.input)).toBe(true);
        expect(calls.has(e.data.toolCallId)).toBe(false);
        calls.set(e.data.toolCallId, e.data.name);
      }
      if (e.event === 'tool_result') {
        expect(Object.keys(e.data).sort()).toEqual(['content', 'toolCallId']);
        expect(typeof e.data.content === 'string' || Array.isArray(e.data.content)).toBe(true);
        expect(calls.has(e.data.toolCallId) || prior.has(e.data.toolCallId)).toBe(true);
        expect(results.has(e.data.toolCallId)).toBe(false);
        results.add(e.data.toolCallId);
      }
      if (e.event === 'text_delta' || e.event === 'thinking_delta') expect(typeof e.data.delta).toBe('string');
      if (e.event === 'text') expect(typeof e.data.text).toBe('string');
      if (e.event === 'thinking') expect(typeof e.data.thinking).toBe('string');
    }
    expect(STOP_REASONS).toContain(ev[ev.length - 1]!.data.stopReason);
    if (ev[ev.length - 1]!.data.error !== undefined) checkError(ev[ev.length - 1]!.data.stopReason, ev[ev.length - 1]!.data.error);
  }
  for (const [id, name] of [...calls, ...prior]) {
    if (clientTools.includes(name)) expect(results.has(id)).toBe(false);
  }
  const unresolved = [...calls.keys()].filter((id) => !results.has(id));
  const stopReason = mode === 'none' ? r.json.stopReason : r.events[r.events.length - 1]!.data.stopReason;
  // tool_use iff some call of this turn is still unresolved (client or untrusted server tool).
  if (stopReason === 'tool_use') expect(unresolved.length).toBeGreaterThan(0);
  if (stopReason === 'end_turn') expect(unresolved).toEqual([]);
  return { calls, results, unresolved, stopReason };
}

/** An errored turn's `error` beside stopReason: only with `error`, exactly `{ code, message }`. */
function checkError(stopReason: string, error: unknown): void {
  expect(stopReason).toBe('error');
  expect(Object.keys(error as object).sort()).toEqual(['code', 'message']);
  expect(error).toEqual({ code: expect.any(String), message: expect.any(String) });
}
