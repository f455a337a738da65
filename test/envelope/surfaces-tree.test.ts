/**
 * The component tree of a surface (docs/concepts/surfaces.md, surfaces:a2ui:tree): a loop of
 * child references reachable from root, or a tree deeper than MAX_SURFACE_DEPTH, is refused
 * before anything is published (protocols.md §2.4 "Treat all agent UI as untrusted: XSS,
 * phishing, DoS by very deep trees"). The official MessageProcessor accepts such a list and the
 * page's renderer recursed on it until the tab froze (found by a review session), so the check
 * cannot lean on the processor here.
 */
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { describe, expect, it } from 'vitest';
import { checkA2uiMessages, checkSurfaceData, MAX_SURFACE_DEPTH, MAX_SURFACE_DRAWN } from '../../src/envelope/a2ui.js';
import { drawnWithData, type ComponentRef, type PlacedComponent } from '../../src/envelope/a2ui-drawn.js';
import { buildSurfaces, SurfaceTemplateError } from '../../src/envelope/surfaces.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { A2UI_BASIC_CATALOG_ID, SurfaceTemplateRegistry } from '../../src/registries/surface-templates.js';
import { createRuntime } from '../../src/runtime.js';
import type { SessionEvent } from '../../src/types.js';

const V = 'v0.9';
const create = (surfaceId = 's') => ({ version: V, createSurface: { surfaceId, catalogId: A2UI_BASIC_CATALOG_ID } });
const components = (list: unknown[], surfaceId = 's') => ({ version: V, updateComponents: { surfaceId, components: list } });
const model = (value: unknown, surfaceId = 's') => ({ version: V, updateDataModel: { surfaceId, path: '/', value } });
const remove = (surfaceId = 's') => ({ version: V, deleteSurface: { surfaceId } });
const text = (id: string) => ({ id, component: 'Text', text: id });
const uc = (i: number, j: number) => `/${i}/updateComponents/components/${j}`;

/** The reviewer's surface: root holds t and a card whose child is root again. */
const LOOPED = [create('loop'), components([{ id: 'root', component: 'Column', children: ['t', 'a'] }, text('t'), { id: 'a', component: 'Card', child: 'root' }], 'loop')];

/** A chain root → c1 → … of `depth` components, each a Card holding the next, ending in a Text. */
function chain(depth: number): unknown[] {
  const ids = Array.from({ length: depth }, (_, i) => (i === 0 ? 'root' : `c${i}`));
  const list = ids.map((id, i) => (i === depth - 1 ? text(id) : { id, component: 'Card', child: ids[i + 1] }));
  return [create(), components(list)];
}

