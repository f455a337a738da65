/**
 * A surface's life on the demo page: an actor's part may delete a surface an earlier part
 * showed (deleteSurface), and A2UI v0.9.1 lets a later part create a surface with the same id
 * again (shared protocols §2.0, §2.4; docs/concepts/surfaces.md "The demo").
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RunningServer } from '../../src/transports/server.js';
import { haveChromium, launchChromium } from './chromium.js';
import { servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/surface-lifecycle');

const CATALOG = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';

/** A user message matching `text` answered with a response text and one a2ui-surface part holding `messages`. */
function surfaceRule(text: string, say: string, messages: unknown[]) {
  return {
    when: { on: 'user' as const, text },
    respond: {
      blocks: [
        {
          type: 'tool_use' as const,
          name: 'respond',
          input: {
            turnState: 'complete',
            parts: [
              { text: say, metadata: { partType: 'response' } },
              { data: { messages }, metadata: { partType: 'a2ui-surface' } },
            ],
          },
        },
      ],
    },
  };
}

/** Surface `note`: a label bound to /label and a Pick button whose action carries it. */
const createNote = (label: string): unknown[] => [
  { version: 'v0.9', createSurface: { surfaceId: 'note', catalogId: CATALOG } },
  {
    version: 'v0.9',
    updateComponents: {
      surfaceId: 'note',
      components: [
        { id: 'root', component: 'Column', children: ['t', 'b'] },
        { id: 't', component: 'Text', text: { path: '/label' } },
        { id: 'b', component: 'Button', child: 'bl', action: { event: { name: 'pick', context: { choice: { path: '/label' } } } } },
        { id: 'bl', component: 'Text', text: 'Pick' },
      ],
    },
  },
  { version: 'v0.9', updateDataModel: { surfaceId: 'note', path: '/', value: { label } } },
];

