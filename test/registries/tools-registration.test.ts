/**
 * A tool registration is all or nothing, and what it keeps is its own: "Bad input gets a clear
 * error that names what was wrong, and nothing already accepted is lost" (tools.md).
 */
import { describe, expect, it } from 'vitest';
import { compileApprovalPolicy } from '../../src/approvals/policy.js';
import { createRegistries } from '../../src/create-registries.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { ToolRegistry } from '../../src/registries/tools.js';
import type { GeneralistToolDefinition, SurfaceTemplateRegistryApi, ToolDefinition } from '../../src/registries/types.js';
import { createRuntime } from '../../src/runtime.js';
import { registrationError } from './helpers.js';

function tool(name: string, over: Record<string, unknown> = {}): ToolDefinition {
  return {
    name,
    description: 'Books a flight for the traveller.',
    inputSchema: { $id: `https://example.test/${name}.json`, type: 'object', required: ['x'], properties: { x: { type: 'number' } } },
    handler: () => ({ ok: true }),
    scope: 'generalist',
    ...over,
  } as ToolDefinition;
}

describe('ToolRegistry: a refused registration leaves nothing behind', () => {
  it('tools:registration:nothing-left — "a refused registration leaves nothing behind … so the corrected registration (the same $id included) succeeds": after a CEL error, an invalid outputSchema, a bad allowStandingApproval or an unresolvable $ref', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const attempts: [ToolDefinition, string, ToolDefinition][] = [
      [tool('book', { requiresApproval: { autoApproveIf: 'args.x <' } }), 'tools:cel:syntax-error-fails-registration', tool('book', { requiresApproval: { autoApproveIf: 'args.x < 5' } })],
      [tool('search', { outputSchema: { type: 'nope' } }), 'tools:output-schema:invalid-fails-registration', tool('search', { outputSchema: { type: 'object' } })],
      [tool('pay', { requiresApproval: true, allowStandingApproval: 'no' }), 'tools:approval:allowStandingApproval-boolean', tool('pay', { requiresApproval: true, allowStandingApproval: false })],
      [
        tool('refs', { inputSchema: { $id: 'https://example.test/refs.json', type: 'object', properties: { a: { $ref: 'https://example.test/missing.json' }, n: { $id: 'https://example.test/n.json', type: 'number' } } } }),
        'tools:schema:invalid-fails-registration',
        tool('refs', { inputSchema: { $id: 'https://example.test/refs.json', type: 'object', properties: { a: { type: 'string' }, n: { $id: 'https://example.test/n.json', type: 'number' } } } }),
      ],
    ];
    for (const [bad, rule, fixed] of attempts) {
      const e = registrationError(() => r.register(bad));
      expect(e.rule).toBe(rule);
      expect(r.has(bad.name)).toBe(false);
      const t = r.register(fixed);
      expect(t.validateInput({ x: 1 })).toEqual([]);
    }
    expect(r.ids()).toEqual(['book', 'search', 'pay', 'refs']);
    expect(r.get('book')!.validateInput({ x: 'one' })).toEqual([expect.objectContaining({ path: '/x', rule: 'schema:type' })]);
  });

  it('tools:schema:invalid-fails-registration — "a second schema reusing an $id already compiled in this registry" fails naming both tools, also for an $id nested in the first', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    r.register(tool('search', { inputSchema: { $id: 'https://example.test/shared.json', type: 'object', properties: { leg: { $id: 'https://example.test/leg.json', type: 'object' } } } }));
    const e = registrationError(() => r.register(tool('book', { inputSchema: { $id: 'https://example.test/shared.json', type: 'object' } })));
    expect(e.rule).toBe('tools:schema:invalid-fails-registration');
    expect(e.message).toMatch(/tool 'book'.*\$id "https:\/\/example\.test\/shared\.json" already exists.*tool 'search' \(inputSchema\)/);
    const nested = registrationError(() => r.register(tool('book', { outputSchema: { $id: 'https://example.test/leg.json', type: 'object' } })));
    expect(nested.message).toMatch(/tool 'book'.*outputSchema.*already exists.*tool 'search' \(inputSchema\)/);
    // Neither refusal kept anything: book registers with its own $id.
    expect(r.register(tool('book')).validateInput({ x: 2 })).toEqual([]);
  });
});

describe('ToolRegistry: a registered tool keeps its own schemas', () => {
  it('tools:registered:frozen — "a registered tool is immutable": its schemas are deep-frozen copies, so changing the caller\'s object changes neither what the model is shown nor what is validated', async () => {
    const model = createScriptedModel({ rules: [{ respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'ok', metadata: { partType: 'response' } }], turnState: 'complete' } }] } }] });
    const rt = createRuntime({ model });
    const inputSchema: Record<string, any> = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const outputSchema: Record<string, any> = { type: 'object', properties: { got: { type: 'object' } } };
    const t = rt.registries.tools.register({ name: 'lookup', description: 'Looks up a city.', inputSchema, outputSchema, scope: 'generalist', handler: (a) => ({ got: a }) });
    expect(t.inputSchema).not.toBe(inputSchema);
    expect(Object.isFrozen(t.inputSchema) && Object.isFrozen(t.inputSchema.properties) && Object.isFrozen((t.inputSchema.properties as any).city)).toBe(true);
    expect(Object.isFrozen(t.outputSchema) && Object.isFrozen((t.outputSchema as any).properties.got)).toBe(true);
    inputSchema.properties = { airport: { type: 'string' } };
    inputSchema.required.push('airport');
    outputSchema.properties.got.type = 'string';
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    await (await s.send('go')).settled;
    expect(model.requests[0]!.tools!.find((x) => x.name === 'lookup')!.input_schema).toEqual({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
    expect(t.validateInput({ city: 'Corfu' })).toEqual([]);
    expect(t.validateOutput({ got: {} })).toEqual([]);
    await rt.close();
  });
});

