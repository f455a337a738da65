/**
 * A message sent while the turn waits for an approval (the travel desk's default double-texting
 * policy, `queue`): the server accepts it behind the turn (`sent`, queued: true) and the box is
 * cleared, so the page must show it at once, marked as queued, and put it where its turn starts.
 */
import { describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { haveChromium } from './chromium.js';
import { pageFixture } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/queued');

describe.skipIf(!CHROMIUM_OK)('web: a message queued behind a suspended turn', () => {
  const runtime = createRuntime({ model: createScriptedModel(travelDeskScript()) });
  const desk = createTravelDesk(runtime);
  const demo = pageFixture(runtime, desk.agents, { width: 900, height: 1100 });

  it('web:demo:queued — "A message accepted while a turn runs or waits for an approval … shows at once as the user\'s, marked": a message sent while book_flight waits for approval is shown queued (the status line says the turn waits for an approval), and once approved it moves, unmarked and once, to where its own turn starts', async () => {
    const p = await demo.ctx.newPage();
    const sent: { type: string; queued?: boolean; turnId?: string }[] = [];
    p.on('websocket', (ws) =>
      ws.on('framereceived', (f) => {
        const frame = JSON.parse(String(f.payload)) as (typeof sent)[number];
        if (frame.type === 'sent') sent.push(frame);
      }),
    );
    try {
      await p.goto(demo.server.url + '/');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      const box = p.getByLabel('Message');
      await box.fill('book TS101');
      await p.keyboard.press('Enter');
      await p.locator('#turn-state[data-state="suspended"]').waitFor({ timeout: 15_000 });
      await expect.poll(() => p.locator('#status').textContent()).toBe('Waiting for an approval to run book_flight.');

      const later = 'actually, what about flights to Corfu?';
      await box.fill(later);
      await p.keyboard.press('Enter');
      await expect.poll(() => sent.length).toBe(2);
      expect(sent[1]!.queued).toBe(true);
      const queued = p.locator('#transcript li.user.queued');
      await queued.waitFor({ timeout: 5_000 });
      await expect(queued.locator('.text').textContent()).resolves.toBe(later);
      await expect(queued.locator('.queued-note').textContent()).resolves.toBe('Queued: waits for the current turn');
      await expect(box.inputValue()).resolves.toBe('');
      await expect(p.locator('#error').isVisible()).resolves.toBe(false);
      await expect(p.locator('#status').textContent()).resolves.toBe('Waiting for an approval to run book_flight.');

      // Approved: the booking runs, then the queued message's own turn starts.
      const approve = p.locator('li.part-a2ui-surface.surface').last().getByRole('button', { name: 'Approve' });
      await approve.waitFor({ timeout: 10_000 });
      await approve.click();
      const sessionId = await p.evaluate(() => document.body.dataset.sessionId ?? '');
      const started = async () => (await runtime.store.readEvents(sessionId, 0)).filter((e) => e.type === 'turn.started').map((e) => e.turnId);
      await expect.poll(started, { timeout: 20_000 }).toHaveLength(2);
      expect((await started())[1]).toBe(sent[1]!.turnId);
      await p.locator(`#transcript li.user:not(.queued)`, { hasText: later }).waitFor({ timeout: 10_000 });
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      expect(await p.locator('#transcript li.queued, #transcript .queued-note').count()).toBe(0);
      expect(await p.locator('#transcript li.user .text').allTextContents()).toEqual(['book TS101', later]);
      // In its place: after the booking's answer, before the answer to it.
      const order = await p.$$eval('#transcript li', (lis) =>
        lis.map((li) => (li.classList.contains('user') ? `user:${li.querySelector('.text')?.textContent}` : (li.querySelector('.text')?.textContent ?? ''))),
      );
      const booked = order.findIndex((t) => /^Booked/.test(t));
      expect(booked).toBeGreaterThan(-1);
      expect(order.indexOf(`user:${later}`)).toBeGreaterThan(booked);
    } finally {
      await p.close();
    }
  }, 60_000);
});
