import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../../src/models/scripted.js';
import { createRuntime } from '../../../src/runtime.js';
import type { SessionEvent } from '../../../src/types.js';
import { serve, type Served } from './app.js';
import { WsClient, eventsOf, readSse } from './clients.js';

/** A consumer part type that streaming transports must not send (spec 001 delivery rules). */
const OPS_NOTE = {
  id: 'ops-note',
  meta: {
    description: 'An operator note for buffered channels only.',
    streamingPreferred: false,
    dataBearing: false,
    delivery: { streaming: 'drop', buffered: 'deliver' },
    inEnvelope: true,
    modelEmittable: true,
    carries: 'text',
  },
} as const;

describe('streams: part type delivery rules for the streaming class', () => {
  let srv: Served;
  let sessionId: string;
  let log: SessionEvent[];

  beforeAll(async () => {
    const runtime = createRuntime({
      model: createScriptedModel({
        rules: [
          {
            when: { on: 'user' },
            respond: {
              chunkSize: 6,
              blocks: [
                {
                  type: 'tool_use',
                  name: 'respond',
                  input: {
                    parts: [
                      { text: 'Your trip is confirmed.', metadata: { partType: 'response' } },
                      { text: 'Customer was rude; upsell later.', metadata: { partType: 'ops-note' } },
                    ],
                    turnState: 'complete',
                  },
                },
              ],
            },
          },
        ],
      }),
    });
    runtime.registries.partTypes.register(OPS_NOTE as never);
    runtime.registries.actors.register({ name: 'desk' });
    srv = await serve(runtime);
    const s = await runtime.createSession({ actor: 'desk', tenantId: 'acme' });
    sessionId = s.id;
    await (await s.send('confirm my trip', { principal: { tenantId: 'acme', userId: 'ann' } })).settled;
    log = await runtime.store.readEvents(sessionId, 0);
  });
  afterAll(async () => srv?.close());

  const opsNoteParts = (): Set<string> =>
    new Set(log.flatMap((e) => (e.type === 'part.received' && e.part.metadata.partType === 'ops-note' ? [`${e.callId}/${e.index}`] : [])));
  const hasOpsNote = (e: SessionEvent): boolean =>
    (e.type === 'part.received' && e.part.metadata.partType === 'ops-note') ||
    (e.type === 'part.delta' && (e.partType === 'ops-note' || opsNoteParts().has(`${e.callId}/${e.index}`))) ||
    (e.type === 'envelope.settled' && e.envelope.parts.some((p) => p.metadata.partType === 'ops-note'));

  it('streams:delivery:drop — a part whose streaming rule is drop is not sent on SSE or WebSocket, nor inside the settled envelope', async () => {
    expect(log.some(hasOpsNote)).toBe(true);
    // The runtime streams the note's text before its partType is known: those deltas must not leak either.
    expect(log.some((e) => e.type === 'part.delta' && e.partType === undefined && opsNoteParts().has(`${e.callId}/${e.index}`))).toBe(true);
    const sse = eventsOf((await readSse(`${srv.base}/sessions/${sessionId}/events`, { headers: { authorization: 'Bearer acme:ann' }, until: (m) => m.some((x) => x.event === 'turn.settled') })).messages);
    const c = await WsClient.connect(srv.wsUrl, { token: 'acme:ann' });
    c.send({ type: 'subscribe', sessionId });
    await c.next((f) => f.type === 'event' && f.event.type === 'turn.settled');
    const ws = c.events(sessionId);
    c.close();
    for (const got of [sse, ws]) {
      expect(got.some(hasOpsNote)).toBe(false);
      expect(got.find((e) => e.type === 'part.received')?.part.text).toBe('Your trip is confirmed.');
      const env = got.find((e) => e.type === 'envelope.settled');
      expect(env?.type === 'envelope.settled' && env.envelope.parts.map((p) => p.metadata.partType)).toEqual(['response']);
      // Everything else arrives unchanged, the response's deltas included.
      const kept = log.filter((e) => !hasOpsNote(e) && e.type !== 'envelope.settled');
      expect(got.filter((e) => e.type !== 'envelope.settled')).toEqual(kept);
    }
  });
});
