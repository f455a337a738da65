/**
 * Model text as a user reads it on the demo page: line breaks in an answer are kept, and a long
 * unbroken token (a URL) wraps inside the page, in an answer, the user's own message and a data
 * value, instead of widening the page (docs/guide/serve.md, "The demo page").
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { haveChromium } from './chromium.js';
import { pageFixture } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/text-layout');

const LIST = 'Here are your options:\n1. TS205, EUR 42\n2. TS101, EUR 94\n\nReply "book TS205" to book.';
const URL_TOKEN = `https://example.com/${'a'.repeat(400)}`;
const LONG_KEY = `key_${'k'.repeat(120)}`;

function respondRule(text: string, parts: unknown[]) {
  return { when: { on: 'user' as const, text }, respond: { blocks: [{ type: 'tool_use' as const, name: 'respond', input: { turnState: 'complete', parts } }] } };
}

describe.skipIf(!CHROMIUM_OK)('web: text layout on the demo page', () => {
  const runtime = createRuntime({
    model: createScriptedModel({
      rules: [
        respondRule('^list$', [{ text: LIST, metadata: { partType: 'response' } }]),
        respondRule('^https://', [
          { text: `See ${URL_TOKEN} for details.`, metadata: { partType: 'response' } },
          { data: { link: URL_TOKEN, [LONG_KEY]: 'value' }, metadata: { partType: 'domain-data' } },
        ]),
      ],
    }),
  });
  runtime.registries.actors.register({ name: 'desk' });
  const demo = pageFixture(runtime, [{ name: 'desk' }], { width: 900, height: 1000 });

  async function say(text: string): Promise<Page> {
    const p = await demo.ctx.newPage();
    await p.goto(demo.server.url + '/');
    await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
    await p.getByLabel('Message').fill(text);
    await p.keyboard.press('Enter');
    await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 15_000 });
    return p;
  }

  it('web:text:line-breaks — "Model text keeps its line breaks (a list reads as a list)": the answer\'s rendered text (innerText) keeps every line break and blank line, and it spans several lines', async () => {
    const p = await say('list');
    try {
      const text = p.locator('li.part-response .text').last();
      expect(await text.textContent()).toBe(LIST);
      // innerText is the text as rendered: collapsed white space would show as one line.
      expect(await text.innerText()).toBe(LIST);
      const lineHeight = await text.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight));
      expect((await text.boundingBox())!.height).toBeGreaterThan(4 * lineHeight);
    } finally {
      await p.close();
    }
  });

  it('web:text:long-token — "a long unbroken word or URL wraps instead of widening the page": a 420-character URL in the user\'s message, the answer and a data value (and a 124-character data name) stay inside the 900 px page and inside their own items', async () => {
    const p = await say(URL_TOKEN);
    try {
      await p.locator('li.part-domain-data dd').first().waitFor();
      const m = await p.evaluate(() => {
        const inside = (sel: string) => {
          const el = document.querySelector(sel) as HTMLElement;
          const li = el.closest('li')!.getBoundingClientRect();
          const r = el.getBoundingClientRect();
          return { sel, fits: r.left >= li.left - 0.5 && r.right <= li.right + 0.5 && el.scrollWidth <= el.clientWidth + 1 };
        };
        return {
          scroll: document.documentElement.scrollWidth,
          client: document.documentElement.clientWidth,
          items: ['li.user .text', 'li.part-response .text', 'li.part-domain-data dd', 'li.part-domain-data dt'].map(inside),
          transcriptRight: document.getElementById('transcript')!.getBoundingClientRect().right,
        };
      });
      expect(m.client).toBeLessThanOrEqual(900);
      expect(m.scroll).toBeLessThanOrEqual(m.client);
      expect(m.transcriptRight).toBeLessThanOrEqual(m.client);
      expect(m.items).toEqual(m.items.map(({ sel }) => ({ sel, fits: true })));
      // Wrapped, not cut: the whole URL is still there.
      expect(await p.locator('li.user .text').textContent()).toBe(URL_TOKEN);
    } finally {
      await p.close();
    }
  });
});
