/**
 * How AAP SSE turn responses end when the turn does not: the client goes away mid-turn, or the
 * server shuts down mid-turn. A `wait` tool holds the turn until the test releases it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createParser } from 'eventsource-parser';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { Runtime } from '../../../src/api.js';
import { TurnstateError } from '../../../src/errors.js';
import { MAX_TIMER_MS } from '../../../src/limits.js';
import type { ModelScript } from '../../../src/models/script.js';
import { createScriptedModel } from '../../../src/models/scripted.js';
import { createRuntime } from '../../../src/runtime.js';
import { createAapHandler } from '../../../src/transports/aap/index.js';
import { createSession, startHarness, type Harness, type SseEvent } from './helpers.js';

const SLOW: ModelScript = {
  rules: [
    { when: { on: 'user', text: 'slow' }, respond: { blocks: [{ type: 'tool_use', name: 'wait', input: {} }] } },
    { when: { on: 'tool_result' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text: 'slow done' }], turnState: 'complete' } }] } },
  ],
};

/** Registers the held `wait` tool; `release()` lets every waiting call finish. */
function holding(): { setup: (rt: Runtime) => void; release: () => void } {
  const waiting: (() => void)[] = [];
  let released = false;
  return {
    setup(rt) {
      rt.registries.tools.register({
        name: 'wait',
        description: 'Waits until the test releases it',
        inputSchema: { type: 'object' },
        scope: 'generalist',
        handler: () => (released ? Promise.resolve('released') : new Promise<string>((resolve) => waiting.push(() => resolve('released')))),
      });
      rt.registries.actors.register({ name: 'slowpoke', tools: ['wait'] });
    },
    release() {
      released = true;
      for (const w of waiting.splice(0)) w();
    },
  };
}

async function untilToolCalled(runtime: Runtime, sid: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await runtime.history(sid)).some((e) => e.type === 'tool.called')) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('the slow turn never called its tool');
}

function parseSse(raw: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({ onEvent: (e) => events.push({ event: e.event ?? 'message', rawData: e.data, data: JSON.parse(e.data) }) });
  parser.feed(raw);
  return events;
}

