/**
 * A session's live surfaces across turns (docs/concepts/surfaces.md, surfaces:live): the oracle is
 * the official @a2ui/web_core MessageProcessor kept for the whole conversation, as an A2UI
 * client keeps one (protocols.md §2: "A second createSurface for a live surfaceId is an error").
 * Found by a review: a re-create of a live surface in a later turn was published (the client
 * refused it and applied the rest to the old surface), and an update-only part, A2UI's way to
 * change a live surface, was refused with advice that led the model to the re-create.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { afterAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript, ScriptRule } from '../../src/models/script.js';
import { annotate } from '../../src/router/annotated.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { SessionStore } from '../../src/machines/ports.js';
import type { MailboxEntry, SessionEvent } from '../../src/types.js';

const V = 'v0.9';
const CAT = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';
const create = (id: string) => ({ version: V, createSurface: { surfaceId: id, catalogId: CAT } });
const text = (id: string) => ({ version: V, updateComponents: { surfaceId: id, components: [{ id: 'root', component: 'Text', text: { path: '/msg' } }] } });
const dm = (id: string, value: unknown, path = '/') => ({ version: V, updateDataModel: { surfaceId: id, path, value } });
const del = (id: string) => ({ version: V, deleteSurface: { surfaceId: id } });
const surf = (...messages: unknown[]) => ({ data: { messages }, metadata: { partType: 'a2ui-surface' } });
const respond = (say: string, ...parts: unknown[]) => ({ blocks: [{ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text: say, metadata: { partType: 'response' } }, ...parts], turnState: 'complete' } }] });
const onUser = (re: string, r: ReturnType<typeof respond>): ScriptRule => ({ when: { on: 'user', text: re }, respond: r });
const onRejection = (re: string, r: ReturnType<typeof respond>): ScriptRule => ({ when: { on: 'rejection', text: re }, respond: r });

const SCRIPT: ModelScript = {
  rules: [
    onUser('^one', respond('shown', surf(create('summary'), text('summary'), dm('summary', { msg: 'one' })))),
    // Turn 2: update the live surface's data only (no createSurface).
    onUser('^two', respond('updated', surf(dm('summary', { msg: 'two' })))),
    // Turn 3: new components for the live surface, bound to the data it already holds.
    onUser('^three', respond('restyled', surf({ version: V, updateComponents: { surfaceId: 'summary', components: [{ id: 'root', component: 'Column', children: ['title', 'body'] }, { id: 'title', component: 'Text', text: 'Summary' }, { id: 'body', component: 'Text', text: { path: '/msg' } }] } }, dm('summary', 'three', '/msg')))),
    // A re-create of the live id: refused, and the model follows the advice with an update.
    onUser('^again', respond('again', surf(create('summary'), text('summary'), dm('summary', { msg: 'again' })))),
    onRejection('already live', respond('updated instead', surf(dm('summary', { msg: 'again' })))),
    // A replace: deleteSurface first in the same list.
    onUser('^replace', respond('replaced', surf(del('summary'), create('summary'), text('summary'), dm('summary', { msg: 'replaced' })))),
    // A loop through a component an earlier part gave: root (Column) -> body, body (Card) -> root.
    onUser('^loop', respond('looped', surf({ version: V, updateComponents: { surfaceId: 'summary', components: [{ id: 'root', component: 'Column', children: ['body'] }, { id: 'body', component: 'Card', child: 'root' }] } }))),
    onRejection('closes a loop', respond('gave up on the loop')),
    // An update of a surface that is not live.
    onUser('^ghost', respond('ghost', surf(dm('ghost', { msg: 'boo' })))),
    onRejection('is not live', respond('gave up on the ghost')),
    // Delete it; a later update of it is refused.
    onUser('^close', respond('closed', surf(del('summary')))),
    // A template's surface is live too: a later respond() updates it.
    { when: { on: 'user', text: '^note' }, respond: { blocks: [{ type: 'tool_use', name: 'note', input: {}, id: 'toolu_note' }] } },
    { when: { on: 'tool_result', tool: 'note' }, respond: respond('noted', surf(dm('note:toolu_note', { msg: 'edited by the actor' }))) },
    onRejection('.', respond('gave up')),
  ],
};

function make(store?: SessionStore) {
  const rt = createRuntime({ model: createScriptedModel(SCRIPT), ...(store === undefined ? {} : { store }) });
  rt.registries.actors.register({ name: 'ui', tools: ['note'], system: 'x' });
  rt.registries.tools.register({ name: 'note', description: 'A note.', inputSchema: { type: 'object', properties: {} }, scope: 'generalist', handler: () => annotate({ msg: 'from the template' }, { kind: 'note' }) });
  rt.registries.surfaceTemplates.register({ kind: 'note', build: (data, ctx) => [create(ctx.surfaceId), text(ctx.surfaceId), dm(ctx.surfaceId, data)] });
  return rt;
}

/** What a client that keeps one MessageProcessor for the conversation holds after every published surface part, in seq order. */
function oneClient(events: readonly SessionEvent[]): MessageProcessor<any> {
  const client = new MessageProcessor([basicCatalog]);
  for (const e of events) {
    if (e.type !== 'part.received' || e.part.metadata.partType !== 'a2ui-surface') continue;
    // Throws on what the client refuses (a second createSurface of a live id among them).
    client.processMessages(structuredClone((e.part.data as { messages: unknown[] }).messages) as never);
  }
  return client;
}