describe('surfaces: the component tree', () => {
  // [what, messages, the path of the reference that closes the loop]
  const looped: [string, unknown[], string][] = [
    ['a Card whose child is its Column parent (the review\'s surface)', LOOPED, `${uc(1, 2)}/child`],
    ['a Card that is its own child', [create(), components([{ id: 'root', component: 'Card', child: 'root' }])], `${uc(1, 0)}/child`],
    ['Column and Row children', [create(), components([{ id: 'root', component: 'Column', children: ['t', 'r'] }, text('t'), { id: 'r', component: 'Row', children: ['t', 'root'] }])], `${uc(1, 2)}/children/1`],
    ['a List template\'s componentId', [create(), components([{ id: 'root', component: 'Column', children: ['l'] }, { id: 'l', component: 'List', children: { componentId: 'root', path: '/xs' } }]), model({ xs: [1] })], `${uc(1, 1)}/children/componentId`],
    ['a Tabs tab\'s child', [create(), components([{ id: 'root', component: 'Tabs', tabs: [{ title: 'A', child: 't' }, { title: 'B', child: 'root' }] }, text('t')])], `${uc(1, 0)}/tabs/1/child`],
    ['a Modal\'s trigger', [create(), components([{ id: 'root', component: 'Column', children: ['m'] }, { id: 'm', component: 'Modal', trigger: 'root', content: 't' }, text('t')])], `${uc(1, 1)}/trigger`],
    ['a Modal\'s content', [create(), components([{ id: 'root', component: 'Modal', trigger: 't', content: 'c' }, text('t'), { id: 'c', component: 'Card', child: 'root' }])], `${uc(1, 2)}/child`],
    ['a Button\'s child', [create(), components([{ id: 'root', component: 'Button', child: 'c', action: { event: { name: 'go' } } }, { id: 'c', component: 'Card', child: 'root' }])], `${uc(1, 1)}/child`],
    ['a loop closed by a later updateComponents of the same list', [create(), components([{ id: 'root', component: 'Column', children: ['a'] }, text('a')]), components([{ id: 'a', component: 'Card', child: 'root' }])], `${uc(2, 0)}/child`],
    ['a loop below root that does not pass through root', [create(), components([{ id: 'root', component: 'Column', children: ['a'] }, { id: 'a', component: 'Card', child: 'b' }, { id: 'b', component: 'Card', child: 'a' }])], `${uc(1, 2)}/child`],
  ];

  it('surfaces:a2ui:tree — "Nothing invalid is ever published": a component graph with a loop reachable from root is refused at the reference that closes the loop, through every child reference of the basic catalog (children, template componentId, child, tabs[].child, trigger, content); the official processor accepts each of them', () => {
    for (const [what, messages, path] of looped) {
      new MessageProcessor([basicCatalog]).processMessages(structuredClone(messages) as never);
      const problems = checkA2uiMessages(messages);
      expect(problems.map((p) => p.path), what).toEqual([path]);
      expect(problems[0]!.message, what).toMatch(/^closes a loop of components in surface "\w+": "root" → .*; a component may not contain itself/);
    }
    expect(checkSurfaceData({ messages: LOOPED })).toEqual([
      { path: `/messages${uc(1, 2)}/child`, message: expect.stringContaining('"root" → "a" → "root"') },
    ]);
  });

  it('surfaces:a2ui:tree — what is not a loop passes: a component shared by two parents, a loop no path from root reaches, a reference to a missing component (renderers skip it), and a surface deleted and created again with new components', () => {
    const ok: unknown[][] = [
      [create(), components([{ id: 'root', component: 'Column', children: ['a', 'b', 't'] }, { id: 'a', component: 'Card', child: 't' }, { id: 'b', component: 'Card', child: 't' }, text('t')])],
      [create(), components([text('root'), { id: 'x', component: 'Card', child: 'y' }, { id: 'y', component: 'Card', child: 'x' }])],
      [create(), components([{ id: 'root', component: 'Column', children: ['nope'] }])],
      [create(), components([{ id: 'root', component: 'Column', children: ['a'] }, text('a')]), remove(), create(), components([{ id: 'root', component: 'Card', child: 'a' }, text('a')])],
    ];
    for (const messages of ok) {
      expect(checkA2uiMessages(messages)).toEqual([]);
      new MessageProcessor([basicCatalog]).processMessages(structuredClone(messages) as never);
    }
  });

  it('surfaces:a2ui:depth — "DoS by very deep trees": a tree 64 components deep (MAX_SURFACE_DEPTH) passes; one deeper is refused at the reference that goes past the bound', () => {
    expect(MAX_SURFACE_DEPTH).toBe(64);
    expect(checkA2uiMessages(chain(MAX_SURFACE_DEPTH))).toEqual([]);
    const problems = checkA2uiMessages(chain(MAX_SURFACE_DEPTH + 1));
    expect(problems).toEqual([{ path: `${uc(1, MAX_SURFACE_DEPTH - 1)}/child`, message: expect.stringMatching(/^nests surface "s" 65 components deep \(from "root"\); a surface's tree may be at most 64 components deep/) }]);
    // A long chain is judged without recursion (no stack overflow on the model's input).
    expect(checkA2uiMessages(chain(20_000))[0]!.path).toBe(`${uc(1, MAX_SURFACE_DEPTH - 1)}/child`);
  });

  it('surfaces:a2ui:drawn — "DoS by very deep trees": a chain whose components each refer to the next twice is no loop and only 20 deep, yet draws 2^20 components; it is refused, and a wide surface under the bound passes', () => {
    /** root → d1 → … → d(n-1) → leaf, each level a Row holding the next level twice. */
    const doubling = (n: number): unknown[] => {
      const ids = Array.from({ length: n }, (_, i) => (i === 0 ? 'root' : `d${i}`));
      const list: unknown[] = ids.map((id, i) => ({ id, component: 'Row', children: [ids[i + 1] ?? 'leaf', ids[i + 1] ?? 'leaf'] }));
      list.push(text('leaf'));
      return [create(), components(list)];
    };
    const problems = checkA2uiMessages(doubling(20));
    expect(problems).toHaveLength(1);
    expect(problems[0]!.message).toMatch(new RegExp(`^draws more than ${MAX_SURFACE_DRAWN} components in surface "s"`));
    expect(problems[0]!.path).toMatch(/^\/1\/updateComponents\/components\/\d+\/children\/[01]$/);
    // 2^11 - 1 components drawn: within the bound.
    expect(checkA2uiMessages(doubling(10))).toEqual([]);
    // Many distinct components side by side are drawn once each.
    const wide = [create(), components([{ id: 'root', component: 'Column', children: Array.from({ length: 1000 }, (_, i) => `t${i}`) }, ...Array.from({ length: 1000 }, (_, i) => text(`t${i}`))])];
    expect(checkA2uiMessages(wide)).toEqual([]);
  });

  it('surfaces:a2ui:drawn-data — "A List\'s template counts once per element of the array its data path resolves to": a List over 30,000 rows (the review\'s 3.3 MB surface, which froze the page) is refused at its template reference, saying how many components its data makes drawn; nested Lists multiply; an array a later updateDataModel of the list grows is judged too; the same surfaces under the bound pass and the processor accepts them', () => {
    const list = [
      { id: 'root', component: 'Column', children: ['title', 'list'] },
      text('title'),
      { id: 'list', component: 'List', children: { componentId: 'row', path: '/flights' } },
      { id: 'row', component: 'Row', children: ['f-id', 'f-to'] },
      { id: 'f-id', component: 'Text', text: { path: 'id' } },
      { id: 'f-to', component: 'Text', text: { path: 'to' } },
    ];
    const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `TS${i}`, to: 'Corfu' }));
    // root, title and list, and 3 components a row: 1,665 rows draw 4,998.
    const flights = (n: number) => [create(), components(list), model({ flights: rows(n) })];
    const big = checkA2uiMessages(flights(30_000));
    expect(big).toEqual([{ path: `${uc(1, 2)}/children/componentId`, message: expect.stringMatching(/^draws more than 5000 components in surface "s" with its data as message 2 leaves it \(90003 drawn\): "list" draws its template "row" \(3 components each\) once for each of the 30000 elements of the array at "\/flights"; .*give at most 1665 elements there/) }]);
    expect(checkA2uiMessages(flights(1666))[0]!.message).toMatch(/\(5001 drawn\)/);
    for (const ok of [flights(1665), flights(0), [create(), components(list)]]) {
      expect(checkA2uiMessages(ok)).toEqual([]);
      new MessageProcessor([basicCatalog]).processMessages(structuredClone(ok) as never);
    }
    // The data may come first, or grow in a later message of the same list (a renderer paints between them).
    expect(checkA2uiMessages([create(), model({ flights: rows(30_000) }), components(list)])[0]!.path).toBe(`${uc(2, 2)}/children/componentId`);
    const grown = [create(), components(list), model({ flights: [] }), { version: V, updateDataModel: { surfaceId: 's', path: '/flights', value: rows(2000) } }];
    const before = JSON.stringify(grown);
    expect(checkA2uiMessages(grown)[0]!.message).toMatch(/ with its data as message 3 leaves it \(6003 drawn\)/);
    expect(JSON.stringify(grown)).toBe(before); // the check writes into no message's data
    // Nested Lists multiply: 60 groups of 100 items draw more than 6,000; 10 groups of 100 pass.
    const nested = [
      { id: 'root', component: 'List', children: { componentId: 'g', path: '/groups' } },
      { id: 'g', component: 'Column', children: ['name', 'items'] },
      { id: 'name', component: 'Text', text: { path: 'name' } },
      { id: 'items', component: 'List', children: { componentId: 'item', path: 'items' } },
      { id: 'item', component: 'Text', text: { path: 'x' } },
    ];
    const groups = (g: number, n: number) => [create(), components(nested), model({ groups: Array.from({ length: g }, (_, i) => ({ name: `g${i}`, items: Array.from({ length: n }, (_, x) => ({ x })) })) })];
    expect(checkA2uiMessages(groups(10, 100))).toEqual([]);
    expect(checkA2uiMessages(groups(60, 100))).toEqual([{ path: `${uc(1, 0)}/children/componentId`, message: expect.stringMatching(/^draws more than 5000 components in surface "s" with its data as message 2 leaves it \(at least \d+ drawn\): "root" draws its template "g" once for each of the 60 elements/) }]);
    // One group alone past the bound: refused at the inner List's template.
    expect(checkA2uiMessages(groups(2, 6000))[0]!.path).toBe(`${uc(1, 3)}/children/componentId`);
  });

  it('surfaces:a2ui:drawn-data-later — "the same bound applies to the surface\'s data as updated": a list that updates a surface it did not create (an earlier part\'s) is judged over that surface as rebuilt when the check is given it, so an updateDataModel alone that grows its List past the bound is refused; without it, the list cannot be judged (surfaces:a2ui:order refuses it first)', () => {
    // Children lists and templates only: enough for these components.
    const refsOf = ({ component, at }: PlacedComponent): ComponentRef[] => {
      const v = component.children;
      if (Array.isArray(v)) return v.map((id: string, k) => ({ id, at: `${at}/children/${k}` }));
      const t = v as { componentId: string; path: string } | undefined;
      return t === undefined ? [] : [{ id: t.componentId, at: `${at}/children/componentId`, template: t.path }];
    };
    const earlier = [create(), components([{ id: 'root', component: 'List', children: { componentId: 'row', path: '/rows' } }, text('row')]), model({ rows: [] })];
    const later = [model({ rows: Array.from({ length: 6000 }, (_, i) => i) })];
    expect(drawnWithData(later, '/messages', MAX_SURFACE_DRAWN, refsOf, (id) => (id === 's' ? structuredClone(earlier) : undefined))).toEqual([
      { path: '/messages/0/updateDataModel', message: expect.stringMatching(/^draws more than 5000 components in surface "s" with its data as message 0 leaves it \(6001 drawn\): "root" draws its template "row" \(1 components each\) once for each of the 6000 elements/) },
    ]);
    expect(drawnWithData(later, '/messages', MAX_SURFACE_DRAWN, refsOf)).toEqual([]);
    expect(checkA2uiMessages(later)[0]!.message).toMatch(/is not created before this message/);
  });

  it('surfaces:build:tree — "Nothing invalid is ever published": a template that builds a looped surface yields no part and a SurfaceTemplateError (surface.template_invalid) naming the reference', () => {
    const r = new SurfaceTemplateRegistry();
    r.register({ kind: 'loopy', build: (_d, ctx) => [create(ctx.surfaceId), components([{ id: 'root', component: 'Card', child: 'root' }], ctx.surfaceId)] });
    const { parts, errors } = buildSurfaces(r, [{ kind: 'loopy', data: {}, sessionId: 'S', turnId: 'T', callId: 'c' }]);
    expect(parts).toEqual([]);
    expect(errors[0]).toBeInstanceOf(SurfaceTemplateError);
    expect(errors[0]!.code).toBe('surface.template_invalid');
    expect(errors[0]!.message).toMatch(/^surface template 'loopy' built an invalid A2UI surface: \/1\/updateComponents\/components\/0\/child: closes a loop/);
  });

  it('surfaces:respond:tree — "An actor\'s invalid surface is a respond() rule violation": a looped surface from a model\'s respond() is refused (respond:a2ui-surface:valid) at the reference closing the loop, never published, and the model retries', async () => {
    const m = createScriptedModel({
      rules: [
        { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { turnState: 'complete', parts: [{ text: 'Here is a view.', metadata: { partType: 'response' } }, { data: { messages: LOOPED }, metadata: { partType: 'a2ui-surface' } }] } }] } },
        { respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { turnState: 'complete', parts: [{ text: 'As text, then.', metadata: { partType: 'response' } }] } }] } },
      ],
    });
    const rt = createRuntime({ model: m });
    rt.registries.actors.register({ name: 'ui' });
    const s = await rt.createSession({ actor: 'ui' });
    const out = await (await s.send('loop please')).settled;
    expect(out.parts.map((p) => p.text)).toEqual(['As text, then.']);
    const events: SessionEvent[] = await rt.store.readEvents(s.id, 0);
    expect(events.filter((e) => e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface')).toEqual([]);
    expect(m.requests).toHaveLength(2);
    const told = JSON.stringify(m.requests[1]!.messages.at(-1));
    expect(told).toContain('[respond:a2ui-surface:valid]');
    expect(told).toContain('/parts/1/data/messages/1/updateComponents/components/2/child: closes a loop of components in surface');
    await rt.close();
  });

  it('surfaces:a2ui:tree-across-parts — a later part cannot add to an earlier part\'s surface: its updateComponents without the createSurface is refused (surfaces:a2ui:order), so every surface\'s tree is judged whole within the list that creates it', () => {
    const later = [components([{ id: 'a', component: 'Card', child: 'root' }], 'loop')];
    expect(checkSurfaceData({ messages: later }).map((p) => p.path)).toEqual(['/messages/0/updateComponents/surfaceId']);
  });
});

