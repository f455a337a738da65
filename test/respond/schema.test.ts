import { describe, expect, it } from 'vitest';
import { buildRespondTool, respondJsonSchema, RESPOND_TOOL_DESCRIPTION } from '../../src/respond/schema.js';
import { makeRegistries, makeConsumerRegistries, AUDIO_META, ESCALATED_META } from './helpers.js';

type Schema = {
  properties: {
    parts: { description: string; minItems: number; items: { properties: Record<string, unknown> & { metadata: { properties: { partType: { enum: string[]; description: string } } } } } };
    turnState: { enum: string[]; description: string };
    passTo: { description: string };
    note: { description: string };
  };
};

const CANONICAL_EMITTABLE = [
  'ack', 'thinking', 'response', 'clarify', 'error', 'domain-data', 'llm-context',
  'a2ui-surface', 'artifact', 'reasoning-trace', 'citation', 'progress',
];
const CANONICAL_STATES = ['awaiting', 'complete', 'clarifying', 'error', 'suspended', 'delegated', 'passed'];

describe('respond() schema', () => {
  it('respond:schema:enums-from-registries — partType enum is the model-emittable registered types, turnState enum every state', () => {
    const r = makeRegistries();
    const s = respondJsonSchema(r) as unknown as Schema;
    const ptEnum = s.properties.parts.items.properties.metadata.properties.partType.enum;
    expect([...ptEnum].sort()).toEqual([...CANONICAL_EMITTABLE].sort());
    expect(ptEnum).not.toContain('approval-request');
    expect(ptEnum).not.toContain('approval-response');
    expect(s.properties.turnState.enum).toEqual(CANONICAL_STATES);

    const c = makeConsumerRegistries();
    c.partTypes.register({ id: 'internal-audit', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery }, modelEmittable: false } });
    const cs = respondJsonSchema(c) as unknown as Schema;
    expect(cs.properties.parts.items.properties.metadata.properties.partType.enum).toContain('audio');
    expect(cs.properties.parts.items.properties.metadata.properties.partType.enum).not.toContain('internal-audit');
    expect(cs.properties.turnState.enum).toEqual([...CANONICAL_STATES, 'escalated']);
    expect(cs.properties.turnState.description).toContain(`Consumer-registered values: 'escalated' (${ESCALATED_META.description.replace(/\.$/, '')}).`);
    expect(cs.properties.parts.items.properties.metadata.properties.partType.description).toContain("Consumer-registered values: 'audio'.");
  });

  it('respond:schema:spec-descriptions — descriptions are spec 000\'s, naming turnstate', () => {
    const tool = buildRespondTool(makeRegistries());
    const s = tool.input_schema as unknown as Schema;
    expect(tool.description).toBe(
      'Emit a structured response. This is the ONLY way you produce output. Always call this tool to produce any user-facing or peer-facing text. Never emit free-form text outside this tool. Pass all your output as parts, and set turnState to indicate whether you are done or still working.',
    );
    expect(tool.description).toBe(RESPOND_TOOL_DESCRIPTION);
    expect(s.properties.parts.description).toBe('One or more A2A-style message parts. Each part carries text or data plus a partType metadata tag.');
    expect(s.properties.turnState.description).toBe(
      "Declare the lifecycle state of this turn. Validated against turnstate's TurnStateRegistry (canonical core set plus consumer-registered extensions). Canonical values: 'awaiting' (more respond() calls or injections expected), 'complete' (turn settled, envelope emitted if data-bearing), 'clarifying' (terminal; question to user, no envelope), 'error' (terminal failure), 'suspended' (HITL approval pending), 'delegated' (peer-agent call in flight), 'passed' (handed off to another actor — see passTo).",
    );
    expect(s.properties.parts.items.properties.metadata.properties.partType.description).toMatch(
      /^Registered part type\. Validated against turnstate's PartTypeRegistry \(canonical core set plus consumer-registered extensions\)\./,
    );
    expect(s.properties.passTo.description).toBe(
      "Optional. When present and turnState is 'passed', names the actor to which this turn is handed off. The session manager begins the next invocation with the named actor, inheriting the mailbox. The receiving actor's tool scope applies. Only valid with turnState: 'passed'.",
    );
    expect(s.properties.note.description).toBe('Optional free-form note for logs. Not delivered to any consumer.');
    expect(JSON.stringify(tool)).not.toMatch(/beach|cool-ai/i);
  });

  it('respond:schema:metadata-first — metadata is listed before text and data', () => {
    const s = respondJsonSchema(makeRegistries()) as unknown as Schema;
    expect(Object.keys(s.properties.parts.items.properties)).toEqual(['metadata', 'text', 'data']);
    expect(Object.keys(s.properties)).toEqual(['parts', 'turnState', 'passTo', 'note']);
    // The order survives serialisation, which is what the model sees.
    const wire = JSON.stringify(s);
    expect(wire.indexOf('"metadata"')).toBeLessThan(wire.indexOf('"text"'));
  });

  it('respond:schema:eager-streaming — the tool is respond with eager_input_streaming', () => {
    const tool = buildRespondTool(makeRegistries());
    expect(tool.name).toBe('respond');
    expect(tool.eager_input_streaming).toBe(true);
    expect(Object.keys(tool)).toEqual(['name', 'description', 'input_schema', 'eager_input_streaming']);
  });

  it('respond:schema:cached — same frozen object until a registration, a new one right after', () => {
    const r = makeRegistries();
    const a = buildRespondTool(r);
    expect(buildRespondTool(r)).toBe(a);
    expect(respondJsonSchema(r)).toBe(a.input_schema);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen((a.input_schema as unknown as Schema).properties.turnState.enum)).toBe(true);

    r.partTypes.register({ id: 'audio', meta: { ...AUDIO_META, delivery: { ...AUDIO_META.delivery } } });
    const b = buildRespondTool(r);
    expect(b).not.toBe(a);
    expect((b.input_schema as unknown as Schema).properties.parts.items.properties.metadata.properties.partType.enum).toContain('audio');
    expect(buildRespondTool(r)).toBe(b);

    r.turnStates.register({ id: 'escalated', meta: { ...ESCALATED_META } });
    const c = buildRespondTool(r);
    expect(c).not.toBe(b);
    expect((c.input_schema as unknown as Schema).properties.turnState.enum).toContain('escalated');

    // Registries of another runtime get their own schema.
    const other = makeRegistries();
    expect((buildRespondTool(other).input_schema as unknown as Schema).properties.turnState.enum).not.toContain('escalated');
  });
});
