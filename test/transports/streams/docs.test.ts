/**
 * docs/transports/sse.md names what the code has: every session event type the stream sends as
 * `event:`, and every option of createStreamsTransport (websocket.md sends its readers there "for
 * the options"). Read from the sources, so a new event type or option shows up here.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const read = (p: string): string => readFileSync(resolve(ROOT, p), 'utf8');
const between = (text: string, start: string, end: string): string => {
  const from = text.indexOf(start);
  const to = text.indexOf(end, from + start.length);
  expect(from, start).toBeGreaterThanOrEqual(0);
  expect(to, end).toBeGreaterThan(from);
  return text.slice(from + start.length, to);
};

describe('streams: the SSE page names what the transport has', () => {
  const sse = read('docs/transports/sse.md');

  it('sse:docs:event-types — "event: its type (…)": the list names every type of the SessionEvent union', () => {
    const union = between(read('src/types.ts'), 'export type SessionEventBody =', 'export type SessionEventType');
    const types = [...union.matchAll(/\btype: '([\w.]+)'/g)].map((m) => m[1]!);
    expect(types).toEqual(expect.arrayContaining(['turn.started', 'message.joined', 'turnTools.changed', 'turn.settled']));
    const list = between(sse, '`event:` its `type`', '`data:`');
    const listed = [...list.matchAll(/`([\w.]+)`/g)].map((m) => m[1]!);
    expect([...listed].sort()).toEqual([...new Set(types)].sort());
  });

  it('sse:docs:options — "see sse.md for the options": the createStreamsTransport snippet names every StreamsTransportOptions field', () => {
    const iface = between(read('src/transports/streams/index.ts'), 'export interface StreamsTransportOptions {', '\n}');
    const options = [...iface.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]!);
    expect(options).toEqual(expect.arrayContaining(['runtime', 'maxBufferedBytes', 'maxFrameBytes', 'allowedOrigins']));
    const snippet = between(sse, 'createStreamsTransport({', '});');
    for (const o of options) expect(snippet, o).toMatch(new RegExp(`\\b${o}\\b`));
  });
});
