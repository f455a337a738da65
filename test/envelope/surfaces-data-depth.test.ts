/**
 * How deep a surface's JSON may nest (docs/concepts/surfaces.md, surfaces:a2ui:data-depth). A
 * data model 2,000 levels deep (12 KB of JSON from a model, or a tool's folder tree a template
 * puts in updateDataModel) overflowed the stack of the check's structured clone: an actor's part
 * got respond:internal instead of a problem at a JSON Pointer, and a template's surface escaped
 * buildSurfaces ("pure and never throws") and failed the turn without its tool result (found by a
 * review session). The depth is now a named bound, measured without recursion.
 */
import { describe, expect, it } from 'vitest';
import { checkA2uiMessages, checkSurfaceData, MAX_SURFACE_DATA_DEPTH } from '../../src/envelope/a2ui.js';
import { buildSurfaces, SurfaceTemplateError } from '../../src/envelope/surfaces.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { A2UI_BASIC_CATALOG_ID, SurfaceTemplateRegistry } from '../../src/registries/surface-templates.js';
import { annotate } from '../../src/router/annotated.js';
import { createRuntime } from '../../src/runtime.js';
import type { Part } from '../../src/types.js';

const V = 'v0.9';
const create = (surfaceId = 's') => ({ version: V, createSurface: { surfaceId, catalogId: A2UI_BASIC_CATALOG_ID } });
const root = (surfaceId = 's') => ({ version: V, updateComponents: { surfaceId, components: [{ id: 'root', component: 'Text', text: 'Files' }] } });
const model = (value: unknown, surfaceId = 's') => ({ version: V, updateDataModel: { surfaceId, path: '/', value } });

/** `{ d: { d: … 1 } }`: `levels` objects deep. */
function nested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = { d: v };
  return v;
}

/** A folder tree `depth` folders deep, as a tool returns it: `{ name, children: [ … ] }` (2 levels per folder). */
function folders(depth: number): unknown {
  let v: unknown = { name: 'leaf.txt' };
  for (let i = 0; i < depth; i++) v = { name: `dir${i}`, children: [v] };
  return v;
}

const dPath = (levels: number) => '/d'.repeat(levels);

