import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { buildRespondTool, createRespondParser, respondPromptSnippet } from '../../src/respond/index.js';
import { AUDIO_META, CTX, ESCALATED_META, makeConsumerRegistries } from './helpers.js';

describe('respond() with consumer registrations', () => {
  it("respond:consumer:flows — 'audio' (data) and 'escalated' (terminal) flow through schema, prompt, validation and parsing", () => {
    const r = makeConsumerRegistries();
    const tool = buildRespondTool(r);
    const wire = JSON.parse(JSON.stringify(tool)) as { input_schema: Record<string, unknown> };
    const props = wire.input_schema.properties as {
      parts: { items: { properties: { metadata: { properties: { partType: { enum: string[] } } } } } };
      turnState: { enum: string[] };
    };
    expect(props.parts.items.properties.metadata.properties.partType.enum).toContain('audio');
    expect(props.turnState.enum).toContain('escalated');

    const prompt = respondPromptSnippet(r);
    expect(prompt).toContain(`- audio [data]: ${AUDIO_META.description}`);
    expect(prompt).toContain(`- escalated: ${ESCALATED_META.description}`);

    const call = {
      parts: [
        { text: 'A human colleague will call you back.', metadata: { partType: 'response' } },
        { data: { audio: 'T2dnUwACAAAAAAAA', mimeType: 'audio/ogg' }, metadata: { partType: 'audio' } },
      ],
      turnState: 'escalated',
    };
    expect(new Ajv({ strict: false }).validate(wire.input_schema, call)).toBe(true);
    const parser = createRespondParser(r);
    expect(parser.parse(call, CTX)).toEqual({
      ok: true,
      call,
      events: [
        { type: 'part.received', index: 0, part: call.parts[0], turnState: 'escalated' },
        { type: 'part.received', index: 1, part: call.parts[1], turnState: 'escalated' },
        { type: 'turnState.changed', to: 'escalated' },
      ],
    });
    // audio carries data: text is the wrong body for it.
    const wrong = parser.parse({ parts: [{ text: 'beep', metadata: { partType: 'audio' } }], turnState: 'escalated' }, CTX);
    expect(!wrong.ok && wrong.violations.map((v) => [v.rule, v.path])).toEqual([['respond:part:carries', '/parts/0/text']]);
  });

  it('respond:consumer:flows — a parser created before a registration follows it', () => {
    const r = makeConsumerRegistries();
    const parser = createRespondParser(r);
    const call = { parts: [{ data: { level: 3 }, metadata: { partType: 'heartbeat' } }], turnState: 'paged' };
    const before = parser.parse(call, CTX);
    expect(!before.ok && before.violations.map((v) => v.rule).sort()).toEqual(['respond:partType:registered', 'respond:turnState:registered']);
    r.partTypes.register({ id: 'heartbeat', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery }, description: 'A liveness signal.' } });
    r.turnStates.register({ id: 'paged', meta: { ...ESCALATED_META, description: 'An on-call engineer was paged.' } });
    expect(parser.parse(call, CTX).ok).toBe(true);
  });
});
