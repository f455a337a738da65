/**
 * A2UI surfaces on the demo page keep their layout under the page's Content-Security-Policy:
 * components lay out with style attributes (a Row child's `weight` is its flex grow), which a
 * policy without `style-src-attr` silently drops (docs/concepts/surfaces.md).
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import { haveChromium, launchChromium } from './chromium.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CHROMIUM_OK = haveChromium('test/web/surface-layout');

const CATALOG = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';

describe.skipIf(!CHROMIUM_OK)('web: surface layout under the page CSP', () => {
  let server: RunningServer;
  let ctx: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  const csp: string[] = [];

  beforeAll(async () => {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-web.mjs')], { stdio: 'pipe' });
    const script = travelDeskScript();
    script.rules.unshift({
      when: { on: 'user', text: '^show the layout' },
      respond: {
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: {
              turnState: 'complete',
              parts: [
                {
                  data: {
                    messages: [
                      { version: 'v0.9', createSurface: { surfaceId: 'w1', catalogId: CATALOG } },
                      {
                        version: 'v0.9',
                        updateComponents: {
                          surfaceId: 'w1',
                          components: [
                            { id: 'root', component: 'Row', children: ['narrow', 'wide'] },
                            { id: 'narrow', component: 'Text', text: 'one quarter', weight: 1 },
                            { id: 'wide', component: 'Text', text: 'three quarters', weight: 3 },
                          ],
                        },
                      },
                    ],
                  },
                  metadata: { partType: 'a2ui-surface' },
                },
              ],
            },
          },
        ],
      },
    });
    const runtime = createRuntime({ model: createScriptedModel(script) });
    const desk = createTravelDesk(runtime);
    server = await startServer({
      runtime,
      port: 0,
      transports: [createAapTransport({ runtime, agents: desk.agents }), createStreamsTransport({ runtime, webRoot: join(ROOT, 'web') })],
    });
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 900 }));
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
  });

  it('web:surface:layout — "a Row child\'s weight is its flex grow" survives the page CSP: weights 1 and 3 share the row one to three, and no CSP violation is logged', async () => {
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('console', (m) => {
      if (/Content Security Policy/.test(m.text())) csp.push(m.text());
    });
    await page.goto(server.url + '/');
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
    await page.locator('#message').fill('show the layout');
    await page.keyboard.press('Enter');
    await page.locator('li.part-a2ui-surface.surface').waitFor({ timeout: 15_000 });
    const texts = async () =>
      page.evaluate(() => {
        const all: Element[] = [];
        const walk = (root: Document | ShadowRoot) => {
          for (const e of Array.from(root.querySelectorAll('*'))) {
            all.push(e);
            if (e.shadowRoot) walk(e.shadowRoot);
          }
        };
        walk(document);
        return all
          .filter((e) => e.classList.contains('a2ui-text') && /quarter/.test(e.textContent ?? ''))
          .map((e) => ({ text: (e.textContent ?? '').trim(), grow: getComputedStyle(e).flexGrow, width: e.getBoundingClientRect().width }));
      });
    await expect.poll(async () => (await texts()).length, { timeout: 10_000 }).toBe(2);
    const [narrow, wide] = await texts();
    expect(narrow).toMatchObject({ text: 'one quarter', grow: '1' });
    expect(wide).toMatchObject({ text: 'three quarters', grow: '3' });
    expect(wide!.width).toBeGreaterThan(narrow!.width * 2);
    expect(csp).toEqual([]);
  }, 60_000);
});