describe('AAP SSE turns that do not finish on their stream', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('aap:sse:client-gone — a client that drops its SSE turn mid-stream leaves no heartbeat running behind it', async () => {
    // A heartbeat interval no other timer uses, to pick the responses' heartbeats out.
    const HB = 3_600_017;
    const setSpy = vi.spyOn(globalThis, 'setInterval');
    const clearSpy = vi.spyOn(globalThis, 'clearInterval');
    const hold = holding();
    const runtime = createRuntime({ model: createScriptedModel(SLOW) });
    hold.setup(runtime);
    const handler = createAapHandler({ runtime, agents: [{ name: 'slowpoke' }], heartbeatMs: HB });
    // The server sees each turn response close (the client went) before the turn is released.
    let closedTurns = 0;
    const server: Server = createServer((req, res) => {
      if (req.url?.endsWith('/turns')) res.once('close', () => closedTurns++);
      void handler(req, res).then((handled) => {
        if (!handled) res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    cleanups.push(async () => {
      hold.release();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await runtime.close();
    });

    const sids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const sid = await createSession(url, { name: 'slowpoke' });
      sids.push(sid);
      const ac = new AbortController();
      const res = await fetch(`${url}/sessions/${sid}/turns`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ stream: 'delta', messages: [{ role: 'user', content: 'slow please' }] }),
        signal: ac.signal,
      });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const first = await res.body!.getReader().read();
      expect(new TextDecoder().decode(first.value)).toContain('event: turn_start');
      await untilToolCalled(runtime, sid);
      ac.abort();
      while (closedTurns < i + 1) await new Promise((r) => setTimeout(r, 5));
    }
    hold.release();
    for (const sid of sids) await (await runtime.session(sid))!.idle();

    const heartbeats = setSpy.mock.calls.flatMap((c, i) => (c[1] === HB ? [setSpy.mock.results[i]!.value as unknown] : []));
    expect(heartbeats).toHaveLength(3);
    const cleared = new Set(clearSpy.mock.calls.map((c) => c[0] as unknown));
    expect(heartbeats.filter((t) => !cleared.has(t))).toEqual([]);
  });

  it('aap:turn_stop:server-close — "every SSE response ends with exactly one turn_stop … never a dropped socket": a turn still running when the server closes ends with turn_stop error', async () => {
    const hold = holding();
    const h: Harness = await startHarness({ script: SLOW, setup: hold.setup, agents: [{ name: 'slowpoke' }], aap: { closeGraceMs: 50 }, closeTimeoutMs: 5_000 });
    cleanups.push(async () => {
      hold.release();
      await h.close();
    });
    const sid = await createSession(h.url, { name: 'slowpoke' });
    const res = await fetch(`${h.url}/sessions/${sid}/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ stream: 'delta', messages: [{ role: 'user', content: 'slow please' }] }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = res.text();
    await untilToolCalled(h.runtime, sid);
    // The turn outlives the grace period: the close must still end its stream properly.
    const closing = h.server.close();
    const raw = await body;
    const events = parseSse(raw);
    expect(events[0]?.event).toBe('turn_start');
    expect(events.filter((e) => e.event === 'turn_stop')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ event: 'turn_stop', data: { stopReason: 'error' } });
    expect(raw.endsWith('\n\n')).toBe(true);
    hold.release();
    await closing;
  });
});

describe('createAapHandler: the options', () => {
  const runtime = createRuntime({ model: createScriptedModel(SLOW) });
  afterAll(async () => runtime.close());
  const refused = (opts: Record<string, unknown>, message: string): void => {
    expect(() => createAapHandler({ runtime, ...opts }), message).toThrow(expect.objectContaining({ name: 'TurnstateError', code: 'options.invalid', message: `createAapHandler: ${message}` }));
  };
  const timer = `${MAX_TIMER_MS} (milliseconds: the longest a timer can wait, about 24.8 days)`;

  it('aap:options:checked — "as createRuntime does": an unknown option is refused naming the one it resembles; maxBodyBytes is a positive integer (NaN no longer means no limit), heartbeatMs 0 (off) or an integer from 100 ms, closeGraceMs an integer from 0, each within a timer\'s range; every refusal shows the value received', async () => {
    refused({ heartbeatMS: 1000 }, '`heartbeatMS` is not an option (did you mean `heartbeatMs`?); the options are runtime, authenticate, maxBodyBytes, agents, basePath, streamModes, publicMeta, heartbeatMs, closeGraceMs');
    refused({ maxBodyByte: 10 }, '`maxBodyByte` is not an option (did you mean `maxBodyBytes`?); the options are runtime, authenticate, maxBodyBytes, agents, basePath, streamModes, publicMeta, heartbeatMs, closeGraceMs');
    for (const [v, shown] of [[Number.NaN, 'NaN'], [-1, '-1'], [0, '0'], [1.5, '1.5'], ['10', '"10"'], [2 ** 53 + 2, '9007199254740994'], [Number.POSITIVE_INFINITY, 'Infinity']] as const) {
      refused({ maxBodyBytes: v }, `\`maxBodyBytes\` must be an integer of at least 1, got ${shown}`);
    }
    for (const [v, shown] of [[2 ** 31, '2147483648'], [0.5, '0.5'], [Number.NaN, 'NaN'], [-1, '-1'], [-0.5, '-0.5'], [99, '99'], ['300', '"300"']] as const) {
      refused({ heartbeatMs: v }, `\`heartbeatMs\` must be 0 (no heartbeat) or an integer from 100 to ${timer}, got ${shown}`);
    }
    for (const [v, shown] of [[2 ** 31, '2147483648'], [Number.NaN, 'NaN'], [-1, '-1'], [1.5, '1.5'], ['10000', '"10000"']] as const) {
      refused({ closeGraceMs: v }, `\`closeGraceMs\` must be an integer from 0 to ${timer}, got ${shown}`);
    }
    refused({ streamModes: ['delta', 'sse'] }, "`streamModes` must be an array of 'delta', 'message', 'none', got [\"delta\",\"sse\"]");
    refused({ authenticate: 'bearer' }, '`authenticate` must be a function, got "bearer"');
    expect(() => createAapHandler({ runtime: undefined as never })).toThrow(expect.objectContaining({ code: 'options.invalid', message: 'createAapHandler: needs a `runtime` (createRuntime())' }));
    for (const ok of [{ heartbeatMs: 0, closeGraceMs: 0, maxBodyBytes: 1 }, { heartbeatMs: 100, closeGraceMs: MAX_TIMER_MS }, { heartbeatMs: MAX_TIMER_MS, maxBodyBytes: Number.MAX_SAFE_INTEGER }]) {
      await createAapHandler({ runtime, ...ok }).close();
    }
  });

  it('aap:options:code — "one code for a factory given an option it cannot use": every refusal of createAapHandler is TurnstateError options.invalid (not a bare TypeError), its message starting createAapHandler: and naming the option', () => {
    const cases: [unknown, RegExp][] = [
      [{ runtime, closeGraceMS: 10 }, /^createAapHandler: `closeGraceMS` is not an option \(did you mean `closeGraceMs`\?\)/],
      [{ runtime, heartbeatMs: Number.NaN }, /^createAapHandler: `heartbeatMs` must be .*, got NaN$/],
      [{ runtime, maxBodyBytes: '1000' }, /^createAapHandler: `maxBodyBytes` must be an integer of at least 1, got "1000"$/],
      [{ runtime, publicMeta: 'yes' }, /^createAapHandler: `publicMeta` must be a boolean, got "yes"$/],
      [{ runtime, agents: {} }, /^createAapHandler: `agents` must be an array of agent configs, got \{\}$/],
      [{ runtime: {} }, /^createAapHandler: needs a `runtime`/],
      [null, /^createAapHandler: options must be an object \{ runtime, \.\.\. \}, got null$/],
    ];
    for (const [opts, message] of cases) {
      let thrown: unknown;
      try {
        createAapHandler(opts as never);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, String(message)).toBeInstanceOf(TurnstateError);
      expect(thrown, String(message)).toMatchObject({ code: 'options.invalid', message: expect.stringMatching(message) });
    }
  });
});
