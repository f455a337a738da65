/**
 * A silently dead connection (a network partition: packets stop, and no close reaches the
 * browser). The page sits behind a loopback TCP proxy that, once frozen, drops every byte both
 * ways and closes nothing. The server sends heartbeat frames every heartbeatMs (200 ms here);
 * the page must notice their absence, keep the unconfirmed message in the box, say what happens
 * to every Enter, and reconnect once the network is back.
 */
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/transports/server.js';
import { haveChromium, launchChromium } from './chromium.js';
import { partitionProxy, type PartitionProxy } from './partition-proxy.js';
import { okDeskRuntime, servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/half-open');

describe.skipIf(!CHROMIUM_OK)('web: a connection that goes silent', () => {
  const runtime = okDeskRuntime();
  let server: RunningServer;
  let proxy: PartitionProxy;
  let ctx: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    server = await servePage(runtime, [{ name: 'desk' }], { heartbeatMs: 200 });
    proxy = await partitionProxy(server.url);
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 900 }));
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    proxy?.close();
    await server?.close();
    await runtime.close();
  });

  it('web:demo:half-open — "A connection that goes silent … is noticed": with heartbeats every 200 ms and the network frozen, the page leaves "live" within seconds, keeps the unconfirmed message in the box with an error, answers every Enter (waiting for a reply, not connected) with a message, and once the network is back reconnects and sends the message once', async () => {
    const p = await ctx.newPage();
    try {
      await p.goto(`${proxy.url}/`);
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const box = p.getByLabel('Message');
      await box.fill('hello');
      await p.keyboard.press('Enter');
      await p.locator('li.part-response').waitFor({ timeout: 10_000 });
      await p.waitForTimeout(800); // a few idle heartbeats

      proxy.frozen.up = proxy.frozen.down = true;
      const frozenAt = Date.now();
      await box.fill('are you there?');
      await p.keyboard.press('Enter');
      await expect.poll(() => p.evaluate(() => (window as unknown as { turnstateDemo: { state: { pendingSend: unknown } } }).turnstateDemo.state.pendingSend !== null)).toBe(true);
      // A second Enter while the first waits for its reply is not dropped in silence.
      await p.keyboard.press('Enter');
      await expect.poll(() => p.locator('#error').textContent()).toMatch(/still waiting for the server's reply/);

      await expect.poll(() => p.locator('#conn').getAttribute('data-state'), { timeout: 5_000 }).not.toBe('live');
      expect(Date.now() - frozenAt).toBeLessThan(5_000);
      await expect.poll(() => p.locator('#error').textContent()).toMatch(/connection dropped before the server confirmed your message/);
      await expect(box.inputValue()).resolves.toBe('are you there?');
      await expect(p.locator('#send').isEnabled()).resolves.toBe(false);
      // Enter while not connected says so.
      await p.keyboard.press('Enter');
      await expect.poll(() => p.locator('#error').textContent()).toMatch(/^Not connected/);
      await expect(box.inputValue()).resolves.toBe('are you there?');

      // The network is back: the page reconnects (resuming), and Enter sends the kept message once.
      proxy.frozen.up = proxy.frozen.down = false;
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
      await p.keyboard.press('Enter');
      await expect.poll(() => p.locator('li.part-response').count(), { timeout: 10_000 }).toBe(2);
      await expect(p.locator('#transcript li.user .text').allTextContents()).resolves.toEqual(['hello', 'are you there?']);
      await expect(box.inputValue()).resolves.toBe('');
      const sessionId = await p.evaluate(() => document.body.dataset.sessionId ?? '');
      const turns = (await runtime.store.readEvents(sessionId, 0)).filter((e) => e.type === 'turn.started');
      expect(turns).toHaveLength(2);
    } finally {
      proxy.frozen.up = proxy.frozen.down = false;
      await p.close();
    }
  }, 60_000);

  it('web:demo:half-open-idle — "the page takes the interval from the gaps between them … After 2.5 intervals without any frame it sends a ping": on an idle page the heartbeat interval is learnt (about 200 ms, not the 15 s default), and a freeze with nothing typed leaves "live" within a few seconds; after it the page is live again and its next message goes through', async () => {
    const p = await ctx.newPage();
    try {
      await p.goto(`${proxy.url}/`);
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const learnt = () => p.evaluate(() => (window as unknown as { turnstateDemo: { state: { heartbeatMs: number } } }).turnstateDemo.state.heartbeatMs);
      await expect.poll(learnt, { timeout: 3_000 }).toBeGreaterThan(100);
      expect(await learnt()).toBeLessThan(500);

      proxy.frozen.up = proxy.frozen.down = true;
      const frozenAt = Date.now();
      await expect.poll(() => p.locator('#conn').getAttribute('data-state'), { timeout: 5_000 }).not.toBe('live');
      expect(Date.now() - frozenAt).toBeLessThan(5_000);
      proxy.frozen.up = proxy.frozen.down = false;
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
      await p.getByLabel('Message').fill('still there?');
      await p.keyboard.press('Enter');
      await p.locator('li.part-response').waitFor({ timeout: 10_000 });
      await expect(p.locator('#transcript li.user .text').allTextContents()).resolves.toEqual(['still there?']);
    } finally {
      proxy.frozen.up = proxy.frozen.down = false;
      await p.close();
    }
  }, 60_000);
});