describe('surfaces: how deep a surface\'s data may nest', () => {
  it(`surfaces:a2ui:data-depth — "DoS by very deep trees": a data model ${MAX_SURFACE_DATA_DEPTH} levels deep (MAX_SURFACE_DATA_DEPTH) passes; one deeper is refused at the JSON Pointer of the container past the bound, however deep it is, and the check never throws`, () => {
    expect(MAX_SURFACE_DATA_DEPTH).toBe(128);
    expect(checkA2uiMessages([create(), root(), model(nested(MAX_SURFACE_DATA_DEPTH))])).toEqual([]);
    const past = { path: `/2/updateDataModel/value${dPath(MAX_SURFACE_DATA_DEPTH)}`, message: expect.stringMatching(/^nests the data model of surface "s" more than 128 levels of objects and arrays deep \(from updateDataModel\.value\); a surface's data may be at most 128 levels deep: flatten it/) };
    expect(checkA2uiMessages([create(), root(), model(nested(MAX_SURFACE_DATA_DEPTH + 1))])).toEqual([past]);
    for (const levels of [2_000, 20_000]) {
      expect(checkA2uiMessages([create(), root(), model(nested(levels))]), `${levels} levels`).toEqual([past]);
    }
    // Any other member of a message is held to the bound counted from its body.
    const deepProp = { version: V, createSurface: { surfaceId: 's', catalogId: A2UI_BASIC_CATALOG_ID, theme: nested(5_000) } };
    expect(checkA2uiMessages([deepProp, root()])).toEqual([{ path: `/0/createSurface/theme${dPath(MAX_SURFACE_DATA_DEPTH - 1)}`, message: expect.stringMatching(/^nests this message more than 128 levels/) }]);
  });

  it('surfaces:a2ui:data-depth — a template\'s own objects: one shared by two parents passes (each place counts), one that contains itself is refused where it refers back, and neither throws', () => {
    let shared: unknown = { n: 1 };
    for (let i = 0; i < 60; i++) shared = { a: shared, b: shared }; // 2^60 paths, 60 levels: walked once per level
    expect(checkA2uiMessages([create(), root(), model({ shared })])).toEqual([]);
    const loop: Record<string, unknown> = { name: 'root' };
    loop.self = loop;
    expect(checkA2uiMessages([create(), root(), model(loop)])).toEqual([{ path: '/2/updateDataModel/value/self', message: expect.stringMatching(/^refers back to an object or array that contains it \(a cycle\)/) }]);
  });

  it('surfaces:build:invalid — "A template that throws or builds an invalid surface yields no part and a SurfaceTemplateError … the turn goes on without that surface": a tool\'s folder tree 1,500 folders deep in the data model is an error at its pointer, not an exception out of buildSurfaces', () => {
    const r = new SurfaceTemplateRegistry();
    r.register({ kind: 'tree', build: (data, ctx) => [create(ctx.surfaceId), root(ctx.surfaceId), model(data, ctx.surfaceId)] });
    const { parts, errors } = buildSurfaces(r, [{ kind: 'tree', data: { tree: folders(1_500) }, sessionId: 'S', turnId: 'T', callId: 'c1' }]);
    expect(parts).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SurfaceTemplateError);
    expect(errors[0]!.problems).toEqual([{ path: `/2/updateDataModel/value/tree${'/children/0'.repeat(63)}/children`, message: expect.stringContaining('more than 128 levels') }]);
  });

  it('surfaces:build:invalid — through the runtime, the turn over that tool keeps its tool.result and settles complete without the surface', async () => {
    const respondBlock = (parts: Part[]) => ({ type: 'tool_use' as const, name: 'respond', input: { parts, turnState: 'complete' } });
    const rt = createRuntime({
      model: createScriptedModel({
        rules: [
          { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'list_files', input: {} }] } },
          { when: { on: 'tool_result', tool: 'list_files' }, respond: { blocks: [respondBlock([{ text: 'Here is the tree.', metadata: { partType: 'response' } }])] } },
        ],
      }),
    });
    rt.registries.tools.register({ name: 'list_files', description: 'List files.', inputSchema: { type: 'object', properties: {} }, scope: 'generalist', handler: () => annotate({ tree: folders(1_500) }, { kind: 'tree' }) });
    rt.registries.surfaceTemplates.register({ kind: 'tree', build: (data, ctx) => [create(ctx.surfaceId), root(ctx.surfaceId), model(data, ctx.surfaceId)] });
    rt.registries.actors.register({ name: 'a', system: 'x', tools: ['list_files'] });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const s = await rt.createSession({ actor: 'a' });
      const out = await (await s.send('list my files')).settled;
      expect(out.finalizedBy).toBe('complete');
      expect(out.parts.map((p) => p.metadata.partType)).toEqual(['response']);
      const log = await rt.store.readEvents(s.id, 0);
      expect(log.map((e) => e.type)).toContain('tool.result');
      expect(log.some((e) => e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface')).toBe(false);
      await new Promise((r) => setImmediate(r));
      expect(warnings.some((w) => w instanceof SurfaceTemplateError && w.kind === 'tree')).toBe(true);
    } finally {
      process.off('warning', onWarning);
      await rt.close();
    }
  });

  it('surfaces:respond:rejected — "Every problem MUST be reported with a JSON Pointer into the part\'s data": an actor\'s surface whose data model is 2,000 levels deep is respond:a2ui-surface:valid at its pointer, not respond:internal', async () => {
    expect(checkSurfaceData({ messages: [create(), root(), model(nested(2_000))] })).toEqual([{ path: `/messages/2/updateDataModel/value${dPath(MAX_SURFACE_DATA_DEPTH)}`, message: expect.stringContaining('more than 128 levels') }]);
    const surface = JSON.parse(JSON.stringify({ messages: [create(), root()] })) as { messages: unknown[] };
    surface.messages.push(model(nested(2_000)));
    const respondBlock = (parts: unknown[]) => ({ type: 'tool_use' as const, name: 'respond', input: { parts, turnState: 'complete' } });
    const m = createScriptedModel({
      rules: [
        { when: { on: 'user' }, respond: { blocks: [respondBlock([{ text: 'Here.', metadata: { partType: 'response' } }, { data: surface, metadata: { partType: 'a2ui-surface' } }])] } },
        { when: { on: 'rejection' }, respond: { blocks: [respondBlock([{ text: 'Without the surface.', metadata: { partType: 'response' } }])] } },
      ],
    });
    const rt = createRuntime({ model: m });
    rt.registries.actors.register({ name: 'ui', system: 'x' });
    try {
      const s = await rt.createSession({ actor: 'ui' });
      const out = await (await s.send('show me')).settled;
      expect(out.parts.map((p) => p.text)).toEqual(['Without the surface.']);
      const rejection = (await s.mailbox()).find((e) => e.kind === 'tool_result' && e.isError);
      const content = rejection?.kind === 'tool_result' ? rejection.content : '';
      expect(content).toContain('[respond:a2ui-surface:valid]');
      expect(content).toContain(`/parts/1/data/messages/2/updateDataModel/value${dPath(MAX_SURFACE_DATA_DEPTH)}: nests the data model of surface "s" more than 128 levels`);
      expect(content).not.toContain('respond:internal');
    } finally {
      await rt.close();
    }
  });
});
