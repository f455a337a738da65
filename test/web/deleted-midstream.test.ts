/**
 * The conversation is deleted (AAP DELETE /sessions/{id}) while an answer streams: the page
 * stops, and nothing may be left saying the turn works (the turn pill, the transcript's
 * aria-busy, a streaming part's blinking cursor, the status line).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RunningServer } from '../../src/transports/server.js';
import { part, respond } from '../runtime/helpers.js';
import { haveChromium, launchChromium } from './chromium.js';
import { paced, servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/deleted-midstream');

describe.skipIf(!CHROMIUM_OK)('web: the conversation deleted while an answer streams', () => {
  const story = 'Once upon a time there was a very long story that nobody wanted to hear to the end. '.repeat(30);
  const scripted = createScriptedModel({ rules: [{ when: { on: 'user' }, respond: { chunkSize: 8, blocks: [respond([part('response', story)], 'complete')] } }] });
  const runtime = createRuntime({ model: paced(scripted, 30) });
  runtime.registries.actors.register({ name: 'storyteller' });
  let server: RunningServer;
  let closeBrowser: (() => Promise<void>) | undefined;
  let ctx: Awaited<ReturnType<typeof launchChromium>>['ctx'];

  beforeAll(async () => {
    server = await servePage(runtime, [{ name: 'storyteller' }]);
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 900 }));
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
    await runtime.close();
  });

  it('web:demo:deleted-midstream — "When the page stops (a deleted conversation, a refused key) nothing is left marked as working": deleted while the answer streams, the page says the conversation no longer exists, and the turn pill no longer says working, the transcript is not aria-busy, no part keeps its streaming cursor, the status line is empty', async () => {
    const p = await ctx.newPage();
    try {
      await p.goto(server.url + '/');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      await p.getByLabel('Message').fill('tell me a long story');
      await p.keyboard.press('Enter');
      await p.locator('#transcript li.part.streaming').first().waitFor({ timeout: 10_000 });
      await expect(p.locator('#turn-state').getAttribute('data-state')).resolves.toBe('working');
      await expect(p.locator('#transcript-log').getAttribute('aria-busy')).resolves.toBe('true');

      const sessionId = await p.evaluate(() => document.body.dataset.sessionId ?? '');
      expect((await fetch(`${server.url}/sessions/${sessionId}`, { method: 'DELETE' })).status).toBe(204);
      await expect.poll(() => p.locator('#error').textContent(), { timeout: 5_000 }).toMatch(/no longer exists/);
      await expect(p.locator('#conn').getAttribute('data-state')).resolves.toBe('offline');
      await expect(p.locator('#turn-state').getAttribute('data-state')).resolves.toBe('ended');
      await expect(p.locator('#turn-state').textContent()).resolves.not.toMatch(/working/);
      await expect(p.locator('#transcript-log').getAttribute('aria-busy')).resolves.toBe('false');
      expect(await p.locator('#transcript li.streaming').count()).toBe(0);
      await expect(p.locator('#status').textContent()).resolves.toBe('');
      // What had streamed stays readable.
      await expect(p.locator('#transcript li.part .text').first().textContent()).resolves.toMatch(/^Once upon a time/);
    } finally {
      await p.close();
    }
  }, 60_000);
});