describe('ToolRegistry: schemas that are not plain JSON', () => {
  it('tools:registered:frozen — a schema holding a function in an x- keyword, or given as a Proxy (a reactive store\'s object), registers and validates as before; the function stays the caller\'s, unfrozen', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const format = (v: unknown) => String(v);
    const fn = r.register(tool('with_fn', { inputSchema: { type: 'object', 'x-format': format, properties: { city: { type: 'string' } }, required: ['city'] } }));
    expect((fn.inputSchema as Record<string, unknown>)['x-format']).toBe(format);
    expect(Object.isFrozen(format)).toBe(false);
    expect(fn.validateInput({ city: 'Corfu' })).toEqual([]);
    expect(fn.validateInput({})).toMatchObject([{ rule: 'schema:required' }]);
    const proxied = new Proxy({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }, {});
    const px = r.register(tool('with_proxy', { inputSchema: proxied }));
    expect(px.inputSchema).toEqual({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] });
    expect(Object.isFrozen(px.inputSchema)).toBe(true);
    expect(px.validateInput({ n: 'x' })).toMatchObject([{ rule: 'schema:type' }]);
  });
});

describe('ToolRegistry: JSON Schema drafts', () => {
  it('tools:schema:drafts — "2019-09 … and 2020-12 … are supported too, each compiled by an ajv for that draft. Any other $schema … fails registration naming the supported drafts"', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    const t2020 = r.register(
      tool('pick_seats', {
        inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { seats: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false } }, $defs: { row: { type: 'integer' } } },
      }),
    );
    expect(t2020.validateInput({ seats: ['12A', 3] })).toEqual([]);
    expect(t2020.validateInput({ seats: [3, '12A'] }).map((v) => v.path)).toEqual(['/seats/0', '/seats/1']);
    expect(t2020.validateInput({ seats: ['12A', 3, 4] })).toEqual([expect.objectContaining({ rule: 'schema:items' })]);
    const t2019 = r.register(
      tool('pay', { inputSchema: { $schema: 'https://json-schema.org/draft/2019-09/schema#', type: 'object', dependentRequired: { card: ['cvc'] } } }),
    );
    expect(t2019.validateInput({ card: '4111' })).toEqual([expect.objectContaining({ rule: 'schema:dependentRequired' })]);
    expect(r.register(tool('old', { inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' } })).validateInput({})).toEqual([]);
    for (const $schema of ['http://json-schema.org/draft-04/schema#', 'https://json-schema.org/draft/2020-13/schema']) {
      const e = registrationError(() => r.register(tool('legacy', { inputSchema: { $schema, type: 'object' } })));
      expect(e.rule).toBe('tools:schema:invalid-fails-registration');
      expect(e.message).toContain(`$schema ${JSON.stringify($schema)} is not a supported JSON Schema draft`);
      expect(e.message).toMatch(/draft-07.*2019-09.*2020-12/);
    }
    // A 2020-12 keyword misused is ajv's error under that draft's meta-schema.
    expect(registrationError(() => r.register(tool('bad2020', { inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', prefixItems: {} } }))).message).toMatch(/prefixItems/);
  });
});

describe('ToolRegistry: allowStandingApproval in two places', () => {
  it('tools:approval:allowStandingApproval-conflict — "allowStandingApproval on the tool and inside the policy object with opposite values is rejected naming both; the same value twice is accepted"', () => {
    const r = new ToolRegistry(compileApprovalPolicy);
    for (const [onTool, inPolicy] of [[true, false], [false, true]] as const) {
      const e = registrationError(() => r.register(tool('pay', { allowStandingApproval: onTool, requiresApproval: { autoApproveIf: 'args.x < 10', allowStandingApproval: inPolicy } })));
      expect(e.rule).toBe('tools:approval:allowStandingApproval-conflict');
      expect(e.message).toContain(`allowStandingApproval is ${onTool} on the tool but requiresApproval.allowStandingApproval is ${inPolicy}`);
      expect(r.has('pay')).toBe(false);
    }
    expect(r.register(tool('pay', { allowStandingApproval: false, requiresApproval: { autoApproveIf: 'args.x < 10', allowStandingApproval: false } })).approval.allowStandingApproval).toBe(false);
    expect(r.register(tool('pay2', { requiresApproval: { autoApproveIf: 'args.x < 10', allowStandingApproval: false } })).approval.allowStandingApproval).toBe(false);
  });
});

describe('types and runtime agree', () => {
  it('tools:justification:generalist-optional — "A generalist tool may carry one too (a string, kept trimmed; the definition type allows it)"; surfaceTemplates.ids() is part of its API type', () => {
    const def: GeneralistToolDefinition = {
      name: 'rates',
      description: 'Current exchange rates.',
      inputSchema: { type: 'object' },
      handler: () => ({}),
      scope: 'generalist',
      justification: '  Shared by every actor that prices a trip.  ',
    };
    const registries = createRegistries();
    expect(registries.tools.register(def).justification).toBe('Shared by every actor that prices a trip.');
    const templates: SurfaceTemplateRegistryApi = registries.surfaceTemplates;
    templates.register({ kind: 'flights', build: () => [] });
    const ids: readonly string[] = templates.ids();
    expect(ids).toEqual(['flights']);
  });
});