describe('surfaces: a surface id used again in one list', () => {
  it('surfaces:a2ui:order — "A surface id used again" (v0.9.1): [deleteSurface s, createSurface s, updateComponents s, updateDataModel s] and [createSurface s, …, deleteSurface s, createSurface s, …] pass, as the official MessageProcessor applies each; an update after the delete with no createSurface again is still refused', () => {
    const renew = [create(), components([{ id: 'root', component: 'Text', text: { path: '/t' } }]), model({ t: 'new' })];
    const accepted = [
      [remove(), ...renew],
      [...renew, remove(), ...renew],
    ];
    for (const messages of accepted) {
      new MessageProcessor([basicCatalog]).processMessages(structuredClone(messages) as never);
      expect(checkSurfaceData({ messages })).toEqual([]);
    }
    const refused = [...renew, remove(), model({ t: 'late' })];
    expect(() => new MessageProcessor([basicCatalog]).processMessages(structuredClone(refused) as never)).toThrow(/Surface not found/);
    expect(checkSurfaceData({ messages: refused })).toEqual([
      { path: '/messages/4/updateDataModel/surfaceId', message: expect.stringMatching(/^surface "s" is deleted by message 3; no message for it may follow its deleteSurface unless a createSurface creates it again/) },
    ]);
    // Created twice while it is active is still a duplicate.
    expect(checkA2uiMessages([create(), create()]).map((p) => p.path)).toEqual(['/1/createSurface/surfaceId']);
  });
});
