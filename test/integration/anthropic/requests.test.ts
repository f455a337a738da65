import { afterEach, describe, expect, it } from 'vitest';
import { generateRespondSchema } from '../../../src/respond/schema.js';
import { respondPromptSnippet } from '../../../src/respond/index.js';
import { bodies, record, rig, textPart, type Rig } from './rig.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

const FARE_ALERT = {
  id: 'fare-alert',
  meta: {
    description: 'A price-drop alert the UI shows as a badge.',
    streamingPreferred: true,
    dataBearing: false,
    delivery: { streaming: 'deliver' as const, buffered: 'drop' as const },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'text' as const,
  },
};

describe('the Claude path: what the SDK sends', () => {
  it('anthropic:requests:as-api-requires — tool_choice any, registry-generated respond() schema with eager streaming, cache_control on system and last tool, one tool_result per tool_use first in the next user message', async () => {
    r = await rig({
      script: [
        {
          // an unregistered part type, a valid ack and a routed tool in one response
          content: [
            { type: 'tool_use', name: 'respond', id: 'toolu_bad', input: { parts: [textPart('sparkle', 'Shiny!')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'respond', id: 'toolu_ack', input: { parts: [textPart('ack', 'Checking fares.')], turnState: 'awaiting' } },
            { type: 'tool_use', name: 'fare_lookup', id: 'toolu_fare', input: { route: 'LGW-CFU' } },
          ],
        },
        {
          content: [
            {
              type: 'tool_use',
              name: 'respond',
              id: 'toolu_done',
              input: { parts: [textPart('fare-alert', 'Fares dropped 12%.'), textPart('response', 'EasyJet is £94pp.')], turnState: 'complete' },
            },
          ],
        },
      ],
    });
    r.rt.registries.partTypes.register(FARE_ALERT);
    r.rt.registries.tools.register({
      name: 'fare_lookup',
      description: 'Look up the fare on a route.',
      inputSchema: { type: 'object', properties: { route: { type: 'string' } }, required: ['route'] },
      scope: 'generalist',
      handler: async () => ({ fare: 94 }),
    });
    r.rt.registries.actors.register({ name: 'fares', system: 'You quote fares.', tools: ['fare_lookup'], model: 'claude-haiku-4-5', maxTokens: 2000 });
    const s = await r.rt.createSession({ actor: 'fares' });
    const rec = record(s);
    const out = await (await s.send('How much to Corfu?')).settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['ack', 'fare-alert', 'response']);

    const [first, second] = bodies(r.server);
    expect(r.server.requests).toHaveLength(2);
    for (const req of r.server.requests) {
      expect(req.method).toBe('POST');
      expect(req.path).toBe('/v1/messages');
      // SDK 1.x sends the key as `Authorization: Bearer`; the server records which header, never the value
      expect(req.auth).not.toBe('none');
      expect(req.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(JSON.stringify(req.headers)).not.toContain('INTEGRATION');
    }
    for (const b of [first, second]) {
      expect(b.model).toBe('claude-haiku-4-5');
      expect(b.max_tokens).toBe(2000);
      expect(b.stream).toBe(true);
      expect(b.tool_choice).toEqual({ type: 'any' });
      expect(b.thinking).toBeUndefined();
      // system prompt: the actor's text plus the respond() snippet, cached
      expect(b.system).toEqual([
        { type: 'text', text: `You quote fares.\n\n${respondPromptSnippet(r.rt.registries)}`, cache_control: { type: 'ephemeral' } },
      ]);
      // tools: the actor's, then respond() generated from the registries; only the last cached
      expect(b.tools.map((t: { name: string }) => t.name)).toEqual(['fare_lookup', 'respond']);
      const respond = b.tools[1];
      expect(respond.eager_input_streaming).toBe(true);
      expect(respond.cache_control).toEqual({ type: 'ephemeral' });
      expect(b.tools[0].cache_control).toBeUndefined();
      expect(b.tools[0].eager_input_streaming).toBeUndefined();
      expect(respond.input_schema).toEqual(generateRespondSchema(r.rt.registries));
      const partTypes: string[] = respond.input_schema.properties.parts.items.properties.metadata.properties.partType.enum;
      expect(partTypes).toContain('fare-alert');
      expect(partTypes).toEqual(expect.arrayContaining(['ack', 'thinking', 'response', 'domain-data', 'llm-context']));
      expect(partTypes).not.toContain('approval-request');
      expect(respond.input_schema.properties.turnState.enum).toEqual(expect.arrayContaining(['awaiting', 'complete', 'clarifying', 'error', 'passed']));
      // roles alternate, starting with the user
      const roles = b.messages.map((m: { role: string }) => m.role);
      expect(roles[0]).toBe('user');
      for (let i = 1; i < roles.length; i++) expect(roles[i]).not.toBe(roles[i - 1]);
    }
    expect(first.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'How much to Corfu?' }] }]);

    // the second request: the assistant's three tool_uses, then exactly three tool_results first,
    // in tool_use order — respond() calls included (the rejected one as an error naming the type)
    const msgs = second.messages;
    expect(msgs).toHaveLength(3);
    expect(msgs[1].role).toBe('assistant');
    expect(msgs[1].content.map((b: any) => [b.type, b.id, b.name])).toEqual([
      ['tool_use', 'toolu_bad', 'respond'],
      ['tool_use', 'toolu_ack', 'respond'],
      ['tool_use', 'toolu_fare', 'fare_lookup'],
    ]);
    expect(msgs[1].content[2].input).toEqual({ route: 'LGW-CFU' });
    const results = msgs[2].content;
    expect(msgs[2].role).toBe('user');
    expect(results.map((b: any) => [b.type, b.tool_use_id, b.is_error === true])).toEqual([
      ['tool_result', 'toolu_bad', true],
      ['tool_result', 'toolu_ack', false],
      ['tool_result', 'toolu_fare', false],
    ]);
    expect(results[0].content).toContain('sparkle');
    expect(results[2].content).toContain('94');

    // the rejected call published nothing; the consumer type was accepted as a part
    expect(rec.of('part.received').map((e) => [e.callId, e.part.metadata.partType])).toEqual([
      ['toolu_ack', 'ack'],
      ['toolu_done', 'fare-alert'],
      ['toolu_done', 'response'],
    ]);
    rec.stop();
  });
});
