/**
 * A message the server never answers (no `sent`, no error) while the connection itself stays
 * alive: the page must not wait forever with the message in limbo and every later Enter ignored.
 */
import { describe, expect, it } from 'vitest';
import { haveChromium } from './chromium.js';
import { okDeskRuntime, pageFixture } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/send-timeout');

describe.skipIf(!CHROMIUM_OK)('web: a message with no reply', () => {
  const runtime = okDeskRuntime();
  const demo = pageFixture(runtime, [{ name: 'desk' }], { width: 900, height: 900 });

  it('web:demo:send-timeout — "A message with no reply within 10 s stays in the box with an error": a send the server never sees gets an error after 10 s with the text still in the box, and the next Enter sends it (once)', async () => {
    const p = await demo.ctx.newPage();
    const sends: unknown[] = [];
    let swallowNext = true;
    try {
      await p.clock.install();
      await p.routeWebSocket(/\/ws/, (ws) => {
        const upstream = ws.connectToServer();
        ws.onMessage((m) => {
          const f = JSON.parse(String(m)) as { type: string };
          if (f.type === 'send') {
            sends.push(f);
            if (swallowNext) {
              swallowNext = false;
              return; // lost on the way: the connection stays up and answers pings
            }
          }
          upstream.send(m);
        });
      });
      await p.goto(demo.server.url + '/');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const box = p.getByLabel('Message');
      await box.fill('hello');
      await p.keyboard.press('Enter');
      await expect.poll(() => sends.length).toBe(1);
      await p.waitForTimeout(300); // the ping sent with it is answered: the connection is alive
      await p.clock.fastForward(11_000);
      await expect.poll(() => p.locator('#error').textContent()).toMatch(/did not confirm your message/);
      await expect(box.inputValue()).resolves.toBe('hello');
      await expect(p.locator('#conn').getAttribute('data-state')).resolves.toBe('live');

      await p.keyboard.press('Enter');
      await p.locator('li.part-response').waitFor({ timeout: 10_000 });
      await expect(p.locator('#transcript li.user .text').allTextContents()).resolves.toEqual(['hello']);
      await expect.poll(() => box.inputValue()).toBe('');
      expect(sends).toHaveLength(2);
    } finally {
      await p.close();
    }
  }, 60_000);
});
