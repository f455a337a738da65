import { afterEach, describe, expect, it } from 'vitest';
import { firstValueFrom, filter, toArray, takeWhile } from 'rxjs';
import { LLM_CONTEXT_SYSTEM_PROMPT, LLM_CONTEXT_TOOL_NAME } from '../../../src/envelope/llm-context.js';
import { PARTS_EXTENSION_URI } from '../../../src/envelope/agent-card.js';
import type { LoopbackTurn } from '../../../src/models/loopback-server.js';
import type { SessionEvent } from '../../../src/types.js';
import { bodies, hasTool, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

const FARES = { fares: [{ carrier: 'EasyJet', price: 94 }, { carrier: 'BA', price: 187 }] };
const CONTEXT_TEXT = 'EasyJet at £94 is half the BA fare of £187 but departs at 06:15; for six passengers the delta is £558.';

/** The two model calls the actor needs: respond(ack) + a routed tool, then respond(response, complete). */
function actorCalls(turn: string): LoopbackTurn[] {
  return [
    {
      content: [
        { type: 'tool_use', name: 'respond', id: `toolu_ack_${turn}`, input: { parts: [textPart('ack', 'Checking fares.')], turnState: 'awaiting' } },
        { type: 'tool_use', name: 'fare_lookup', id: `toolu_fare_${turn}`, input: { route: 'LGW-CFU' } },
      ],
    },
    {
      content: [
        { type: 'tool_use', name: 'respond', id: `toolu_done_${turn}`, input: { parts: [textPart('response', `Two fares found (${turn}).`)], turnState: 'complete' } },
      ],
    },
  ];
}

const translation: LoopbackTurn = {
  content: [{ type: 'tool_use', name: LLM_CONTEXT_TOOL_NAME, id: 'toolu_ctx', input: { text: CONTEXT_TEXT } }],
  usage: { inputTokens: 300, outputTokens: 40 },
};

async function setup(script: LoopbackTurn[]) {
  r = await rig({ script });
  r.rt.registries.tools.register({
    name: 'fare_lookup',
    description: 'Look up fares.',
    inputSchema: { type: 'object', properties: { route: { type: 'string' } } },
    scope: 'generalist',
    handler: async () => FARES,
  });
  r.rt.registries.actors.register({ name: 'sally', system: 'You quote fares.', tools: ['fare_lookup'] });
  const s = await r.rt.createSession({ actor: 'sally' });
  return { s, rig: r };
}

describe('the Claude path: llm-context only for a peer-LLM consumer', () => {
  it('anthropic:llm-context:only-when-asked — no consumer: exactly the actor\'s calls; a caller card consuming llm-context: exactly one more (write_llm_context), its part in envelope.settled, produced once however often settlement is observed', async () => {
    const { s, rig } = await setup([...actorCalls('t1'), ...actorCalls('t2'), translation]);
    const rec = record(s);

    // turn 1: a local-UI-only turn
    const o1 = await (await s.send('Fares to Corfu?')).settled;
    expect(o1.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(2);
    expect(bodies(rig.server).some((b) => hasTool(b, LLM_CONTEXT_TOOL_NAME))).toBe(false);
    expect(o1.envelope?.parts.some((p) => p.metadata.partType === 'llm-context')).toBe(false);
    expect(o1.parts.some((p) => p.metadata.partType === 'llm-context')).toBe(false);

    // turn 2: a peer LLM consumes the envelope (its Agent Card declares consumes: ['llm-context'])
    const ref2 = await s.send('And for six people?', { callerCard: { name: 'baxter', capabilities: { extensions: [{ uri: PARTS_EXTENSION_URI, params: { consumes: ['llm-context'] } }] } } });
    const lateSubscriber = s.events().pipe(
      filter((e) => e.turnId === ref2.turnId),
      takeWhile((e) => e.type !== 'turn.settled', true),
      toArray(),
    );
    const late = firstValueFrom(lateSubscriber);
    const o2 = await ref2.settled;
    const again = await ref2.settled;
    expect(again).toBe(o2);
    expect(o2.finalizedBy).toBe('complete');
    await s.idle();
    expect(rig.server.requests).toHaveLength(5);
    expect(rig.server.pending).toBe(0);

    const ctxRequests = bodies(rig.server).filter((b) => hasTool(b, LLM_CONTEXT_TOOL_NAME));
    expect(ctxRequests).toHaveLength(1);
    const ctx = ctxRequests[0];
    expect(bodies(rig.server)[4]).toBe(ctx); // after the actor's last call: at settlement
    expect(ctx.tools.map((t: { name: string }) => t.name)).toEqual([LLM_CONTEXT_TOOL_NAME]);
    expect(ctx.tool_choice).toEqual({ type: 'any' });
    expect(ctx.model).toBe('claude-haiku-4-5'); // the adapter's context model
    expect(ctx.system[0].text).toBe(LLM_CONTEXT_SYSTEM_PROMPT);
    const prompt = JSON.stringify(ctx.messages);
    expect(prompt).toContain('Two fares found (t2).');
    expect(prompt).toContain('EasyJet');
    expect(prompt).not.toContain('Checking fares.'); // acks are not translated

    // the part: once in the events, once in the envelope, once in the outcome
    const ctxParts = (events: SessionEvent[]) =>
      events.filter((e) => e.type === 'part.received' && e.part.metadata.partType === 'llm-context');
    const t2 = rec.events.filter((e) => e.turnId === ref2.turnId);
    expect(ctxParts(t2)).toHaveLength(1);
    const env = t2.filter((e): e is Extract<SessionEvent, { type: 'envelope.settled' }> => e.type === 'envelope.settled');
    expect(env).toHaveLength(1);
    const llmParts = env[0]!.envelope.parts.filter((p) => p.metadata.partType === 'llm-context');
    expect(llmParts).toHaveLength(1);
    expect(llmParts[0]!.text).toBe(CONTEXT_TEXT);
    expect(env[0]!.envelope.parts.some((p) => p.metadata.partType === 'domain-data')).toBe(true);
    expect(o2.envelope?.parts.filter((p) => p.metadata.partType === 'llm-context').map((p) => p.text)).toEqual([CONTEXT_TEXT]);
    expect(o2.parts.filter((p) => p.metadata.partType === 'llm-context')).toHaveLength(1);

    // a second live subscriber and a full replay from the store see the same single part
    const lateEvents = await late;
    expect(ctxParts(lateEvents)).toHaveLength(1);
    const replay = await firstValueFrom(
      s.events(0).pipe(
        takeWhile((e) => !(e.type === 'turn.settled' && e.turnId === ref2.turnId), true),
        toArray(),
      ),
    );
    expect(ctxParts(replay)).toHaveLength(1);
    expect(replay.filter((e) => e.type === 'envelope.settled')).toHaveLength(2);
    // observing settlement again produced nothing more
    expect(rig.server.requests).toHaveLength(5);
    rec.stop();
  });

  it('anthropic:llm-context:actor-wrote-it — when the actor\'s own respond() carries an llm-context part, no translator call is made', async () => {
    const own: LoopbackTurn = {
      content: [
        {
          type: 'tool_use',
          name: 'respond',
          id: 'toolu_own',
          input: { parts: [textPart('response', 'Two fares.'), textPart('llm-context', 'Own analysis for the peer.')], turnState: 'complete' },
        },
      ],
    };
    const { s, rig } = await setup([own]);
    const out = await (await s.send('Fares?', { consumes: ['llm-context'] })).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(1);
    expect(out.envelope?.parts.filter((p) => p.metadata.partType === 'llm-context').map((p) => p.text)).toEqual(['Own analysis for the peer.']);
  });

  it('anthropic:llm-context:failure-is-enrichment — a failed translation leaves the part out and the turn still completes', async () => {
    const { s, rig } = await setup([...actorCalls('t1'), { fail: { status: 400, message: 'bad context request' } }]);
    const out = await (await s.send('Fares?', { consumesLlmContext: true })).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(rig.server.requests).toHaveLength(3);
    expect(out.envelope?.parts.some((p) => p.metadata.partType === 'llm-context')).toBe(false);
    expect(out.error).toBeUndefined();
  });
});