const rejections = (mailbox: readonly MailboxEntry[]): string[] => mailbox.flatMap((m) => (m.kind === 'tool_result' && m.isError ? [String(m.content)] : []));
const msgOf = (client: MessageProcessor<any>, id: string): unknown => client.model.getSurface(id)?.dataModel.get('/msg');

const dir = mkdtempSync(join(tmpdir(), 'turnstate-live-surfaces-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('surfaces: live surfaces across turns', () => {
  it('surfaces:live:update — "an updateComponents or updateDataModel naming a live id is accepted without a createSurface": a later turn updates the surface an earlier turn created (its data, then its components), and one MessageProcessor kept for the conversation applies every part', async () => {
    const rt = make();
    rt.registries.actors.register({ name: 'ui2', system: 'x' });
    const s = await rt.createSession({ actor: 'ui' });
    for (const say of ['one', 'two']) expect((await (await s.send(say)).settled).parts.map((p) => p.metadata.partType)).toEqual(['response', 'a2ui-surface']);
    let client = oneClient(await rt.store.readEvents(s.id, 0));
    expect(msgOf(client, 'summary')).toBe('two');
    expect((await (await s.send('three')).settled).parts.map((p) => p.metadata.partType)).toEqual(['response', 'a2ui-surface']);
    client = oneClient(await rt.store.readEvents(s.id, 0));
    expect(msgOf(client, 'summary')).toBe('three');
    expect(client.model.getSurface('summary')!.componentsModel.get('title')?.type).toBe('Text');
    expect(rejections(await s.mailbox())).toEqual([]);
    expect(await s.surfaces()).toEqual(['summary']);
    await rt.close();
  });

  it('surfaces:live:recreate — "a createSurface of a live id MUST be refused": the re-create in a later turn is a respond:a2ui-surface:valid problem telling the model to update it or deleteSurface it first; the model\'s update is published, a delete-then-create replaces it, and one MessageProcessor never sees a second createSurface', async () => {
    const rt = make();
    const s = await rt.createSession({ actor: 'ui' });
    await (await s.send('one')).settled;
    const again = await (await s.send('again')).settled;
    expect(again.parts.map((p) => (p.metadata.partType === 'response' ? p.text : p.metadata.partType))).toEqual(['updated instead', 'a2ui-surface']);
    const [problem] = rejections(await s.mailbox());
    expect(problem).toContain('/parts/1/data/messages/0/createSurface/surfaceId');
    expect(problem).toContain('surface "summary" is already live');
    expect(problem).toMatch(/updateComponents \/ updateDataModel/);
    expect(problem).toContain('"deleteSurface": { "surfaceId": "summary" }');
    expect(problem).toContain('[respond:a2ui-surface:valid]');
    expect(msgOf(oneClient(await rt.store.readEvents(s.id, 0)), 'summary')).toBe('again');
    // A replace in one list: deleteSurface, then createSurface.
    expect((await (await s.send('replace')).settled).parts.map((p) => p.metadata.partType)).toEqual(['response', 'a2ui-surface']);
    expect(msgOf(oneClient(await rt.store.readEvents(s.id, 0)), 'summary')).toBe('replaced');
    expect(await s.surfaces()).toEqual(['summary']);
    await rt.close();
  });

  it('surfaces:live:update — "an update of an id that is neither created earlier in the list nor live is refused", naming the live surfaces; one deleted by an earlier turn is not live; a template\'s surface is live and a later respond() updates it', async () => {
    const rt = make();
    const s = await rt.createSession({ actor: 'ui' });
    await (await s.send('one')).settled;
    expect((await (await s.send('ghost')).settled).parts.map((p) => (p.metadata.partType === 'response' ? p.text : p.metadata.partType))).toEqual(['gave up on the ghost']);
    const [ghost] = rejections(await s.mailbox());
    expect(ghost).toContain('surface "ghost" is not created before this message: put its createSurface first in the same list');
    expect(ghost).toContain('Only a live surface (one an earlier part created and none deleted since) is updated without a createSurface');
    expect(ghost).toContain('the live ones are "summary"');
    // The tool's template surface, then the actor's update of it in the same turn's next call.
    expect((await (await s.send('note')).settled).parts.map((p) => p.metadata.partType)).toEqual(['a2ui-surface', 'response', 'a2ui-surface']);
    expect(await s.surfaces()).toEqual(['summary', 'note:toolu_note']);
    expect(msgOf(oneClient(await rt.store.readEvents(s.id, 0)), 'note:toolu_note')).toBe('edited by the actor');
    // Deleted in one turn, not live in the next.
    await (await s.send('close')).settled;
    expect(await s.surfaces()).toEqual(['note:toolu_note']);
    expect((await (await s.send('two')).settled).parts.map((p) => (p.metadata.partType === 'response' ? p.text : p.metadata.partType))).toEqual(['gave up on the ghost']);
    expect(rejections(await s.mailbox()).at(-1)).toContain('surface "summary" is not created before this message');
    oneClient(await rt.store.readEvents(s.id, 0));
    await rt.close();
  });

  it('surfaces:a2ui:tree — across parts: an update of a live surface that closes a loop with the components an earlier part gave is refused (judged over the live components), never published', async () => {
    const rt = make();
    const s = await rt.createSession({ actor: 'ui' });
    await (await s.send('one')).settled;
    await (await s.send('three')).settled;
    expect((await (await s.send('loop')).settled).parts.map((p) => (p.metadata.partType === 'response' ? p.text : p.metadata.partType))).toEqual(['gave up on the loop']);
    const [loop] = rejections(await s.mailbox());
    expect(loop).toMatch(/closes a loop of components in surface "summary": "root" → "body" → "root"/);
    oneClient(await rt.store.readEvents(s.id, 0));
    await rt.close();
  });

  it('surfaces:live:restart — "the live surfaces MUST be the same after a restart": on a SQLite store, a runtime opened after close() lists the same live surfaces and accepts an update-only part of one in its next turn', async () => {
    const path = join(dir, 'live.db');
    const a = make(createSqliteStore({ path }));
    const s = await a.createSession({ actor: 'ui', id: 'sess_live' });
    await (await s.send('one')).settled;
    await (await s.send('note')).settled;
    const before = await s.surfaces();
    expect(before).toEqual(['summary', 'note:toolu_note']);
    await a.close();

    const b = make(createSqliteStore({ path }));
    const h = (await b.session('sess_live'))!;
    expect(await h.surfaces()).toEqual(before);
    expect((await (await h.send('two')).settled).parts.map((p) => p.metadata.partType)).toEqual(['response', 'a2ui-surface']);
    const again = await (await h.send('again')).settled;
    expect(again.parts.map((p) => (p.metadata.partType === 'response' ? p.text : p.metadata.partType))).toEqual(['updated instead', 'a2ui-surface']);
    const client = oneClient(await b.store.readEvents('sess_live', 0));
    expect(msgOf(client, 'summary')).toBe('again');
    expect(rejections(await h.mailbox())).toHaveLength(1);
    await b.close();
  });
});

