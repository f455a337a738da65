/**
 * The demo page with an agent whose sessions interrupt (double-texting "interrupt"): a message
 * sent while a turn runs joins that turn (`message.joined`, no `turn.started` of its own), and the
 * page must still show it where it was said.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RunningServer } from '../../src/transports/server.js';
import { answer, part, respond } from '../runtime/helpers.js';
import { haveChromium, launchChromium } from './chromium.js';
import { paced, servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/double-texting');

describe.skipIf(!CHROMIUM_OK)('web: a message that joins the running turn', () => {
  const story = 'Once upon a time there was a very long story that nobody wanted to hear to the end. '.repeat(6);
  const scripted = createScriptedModel({
    rules: [
      { when: { on: 'user', text: 'stop' }, respond: answer(respond([part('response', 'Stopped, as you asked.')], 'complete')) },
      { when: { on: 'user' }, respond: { chunkSize: 8, blocks: [respond([part('response', story)], 'complete')] } },
    ],
  });
  const runtime = createRuntime({ model: paced(scripted, 30) });
  runtime.registries.actors.register({ name: 'storyteller' });
  let server: RunningServer;
  let closeBrowser: (() => Promise<void>) | undefined;
  let ctx: Awaited<ReturnType<typeof launchChromium>>['ctx'];

  beforeAll(async () => {
    server = await servePage(runtime, [{ name: 'storyteller', title: 'Stories', doubleTexting: 'interrupt' }]);
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 900 }));
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
    await runtime.close();
  });

  it('web:demo:joined — "a message that joined the running turn is taken in by the turn\'s next model call": the page shows it as the user\'s, after the first, and clears the box', async () => {
    const page = await ctx.newPage();
    await page.goto(server.url + '/');
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await page.getByLabel('Message').fill('tell me a long story');
    await page.keyboard.press('Enter');
    // The story is streaming: the second message arrives now and joins the turn.
    await page.locator('#transcript li.part.streaming').first().waitFor({ timeout: 10_000 });
    await page.getByLabel('Message').fill('stop, actually');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('li.part-response .text').last().textContent(), { timeout: 20_000 }).toBe('Stopped, as you asked.');

    const id = await page.evaluate(() => document.body.dataset.sessionId ?? '');
    const events = await runtime.store.readEvents(id, 0);
    expect(events.filter((e) => e.type === 'turn.started')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'message.joined').map((e) => (e.type === 'message.joined' ? e.input.text : ''))).toEqual(['stop, actually']);
    const users = await page.$$eval('#transcript li.user .text', (els) => els.map((e) => e.textContent));
    expect(users).toEqual(['tell me a long story', 'stop, actually']);
    // Shown where it was said: after the first message, before the answer to it.
    const order = await page.$$eval('#transcript li', (lis) => lis.map((li) => (li.classList.contains('user') ? `user:${li.querySelector('.text')?.textContent}` : li.className)));
    expect(order.indexOf('user:stop, actually')).toBeLessThan(order.findIndex((c) => c.includes('part-response') && !c.includes('streaming')));
    expect(await page.getByLabel('Message').inputValue()).toBe('');
    // A reload replays the log: the joined message is shown once.
    await page.reload();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await expect.poll(() => page.$$eval('#transcript li.user .text', (els) => els.map((e) => e.textContent)), { timeout: 10_000 }).toEqual(['tell me a long story', 'stop, actually']);
    await page.close();
  }, 60_000);
});
