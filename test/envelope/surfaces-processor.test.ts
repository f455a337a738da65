/**
 * "surfaces:oracle — Every surface the runtime emits is accepted by @a2ui/web_core's schema, its
 * basic catalog and its MessageProcessor": what the processor refuses is refused before anything
 * is published (found by a review session: the schema and catalog checks passed lists the
 * processor then threw on in the page).
 */
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { describe, expect, it } from 'vitest';
import { checkA2uiMessages } from '../../src/envelope/a2ui.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';

const V = 'v0.9';
const CAT = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';
const created = (id: string) => [
  { version: V, createSurface: { surfaceId: id, catalogId: CAT } },
  { version: V, updateComponents: { surfaceId: id, components: [{ id: 'root', component: 'Text', text: 'hi' }] } },
];
const data = (id: string, path: string, value: unknown) => ({ version: V, updateDataModel: { surfaceId: id, path, value } });

const REFUSED: [string, unknown[], string][] = [
  ['a component without an id', [created('s')[0], { version: V, updateComponents: { surfaceId: 's', components: [{ id: 'root', component: 'Column', children: ['t'] }, { component: 'Text', text: 'x' }] } }], '/1/updateComponents/components/1/id'],
  ['a path through a primitive', [...created('s'), data('s', '/total', 42), data('s', '/total/amount', 1)], '/3'],
  ['a non-numeric segment on an array', [...created('s'), data('s', '/items', [1, 2]), data('s', '/items/foo', 1)], '/3'],
  ['a forbidden segment', [...created('s'), data('s', '/__proto__/polluted', 1)], '/2'],
  ['a constructor segment', [...created('s'), data('s', '/constructor', 1)], '/2'],
];

describe('A2UI lists the renderer would refuse', () => {
  it('surfaces:oracle:processor — each list the MessageProcessor refuses is refused at the message it names; lists it accepts pass', () => {
    for (const [what, messages, path] of REFUSED) {
      expect(() => new MessageProcessor([basicCatalog]).processMessages(structuredClone(messages) as never), what).toThrow();
      const problems = checkA2uiMessages(messages);
      expect(problems.map((p) => p.path), what).toContain(path);
    }
    const ok = [...created('s'), data('s', '/total', { amount: 5 }), data('s', '/total/amount', 6), data('s', '/a~1b/c~0d', 1)];
    new MessageProcessor([basicCatalog]).processMessages(structuredClone(ok) as never);
    expect(checkA2uiMessages(ok)).toEqual([]);
  });

  it('surfaces:respond:processor — "An actor\'s invalid surface is a respond() rule violation": a surface the processor refuses is not published; the model is told and retries', async () => {
    const bad = [...created('s2'), data('s2', '/total', 42), data('s2', '/total/amount', 42)];
    const model = createScriptedModel({
      rules: [
        { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Look:', metadata: { partType: 'response' } }, { data: { messages: bad }, metadata: { partType: 'a2ui-surface' } }], turnState: 'complete' } }] } },
        { respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Here it is as text.', metadata: { partType: 'response' } }], turnState: 'complete' } }] } },
      ],
    });
    const rt = createRuntime({ model });
    rt.registries.actors.register({ name: 'ui' });
    const s = await rt.createSession({ actor: 'ui' });
    const out = await (await s.send('show me')).settled;
    expect(out.parts.map((p) => p.metadata.partType)).toEqual(['response']);
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(model.requests[1]!.messages.at(-1))).toContain('segment');
    await rt.close();
  });
});