describe('surfaces:a2ui:drawn-data across turns', () => {
  it('surfaces:a2ui:drawn-data — "the same bound holds for the surface\'s data as a later part updates it": a live List grown by an updateDataModel alone past 5,000 drawn components is refused; a small growth passes', async () => {
    const list = (id: string) => ({
      version: V,
      updateComponents: {
        surfaceId: id,
        components: [
          { id: 'root', component: 'List', children: { componentId: 'row', path: '/rows' } },
          { id: 'row', component: 'Text', text: { path: 'name' } },
        ],
      },
    });
    const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `row ${i}` }));
    const script: ModelScript = {
      rules: [
        onUser('^show', respond('shown', surf(create('rows'), list('rows'), dm('rows', rows(3), '/rows')))),
        onUser('^grow a little', respond('grew', surf(dm('rows', rows(30), '/rows')))),
        onUser('^grow a lot', respond('grew a lot', surf(dm('rows', rows(30_000), '/rows')))),
        onRejection('draws more than 5000', respond('too many rows')),
      ],
    };
    const rt = createRuntime({ model: createScriptedModel(script) });
    rt.registries.actors.register({ name: 'ui', system: 'x' });
    const s = await rt.createSession({ actor: 'ui' });
    for (const say of ['show', 'grow a little', 'grow a lot']) expect((await (await s.send(say)).settled).finalizedBy).toBe('complete');
    const refused = rejections(await s.mailbox());
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/draws more than 5000 components in surface "rows"/);
    expect(refused[0]).toMatch(/30000 elements of the array at "\/rows"/);
    // What the client holds: 30 rows, never 30,000.
    const events = await rt.store.readEvents(s.id, 0);
    const client = oneClient(events);
    expect((client.model.getSurface('rows')?.dataModel.get('/rows') as unknown[]).length).toBe(30);
    await rt.close();
  });
});
