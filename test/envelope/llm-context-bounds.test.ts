/**
 * When the llm-context translation runs, and what bounds it: only for a data-bearing envelope,
 * and never longer than limits.llmContextTimeoutMs or past the runtime's close. It is an
 * enrichment: whatever happens to it, the turn settles.
 */
import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/errors.js';
import type { ModelEvent, ModelPort } from '../../src/machines/ports.js';
import { describeTurn } from '../../src/envelope/llm-context.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { Part } from '../../src/types.js';

const respond = (parts: Part[], turnState: string) => ({ blocks: [{ type: 'tool_use' as const, name: 'respond', input: { parts, turnState } }] });
const response = (text: string): Part => ({ text, metadata: { partType: 'response' } });
const CONTEXT = { rules: [{ respond: { blocks: [{ type: 'tool_use' as const, name: 'write_llm_context', input: { text: 'Dense prose.' } }] } }] };

/** A context model that never answers: it waits until its signal aborts. */
function hungContextModel() {
  const seen: AbortSignal[] = [];
  const model: ModelPort = {
    name: 'hung',
    // eslint-disable-next-line require-yield
    async *stream(_req, signal): AsyncIterable<ModelEvent> {
      seen.push(signal);
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new ModelError('model.aborted', 'aborted')), { once: true }));
    },
  };
  return { model, seen };
}

describe('llm-context: only for data, and bounded', () => {
  it('envelope:llm-context:data-only — "A conversational turn with no data — just a response part … peer agents receive an A2A Message with only the response part": a peer consuming llm-context gets no translation of a turn without data, and no context-model call is made', async () => {
    const contextModel = createScriptedModel(CONTEXT);
    const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: respond([response('Hello there.')], 'complete') }] }), contextModel });
    rt.registries.actors.register({ name: 'sally' });
    const s = await rt.createSession({ actor: 'sally' });
    const out = await (await s.send('hi', { consumes: ['llm-context'] })).settled;
    expect(out.envelope!.parts).toEqual([response('Hello there.')]);
    expect(contextModel.requests).toHaveLength(0);
    // With data, the same consumer gets it.
    const withData = createRuntime({
      model: createScriptedModel({ rules: [{ respond: respond([response('Two flights.'), { data: { flights: 2 }, metadata: { partType: 'domain-data' } }], 'complete') }] }),
      contextModel,
    });
    withData.registries.actors.register({ name: 'sally' });
    const d = await (await (await withData.createSession({ actor: 'sally' })).send('flights?', { consumes: ['llm-context'] })).settled;
    expect(d.envelope!.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data', 'llm-context']);
    await rt.close();
    await withData.close();
  });

  it('envelope:llm-context:timeout — a context model that never answers: past limits.llmContextTimeoutMs its call is aborted and the turn settles without the part; the next message runs', async () => {
    const hung = hungContextModel();
    const rt = createRuntime({
      model: createScriptedModel({ rules: [{ respond: respond([response('Two flights.'), { data: { flights: 2 }, metadata: { partType: 'domain-data' } }], 'complete') }] }),
      contextModel: hung.model,
      limits: { llmContextTimeoutMs: 50 },
    });
    rt.registries.actors.register({ name: 'sally' });
    const s = await rt.createSession({ actor: 'sally' });
    const first = await s.send('flights?', { consumes: ['llm-context'] });
    const queued = await s.send('and tomorrow?');
    const out = await first.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.envelope!.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data']);
    expect(hung.seen).toHaveLength(1);
    expect(hung.seen[0]!.aborted).toBe(true);
    expect((await queued.settled).finalizedBy).toBe('complete');
    await rt.close();
  });

  it('envelope:llm-context:close-aborts — runtime.close() during the translation aborts its request; the turn is left for recover()', async () => {
    const hung = hungContextModel();
    const rt = createRuntime({
      model: createScriptedModel({ rules: [{ respond: respond([response('Two flights.'), { data: { flights: 2 }, metadata: { partType: 'domain-data' } }], 'complete') }] }),
      contextModel: hung.model,
    });
    rt.registries.actors.register({ name: 'sally' });
    const s = await rt.createSession({ actor: 'sally' });
    const seen: string[] = [];
    s.events().subscribe((e) => seen.push(e.type));
    await s.send('flights?', { consumes: ['llm-context'] });
    for (let i = 0; i < 100 && hung.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(hung.seen).toHaveLength(1);
    await rt.close();
    expect(hung.seen[0]!.aborted).toBe(true);
    // Nothing was recorded after the stop: the turn never settled here.
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toContain('turn.started');
    expect(seen).not.toContain('envelope.settled');
    expect(seen).not.toContain('turn.settled');
  });
});

describe('llm-context: the translation request', () => {
  it('envelope:llm-context:data-cut — "never inside a surrogate pair": domain data past 24,000 characters is cut before an emoji that straddles the cut, so the request is well-formed text (a lone surrogate has no UTF-8 form and the model API refuses the body)', () => {
    const prefix = JSON.stringify({ note: '' }, null, 1).indexOf('""') + 1;
    const note = `${'a'.repeat(24_000 - prefix - 1)}🛫 Gatwick`;
    const text = describeTurn('sally', [response('Found flights.')], [{ note }]);
    expect([...text].filter((ch) => (ch.charCodeAt(0) & 0xf800) === 0xd800 && ch.length === 1)).toEqual([]); // no lone surrogate
    expect(Buffer.from(text, 'utf8').toString('utf8')).toBe(text);
    const json = JSON.stringify({ note }, null, 1);
    expect(text).toContain(`${json.slice(0, 23_999)}\n… (cut: ${json.length - 23_999} more characters)`);
    // Nothing straddles: the cut stays at 24,000.
    const plain = describeTurn('sally', [], [{ note: 'b'.repeat(30_000) }]);
    expect(plain).toContain(`\n… (cut: ${JSON.stringify({ note: 'b'.repeat(30_000) }, null, 1).length - 24_000} more characters)`);
  });
});
