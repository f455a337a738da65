/**
 * The conversation is deleted from another channel (AAP DELETE /sessions/{id}) while the page
 * is connected: the page must say so, stop reconnecting, and stop offering Send.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from './chromium.js';
import { okDeskRuntime, pageFixture } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/deleted');

describe.skipIf(!CHROMIUM_OK)('web: the conversation deleted while the page is open', () => {
  const runtime = okDeskRuntime();
  const demo = pageFixture(runtime, [{ name: 'desk' }], { width: 900, height: 900 });
  let upgrades = 0;
  beforeAll(() => {
    demo.server.server.on('upgrade', () => upgrades++);
  });

  it('web:demo:deleted — "stops reconnecting and says so": after DELETE /sessions/{id} the page says the conversation no longer exists, the pill is offline, Send is disabled, the WebSocket is closed, and a message typed then stays in the box, is not sent, and Enter repeats why', async () => {
    const p = await demo.ctx.newPage();
    const framesSent: string[] = [];
    p.on('websocket', (ws) => ws.on('framesent', (f) => framesSent.push(String(f.payload))));
    try {
      await p.goto(demo.server.url + '/');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const box = p.getByLabel('Message');
      await box.fill('hello');
      await p.keyboard.press('Enter');
      await p.locator('li.part-response').waitFor({ timeout: 10_000 });

      const sessionId = await p.evaluate(() => document.body.dataset.sessionId ?? '');
      expect((await fetch(`${demo.server.url}/sessions/${sessionId}`, { method: 'DELETE' })).status).toBe(204);
      await expect.poll(() => p.locator('#error').textContent(), { timeout: 5_000 }).toMatch(/no longer exists/);
      await expect(p.locator('#conn').getAttribute('data-state')).resolves.toBe('offline');
      await expect(p.locator('#send').isEnabled()).resolves.toBe(false);
      await expect(p.evaluate(() => sessionStorage.getItem('turnstate.demo.session'))).resolves.toBeNull();
      // The connection is closed by the page, not left open (nor re-opened).
      await expect.poll(() => p.evaluate(() => (window as unknown as { turnstateDemo: { state: { ws: unknown } } }).turnstateDemo.state.ws === null)).toBe(true);

      const [upgraded, sent] = [upgrades, framesSent.length];
      await p.evaluate(() => {
        document.getElementById('error')!.hidden = true;
      });
      await box.fill('hello again');
      await p.keyboard.press('Enter');
      await expect.poll(() => p.locator('#error').isVisible()).toBe(true);
      await expect(p.locator('#error').textContent()).resolves.toMatch(/no longer exists/);
      await expect(box.inputValue()).resolves.toBe('hello again');
      await p.waitForTimeout(1_500);
      expect(upgrades).toBe(upgraded);
      expect(framesSent.slice(sent)).toEqual([]);
      await expect(p.locator('#conn').getAttribute('data-state')).resolves.toBe('offline');
    } finally {
      await p.close();
    }
  }, 60_000);
});