describe.skipIf(!CHROMIUM_OK)('web: a surface deleted and created again', () => {
  let server: RunningServer;
  let ctx: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  const script = travelDeskScript();
  script.rules.unshift(
    surfaceRule('^show$', 'Here it is.', createNote('FIRST')),
    surfaceRule('^again$', 'Here it is again.', createNote('SECOND')),
    surfaceRule('^hide$', 'Hidden.', [{ version: 'v0.9', deleteSurface: { surfaceId: 'note' } }]),
    // A create of the still-live note is refused (surfaces:live:recreate): the model replaces it, deleteSurface first.
    { ...surfaceRule('already live', 'Replaced it.', [{ version: 'v0.9', deleteSurface: { surfaceId: 'note' } }, ...createNote('FIRST')]), when: { on: 'rejection' as const, text: 'surface "note" is already live' } },
    {
      when: { on: 'user', text: '^\\[surface action\\] pick on note' },
      respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { turnState: 'complete', parts: [{ text: 'Picked.', metadata: { partType: 'response' } }] } }] },
    },
  );
  const runtime = createRuntime({ model: createScriptedModel(script) });
  const desk = createTravelDesk(runtime);

  beforeAll(async () => {
    server = await servePage(runtime, desk.agents);
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 1200 }));
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
  });

  /**
   * A new tab (a new session: sessionStorage is per tab), live; `problems` collects page errors,
   * console errors and console warnings.
   */
  async function openTab(problems: string[], setup?: (p: Page) => Promise<unknown>): Promise<Page> {
    const p = await ctx.newPage();
    await setup?.(p);
    p.on('pageerror', (e) => problems.push(e.message));
    p.on('console', (m) => {
      // Every warning counts (a surface it did not render, a renderer's own, such as @a2ui/lit's "[MarkdownDirective] … no markdown renderer").
      if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
    });
    await p.goto(server.url + '/');
    await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
    return p;
  }
  const turnsOf = async (p: Page) => runtime.store.readEvents(await p.evaluate(() => document.body.dataset.sessionId ?? ''), 0);
  /** Sends `text` and waits until its turn settled and its parts are on the page. */
  async function sayAndSettle(p: Page, text: string): Promise<void> {
    const settled = async () => (await turnsOf(p)).filter((e) => e.type === 'turn.settled').length;
    const before = await settled();
    const shown = await p.locator('li.part-a2ui-surface').count();
    await p.getByLabel('Message').fill(text);
    await p.keyboard.press('Enter');
    await expect.poll(settled, { timeout: 20_000 }).toBe(before + 1);
    await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
    await expect.poll(() => p.locator('li.part-a2ui-surface').count(), { timeout: 10_000 }).toBe(shown + 1);
    // The renderer mounts each part once its bundle is loaded (a promise): let it settle.
    await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
  }
  const noteSurfaces = (p: Page) => p.locator('a2ui-surface[data-surface-id="note"]');
  const partText = (p: Page, i: number) => p.locator('li.part-a2ui-surface').nth(i).locator('.text').innerText();

  it('web:surface:delete — "The renderer must unsubscribe bindings on deleteSurface": a part that deletes surface note takes the rendered surface (and its Pick button) off the page, its place says the view was closed, and the delete part shows no data fallback and no "renderer is not loaded"', async () => {
    const problems: string[] = [];
    const p = await openTab(problems);
    try {
      await sayAndSettle(p, 'show');
      await noteSurfaces(p).getByText('FIRST', { exact: true }).waitFor({ timeout: 10_000 });
      await expect(p.getByRole('button', { name: 'Pick' }).count()).resolves.toBe(1);

      await sayAndSettle(p, 'hide');
      // The surface is gone: no element renders it, no button of it is left to click.
      await expect(noteSurfaces(p).count()).resolves.toBe(0);
      await expect(p.getByRole('button', { name: 'Pick' }).count()).resolves.toBe(0);
      const shown = p.locator('li.part-a2ui-surface').first();
      await expect(shown.getAttribute('class')).resolves.toContain('surface-closed');
      await expect(partText(p, 0)).resolves.toMatch(/closed/i);
      // The delete part itself renders nothing misleading: no data fallback, no "cannot show".
      const deleting = p.locator('li.part-a2ui-surface').nth(1);
      await expect(deleting.getAttribute('class')).resolves.not.toContain('surface-data');
      await expect(partText(p, 1)).resolves.not.toMatch(/cannot show|not loaded/);
      await expect(p.locator('li.surface-data').count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await p.close();
    }
  }, 90_000);

  it('web:surface:reuse — "surfaceId need only be unique among *active* surfaces" (v0.9.1): after a delete, a part creating note again renders it as a surface; an actor\'s create of the still-live note is refused (surfaces:live:recreate) and its replace (deleteSurface, then createSurface, in one part) closes the old surface in its place and renders the new one; the new one\'s button sends its action', async () => {
    const problems: string[] = [];
    const p = await openTab(problems);
    try {
      await sayAndSettle(p, 'show');
      await sayAndSettle(p, 'hide');
      await sayAndSettle(p, 'again');
      // Re-created after its delete: a rendered surface, not a data fallback.
      const again = p.locator('li.part-a2ui-surface').nth(2);
      await again.locator('a2ui-surface[data-surface-id="note"]').getByText('SECOND', { exact: true }).waitFor({ timeout: 10_000 });
      await expect(again.getAttribute('class')).resolves.not.toContain('surface-data');
      await expect(noteSurfaces(p).count()).resolves.toBe(1);

      // A create of the still-live note: refused by the runtime, and the model's replace takes its place.
      await sayAndSettle(p, 'show');
      await expect.poll(async () => (await turnsOf(p)).some((e) => e.type === 'part.received' && e.part.metadata.partType === 'response' && e.part.text === 'Replaced it.')).toBe(true);
      const replacing = p.locator('li.part-a2ui-surface').nth(3);
      await replacing.locator('a2ui-surface[data-surface-id="note"]').getByText('FIRST', { exact: true }).waitFor({ timeout: 10_000 });
      await expect(replacing.getAttribute('class')).resolves.not.toContain('surface-data');
      await expect(noteSurfaces(p).count()).resolves.toBe(1);
      await expect(again.getAttribute('class')).resolves.toContain('surface-closed');
      await expect(partText(p, 2)).resolves.toMatch(/closed/i);
      await expect(p.locator('li.surface-data').count()).resolves.toBe(0);

      // The live surface works: its Pick sends the action with its own data.
      await expect(p.getByRole('button', { name: 'Pick' }).count()).resolves.toBe(1);
      await p.getByRole('button', { name: 'Pick' }).click();
      await expect
        .poll(async () => (await turnsOf(p)).flatMap((e) => (e.type === 'turn.started' && e.input.text.startsWith('[surface action]') ? [e.input.text] : [])), { timeout: 10_000 })
        .toEqual(['[surface action] pick on note (b)\n{"choice":"FIRST"}']);
      expect(problems).toEqual([]);
    } finally {
      await p.close();
    }
  }, 90_000);

  it('web:surface:delete-no-bundle — "The renderer must unsubscribe bindings on deleteSurface", without the bundle: the surface shown as data is marked closed when a part deletes it, and the delete part says it closed a view instead of "renderer is not loaded"', async () => {
    const problems: string[] = [];
    const p = await openTab(problems, (t) => t.route('**/dist/surfaces.js', (r) => r.fulfill({ status: 404, body: 'not built' })));
    try {
      await sayAndSettle(p, 'show');
      const shown = p.locator('li.part-a2ui-surface').first();
      await shown.locator('dd', { hasText: 'FIRST' }).waitFor({ timeout: 10_000 });
      await expect(shown.getAttribute('class')).resolves.toContain('surface-data');
      await sayAndSettle(p, 'hide');
      await expect(shown.getAttribute('class')).resolves.toContain('surface-closed');
      await expect(partText(p, 0)).resolves.toMatch(/This view was closed\./);
      await expect(partText(p, 1)).resolves.toBe('Closed a view.');
      // Created again: shown as data again, and not marked closed.
      await sayAndSettle(p, 'again');
      const again = p.locator('li.part-a2ui-surface').nth(2);
      await again.locator('dd', { hasText: 'SECOND' }).waitFor({ timeout: 10_000 });
      await expect(again.getAttribute('class')).resolves.not.toContain('surface-closed');
      // The only problems are the bundle's own 404 and the page's warning that its renderer is not loaded.
      expect(problems.filter((m) => !/status of 404|^A2UI renderer not loaded \(run npm run build:web\)/.test(m))).toEqual([]);
    } finally {
      await p.close();
    }
  }, 90_000);
});
