/**
 * A2UI's Text is "simple Markdown" (protocols.md §2): the demo page gives @a2ui/lit's Text a
 * markdown renderer (@a2ui/markdown-it, through @a2ui/lit's markdown context), so `**bold**` and
 * a link render as elements, while what an agent writes stays untrusted (protocols.md §2.4): raw
 * HTML is text, a link is http(s) only, an image (which the page's CSP would refuse) is its alt
 * text. Without a renderer @a2ui/lit warned "[MarkdownDirective] can't render markdown because no
 * markdown renderer is configured" on every page and showed the Markdown literally.
 */
import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { haveChromium } from './chromium.js';
import { pageFixture } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/surface-markdown');
const CATALOG = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';
const TEXTS = {
  rich: 'Some **bold** and a [link](https://example.org/fares?a=1&b=2).',
  html: '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script>',
  unsafe: 'a [js link](javascript:window.__xss=3), a [relative one](/api/agents) and ![an image](https://example.com/p.png)',
};

const runtime = createRuntime({
  model: createScriptedModel({
    rules: [
      {
        when: { on: 'user' },
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
                        { version: 'v0.9', createSurface: { surfaceId: 'md', catalogId: CATALOG } },
                        {
                          version: 'v0.9',
                          updateComponents: {
                            surfaceId: 'md',
                            components: [
                              { id: 'root', component: 'Column', children: Object.keys(TEXTS) },
                              ...Object.entries(TEXTS).map(([id, text]) => ({ id, component: 'Text', text })),
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
      },
    ],
  }),
});
runtime.registries.actors.register({ name: 'desk' });

describe.skipIf(!CHROMIUM_OK)('web: Markdown in a surface Text', () => {
  const fx = pageFixture(runtime, [{ name: 'desk', title: 'Desk', description: 'Markdown' }], { width: 900, height: 900 });

  it('web:surface:markdown — A2UI Text is "simple Markdown" and agent UI is untrusted (protocols.md §2, §2.4): **bold** renders as <strong> and an http(s) link as <a href>, with no console warning (no "[MarkdownDirective] … no markdown renderer") and no CSP violation; `<img src=x onerror=…>` and <script> are shown as text, a javascript: link as text, a relative link as its text, an image as its alt text', async () => {
    const page = await fx.ctx.newPage();
    const problems: string[] = [];
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    await page.goto(fx.server.url + '/');
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
    await page.getByLabel('Message').fill('show me');
    await page.keyboard.press('Enter');
    await page.locator('li.part-a2ui-surface.surface').waitFor({ timeout: 15_000 });
    /** Each Text's rendered HTML (through the shadow roots), and every element tag inside the surface. */
    const shown = () =>
      page.evaluate(() => {
        const all: Element[] = [];
        const walk = (root: ShadowRoot | Element) => {
          for (const e of Array.from(root.querySelectorAll('*'))) {
            all.push(e);
            if (e.shadowRoot) walk(e.shadowRoot);
          }
        };
        walk(document.querySelector('a2ui-surface')!.shadowRoot!);
        return {
          texts: all.filter((e) => e.classList.contains('a2ui-text')).map((e) => ({ text: (e.textContent ?? '').trim(), html: e.innerHTML.replace(/<!--[^>]*-->/g, '') })),
          tags: [...new Set(all.map((e) => e.tagName.toLowerCase()))],
          links: all.filter((e) => e.tagName === 'A').map((a) => ({ href: a.getAttribute('href'), text: a.textContent, rel: a.getAttribute('rel') })),
          xss: (window as unknown as { __xss?: number }).__xss ?? null,
        };
      });
    await expect.poll(async () => (await shown()).tags.includes('strong'), { timeout: 10_000 }).toBe(true);
    const { texts, tags, links, xss } = await shown();
    expect(texts.map((t) => t.text)).toEqual([
      'Some bold and a link.',
      '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script>',
      // markdown-it refuses a javascript: link (it stays Markdown text); the page unwraps the relative one.
      'a [js link](javascript:window.__xss=3), a relative one and an image',
    ]);
    expect(texts[0]!.html).toContain('<strong>bold</strong>');
    expect(links).toEqual([{ href: 'https://example.org/fares?a=1&b=2', text: 'link', rel: 'noopener noreferrer' }]);
    for (const tag of ['img', 'script']) expect(tags).not.toContain(tag);
    expect(xss).toBeNull();
    // Give a late warning (a renderer configured after the first paint) time to show.
    await page.waitForTimeout(300);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
