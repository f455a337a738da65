/**
 * An llm-context part the actor writes itself is for a consumer that declared it consumes one,
 * like a translated one (docs/concepts/agent-cards.md, envelope.md).
 */
import { describe, expect, it } from 'vitest';
import { renderForChannel } from '../../src/envelope/channels.js';
import { createDelivery } from '../../src/envelope/delivery.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { Part } from '../../src/types.js';
import type { SendOptions } from '../../src/api.js';

const text = (partType: string, t: string): Part => ({ text: t, metadata: { partType } });
const REPLY = text('response', 'Two direct flights.');
const OWN = text('llm-context', 'Peer-only analysis: the customer is price sensitive.');
const DATA: Part = { data: { flights: 2 }, metadata: { partType: 'domain-data' } };

async function turnWith(opts: SendOptions) {
  const model = createScriptedModel({ rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [REPLY, DATA, OWN], turnState: 'complete' } }] } }] });
  const contextModel = createScriptedModel({ rules: [] });
  const rt = createRuntime({ model, contextModel });
  rt.registries.actors.register({ name: 'sally' });
  const s = await rt.createSession({ actor: 'sally' });
  const outcome = await (await s.send('flights to Corfu?', opts)).settled;
  const log = await rt.store.readEvents(s.id, 0);
  const delivery = createDelivery(rt.registries.partTypes);
  await rt.close();
  return { outcome, log, delivery, contextCalls: contextModel.requests.length };
}

describe('llm-context the actor wrote itself', () => {
  it('envelope:llm-context:unconsumed — spec 001 "Local-UI-only turn — llm-context is skipped because no peer LLM is consuming it": without a consumer the envelope, the webhook and every buffered consumer go without it', async () => {
    const { outcome, log, delivery, contextCalls } = await turnWith({});
    expect(outcome.finalizedBy).toBe('complete');
    expect(outcome.envelope!.parts.map((p) => p.metadata.partType)).toEqual(['response', 'domain-data']);
    const settled = log.find((e) => e.type === 'envelope.settled');
    expect(settled?.type === 'envelope.settled' && settled.envelope).toEqual(outcome.envelope);
    const view = delivery.buffered(outcome);
    expect(view.parts.some((p) => p.metadata.partType === 'llm-context')).toBe(false);
    expect(renderForChannel(delivery, 'webhook', view).parts!.some((p) => p.metadata.partType === 'llm-context')).toBe(false);
    expect(contextCalls).toBe(0);
  });

  it('envelope:llm-context:unconsumed — with an originator that consumes llm-context (consumes, or the deprecated flag) the actor\'s own part is the one the envelope carries, and the context model is not called', async () => {
    for (const opts of [{ consumes: ['llm-context'] }, { consumesLlmContext: true }] as SendOptions[]) {
      const { outcome, contextCalls } = await turnWith(opts);
      expect(outcome.envelope!.parts.filter((p) => p.metadata.partType === 'llm-context')).toEqual([OWN]);
      expect(contextCalls).toBe(0);
    }
  });
});
