/**
 * Messages waiting behind a running turn have no event in the session log until their turns
 * start; the WebSocket `subscribed` reply names them (`queued`). The page must show them as
 * queued after a reload and in a second tab, and a message whose `sent` reply a dropped
 * connection lost, found among them after the reconnect, is confirmed: it leaves the box, so
 * pressing Enter cannot run it twice.
 *
 * The page of the second test sits behind a loopback TCP proxy that can drop what the server
 * sends while passing on what the page sends (the `sent` reply is lost, the `send` arrives).
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RunningServer } from '../../src/transports/server.js';
import { haveChromium, launchChromium } from './chromium.js';
import { partitionProxy, type PartitionProxy } from './partition-proxy.js';
import { servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/queued-subscribe');

describe.skipIf(!CHROMIUM_OK)('web: messages queued behind the running turn, seen when the page subscribes', () => {
  const runtime = createRuntime({ model: createScriptedModel(travelDeskScript()) });
  const desk = createTravelDesk(runtime);
  let server: RunningServer;
  /** In the second test its `down` way is frozen: bytes from the server to the page are dropped. */
  let proxy: PartitionProxy;
  let ctx: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    server = await servePage(runtime, desk.agents, { heartbeatMs: 200 });
    proxy = await partitionProxy(server.url);
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 1100 }));
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    proxy?.close();
    await server?.close();
    await runtime.close();
  });

  const sessionOf = (p: Page) => p.evaluate(() => document.body.dataset.sessionId ?? '');
  const users = (p: Page) => p.$$eval('#transcript li.user', (lis) => lis.map((li) => `${li.classList.contains('queued') ? 'queued:' : ''}${li.querySelector('.text')?.textContent}`));
  const startedTexts = async (sessionId: string) => (await runtime.store.readEvents(sessionId, 0)).flatMap((e) => (e.type === 'turn.started' ? [e.input.text] : []));
  const approve = async (sessionId: string) => {
    const [pending] = await runtime.store.listApprovals({ sessionId, status: 'pending' });
    await runtime.answerApproval(pending!.approvalId, { approved: true }, { userId: 'ops' }, 'test');
  };

  it('web:demo:queued-subscribe — "the messages waiting when the page subscribes (the `subscribed` reply names them) show so too, in every tab and after a reload, each once": a message queued behind a turn waiting for approval is shown queued after a reload, after the log, and in a second tab; once its turn starts it is shown once, unmarked, in both', async () => {
    const p = await ctx.newPage();
    let p2: Page | undefined;
    try {
      await p.goto(server.url + '/');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const box = p.getByLabel('Message');
      await box.fill('book TS101');
      await p.keyboard.press('Enter');
      await p.locator('#turn-state[data-state="suspended"]').waitFor({ timeout: 15_000 });
      const later = 'actually, what about flights to Corfu?';
      await box.fill(later);
      await p.keyboard.press('Enter');
      await p.locator('#transcript li.user.queued').waitFor({ timeout: 5_000 });
      const sessionId = await sessionOf(p);

      // Reloaded: the log has nothing of it yet, the subscribed reply has; shown after the replayed log.
      await p.reload();
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      await p.locator('#transcript li.user.queued').waitFor({ timeout: 5_000 });
      await p.locator('#turn-state[data-state="suspended"]').waitFor({ timeout: 5_000 });
      await expect(p.locator('#transcript li.user.queued .queued-note').textContent()).resolves.toBe('Queued: waits for the current turn');
      expect(await users(p)).toEqual(['book TS101', `queued:${later}`]);
      await expect(p.$eval('#transcript', (ul) => ul.lastElementChild?.classList.contains('queued'))).resolves.toBe(true);

      // A second tab on the same conversation (as "Duplicate tab" gives) shows it too.
      p2 = await ctx.newPage();
      await p2.addInitScript((s) => sessionStorage.setItem('turnstate.demo.session', s), sessionId);
      await p2.goto(server.url + '/');
      await p2.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      await p2.locator('#transcript li.user.queued').waitFor({ timeout: 5_000 });
      expect(await users(p2)).toEqual(['book TS101', `queued:${later}`]);

      // Its turn starts: both tabs show it once, in its place, no longer marked.
      await approve(sessionId);
      await expect.poll(() => startedTexts(sessionId), { timeout: 20_000 }).toEqual(['book TS101', later]);
      for (const tab of [p, p2]) {
        await expect.poll(() => users(tab), { timeout: 10_000 }).toEqual(['book TS101', later]);
        expect(await tab.locator('#transcript li.queued, #transcript .queued-note').count()).toBe(0);
      }
    } finally {
      await p2?.close();
      await p.close();
    }
  }, 60_000);

  it('web:demo:queued-unconfirmed — "A message whose reply a dropped connection lost is confirmed … by its text among the queued messages a new subscription names: the box is cleared then, so Enter cannot send it a second time": the server queues a message whose `sent` reply is lost; after the reconnect the box is empty, the error gone, the message shown queued, and its turn runs once', async () => {
    const p = await ctx.newPage();
    try {
      await p.goto(`${proxy.url}/`);
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const box = p.getByLabel('Message');
      await box.fill('book TS101');
      await p.keyboard.press('Enter');
      await p.locator('#turn-state[data-state="suspended"]').waitFor({ timeout: 15_000 });
      await p.waitForTimeout(800); // a few idle heartbeats: the page learns their interval
      const sessionId = await sessionOf(p);

      // The send reaches the server (queued behind the turn); its `sent` reply does not reach the page.
      proxy.frozen.down = true;
      const text = 'hello there';
      await box.fill(text);
      await p.keyboard.press('Enter');
      const session = (await runtime.session(sessionId))!;
      await expect.poll(async () => (await session.snapshot()).queuedMessages.map((q) => q.text), { timeout: 5_000 }).toEqual([text]);
      await expect.poll(() => p.locator('#error').textContent(), { timeout: 10_000 }).toMatch(/connection dropped before the server confirmed your message/);
      await expect(box.inputValue()).resolves.toBe(text);

      // Back: the new subscription names it queued, so it was accepted: the box lets it go.
      proxy.frozen.down = false;
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      await p.locator('#transcript li.user.queued', { hasText: text }).waitFor({ timeout: 5_000 });
      await expect(box.inputValue()).resolves.toBe('');
      await expect(p.locator('#error').isVisible()).resolves.toBe(false);
      await expect(p.evaluate(() => (window as unknown as { turnstateDemo: { state: { unconfirmedText: string } } }).turnstateDemo.state.unconfirmedText)).resolves.toBe('');
      // Enter now sends nothing (the box is empty): the message is not queued a second time.
      await p.keyboard.press('Enter');
      await p.waitForTimeout(300);
      expect((await session.snapshot()).queuedMessages.map((q) => q.text)).toEqual([text]);

      await approve(sessionId);
      await expect.poll(() => startedTexts(sessionId), { timeout: 20_000 }).toEqual(['book TS101', text]);
      await expect.poll(() => users(p), { timeout: 10_000 }).toEqual(['book TS101', text]);
      await p.waitForTimeout(300);
      expect(await startedTexts(sessionId)).toEqual(['book TS101', text]);
    } finally {
      proxy.frozen.down = false;
      await p.close();
    }
  }, 60_000);
});
