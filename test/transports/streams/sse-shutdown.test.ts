/**
 * SSE requests still being set up when the server closes (sse.md: "A request still being set up
 * when the server shuts down ... is answered `503 server.closing`, not served"), over 127.0.0.1
 * with startServer: a request still awaiting its authentication, its session or its cursor check
 * is refused, not served after the transport has closed, so `close()` does not wait out
 * closeTimeoutMs for it.
 */
import { describe, expect, it } from 'vitest';
import type { SessionHandle } from '../../../src/api.js';
import { startServer } from '../../../src/transports/server.js';
import { createStreamsTransport } from '../../../src/transports/streams/index.js';
import type { Principal } from '../../../src/types.js';
import { createTravelRuntime, tokenAuth } from './app.js';
import { readSse } from './clients.js';

const ann: Principal = { tenantId: 'acme', userId: 'ann' };
/** Far above how long a prompt close takes, far below closeTimeoutMs. */
const CLOSE_BOUND_MS = 3_000;
const CLOSE_TIMEOUT_MS = 10_000;

type Step = 'authentication' | 'session lookup' | 'cursor check';

interface Gate {
  /** Resolves when a request has reached the gated await. */
  reached: Promise<void>;
  wait(): Promise<void>;
  open(): void;
}

function gate(): Gate {
  let reach!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const opened = new Promise<void>((r) => (open = r));
  return {
    reached,
    wait: () => {
      reach();
      return opened;
    },
    open,
  };
}

async function closingDuring(step: Step) {
  const runtime = createTravelRuntime();
  const g = gate();
  let armed = false;
  const held = async (): Promise<void> => {
    if (armed) await g.wait();
  };
  if (step !== 'authentication') {
    const session = runtime.session.bind(runtime);
    runtime.session = async (id: string) => {
      if (step === 'session lookup') await held();
      const h = await session(id);
      if (h === undefined || step !== 'cursor check') return h;
      const snapshot = h.snapshot.bind(h);
      const gated: SessionHandle = Object.assign(Object.create(h) as SessionHandle, {
        snapshot: async () => {
          await held();
          return snapshot();
        },
      });
      return gated;
    };
  }
  const transport = createStreamsTransport({
    runtime,
    heartbeatMs: 60_000,
    authenticate: async (req) => {
      if (step === 'authentication') await held();
      return tokenAuth(req);
    },
  });
  const srv = await startServer({ runtime, transports: [transport], port: 0, host: '127.0.0.1', closeTimeoutMs: CLOSE_TIMEOUT_MS });
  const s = await runtime.createSession({ actor: 'desk', tenantId: 'acme' });
  await (await s.send('find flights to Corfu', { principal: ann })).settled;

  armed = true;
  // A reader that keeps the stream open until the server ends it (as an EventSource does).
  const reading = readSse(`${srv.url}/sessions/${s.id}/events`, {
    headers: { authorization: 'Bearer acme:ann' },
    timeoutMs: CLOSE_TIMEOUT_MS + 5_000,
  }).catch((e: unknown) => ({ status: -1, body: String(e), ended: true }));
  await g.reached;
  // close() closes the transport before it first waits; the request resumes after that.
  const closing = srv.close();
  g.open();
  const prompt = await Promise.race([closing.then(() => true), new Promise<boolean>((res) => setTimeout(() => res(false), CLOSE_BOUND_MS))]);
  const open = transport.stats().sse;
  await closing; // let the server finish before the next case
  const r = await reading;
  return { r, prompt, open };
}

describe('streams: SSE requests set up while the server closes', () => {
  for (const step of ['authentication', 'session lookup', 'cursor check'] as const) {
    it(`sse:shutdown:setup — "a request still being set up when the server shuts down ... is answered 503 server.closing, not served": one still in its ${step} is refused and close() resolves without waiting for closeTimeoutMs`, async () => {
      const { r, prompt, open } = await closingDuring(step);
      expect(r.status).toBe(503);
      expect(JSON.parse(r.body ?? '{}')).toEqual({ error: { code: 'server.closing', message: expect.any(String) } });
      expect(open).toBe(0);
      expect(prompt).toBe(true);
    }, 60_000);
  }
});
