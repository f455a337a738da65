/**
 * The demo page in Debian's Chromium (playwright-core) against `turnstate serve`'s composition:
 * the travel desk on the real runtime, AAP for session creation, the streams transport for the
 * page and its WebSocket, all over 127.0.0.1.
 */
import { mkdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join, resolve } from 'node:path';
import type { BrowserContext, Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import type { Authenticate } from '../../src/transports/types.js';
import type { Part, SessionEvent } from '../../src/types.js';
import { haveChromium, launchChromium } from './chromium.js';
import { paced, servePage } from './page-server.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test-artifacts');

const CHROMIUM_OK = haveChromium('test/web/demo');

describe.skipIf(!CHROMIUM_OK)('web: the travel desk demo page in Chromium', () => {
  let server: RunningServer;
  let ctx: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  const sockets = new Set<Socket>();
  // The travel desk, plus one exchange where a streamed answer is rejected and taken back.
  const hasty = 'A hasty answer that I take back.';
  const retractable = (text: string, turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState } });
  const script = travelDeskScript();
  script.rules.unshift(
    { id: 'hasty', when: { on: 'user', text: 'second thoughts' }, respond: { chunkSize: 6, blocks: [retractable(hasty, 'no-such-state')] } },
    { id: 'considered', when: { on: 'rejection' }, respond: { blocks: [retractable('A considered answer.', 'complete')] } },
  );
  const runtime = createRuntime({ model: paced(createScriptedModel(script), 25) });
  const desk = createTravelDesk(runtime);

  const killConnections = (): number => {
    const n = sockets.size;
    for (const s of sockets) s.destroy();
    return n;
  };

  beforeAll(async () => {
    // The page's A2UI renderer is a generated bundle (npm run build:web), built for this run.
    server = await servePage(runtime, desk.agents);
    server.server.on('connection', (s: Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 1100 }));
    page = ctx.pages()[0] ?? (await ctx.newPage());
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
  });

  const sessionId = (): Promise<string> => page.evaluate(() => document.body.dataset.sessionId ?? '');
  const log = async (): Promise<SessionEvent[]> => runtime.store.readEvents(await sessionId(), 0);
  const renderLog = (): Promise<{ key: string; partType: string | null; seq: number }[]> =>
    page.evaluate(() => (window as unknown as { turnstateDemo: { log: { key: string; partType: string | null; seq: number }[] } }).turnstateDemo.log);

  /** The page shows every part of the session's log exactly once, with its exact final text. */
  async function expectTranscriptMatchesLog(): Promise<void> {
    const events = await log();
    // Streamed parts, plus parts that only the settled envelope carries (the turn's assembled domain data).
    const parts: { key: string; part: Part }[] = [];
    const sig = (p: Part): string => `${p.metadata.partType}/${p.text ?? JSON.stringify(p.data)}`;
    let turnSigs = new Set<string>();
    for (const e of events) {
      if (e.type === 'turn.started') turnSigs = new Set();
      if (e.type === 'part.received' && !e.part.metadata.partType.startsWith('approval-')) {
        parts.push({ key: `${e.callId}/${e.index}`, part: e.part });
        turnSigs.add(sig(e.part));
      }
      if (e.type === 'envelope.settled') {
        e.envelope.parts.forEach((p, i) => {
          if (!turnSigs.has(sig(p)) && !p.metadata.partType.startsWith('approval-')) parts.push({ key: `${e.turnId}/envelope/${i}`, part: p });
        });
      }
    }
    const shown = await page.$$eval('#transcript li.part', (lis) => lis.map((li) => ({ key: (li as HTMLElement).dataset.key, type: (li as HTMLElement).dataset.partType, text: li.querySelector('.text')?.textContent ?? '' })));
    expect(shown.map((s) => s.key)).toEqual(parts.map((p) => p.key));
    for (const [i, { part }] of parts.entries()) {
      expect(shown[i]!.type).toBe(part.metadata.partType);
      if (part.text !== undefined) expect(shown[i]!.text).toBe(part.text);
    }
    const users = await page.$$eval('#transcript li.user .text', (els) => els.map((e) => e.textContent));
    expect(users).toEqual(events.filter((e) => e.type === 'turn.started').map((e) => (e.type === 'turn.started' ? e.input.text : '')));
  }

  it('web:demo:turn — send "find flights to Corfu": ack before the response, the response streams, flights as a table; a killed connection mid-turn resumes without losing or repeating a part', async () => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      // Warnings too: @a2ui/lit's "[MarkdownDirective] … no markdown renderer" was one on every surface.
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
    });
    const res = await page.goto(server.url + '/');
    expect(res?.headers()['content-type']).toBe('text/html; charset=utf-8');
    await page.locator('#conn[data-state="live"]').waitFor();
    // Accessible structure: a live log for the transcript, a labelled input, named buttons.
    const transcript = page.getByRole('log');
    await expect(transcript.getAttribute('aria-live')).resolves.toBe('polite');
    await expect(page.getByRole('button', { name: 'Send' }).isEnabled()).resolves.toBe(true);

    // Keyboard only: focus the labelled input, type, press Enter.
    await page.getByLabel('Message').focus();
    await page.keyboard.type('find flights to Corfu');
    await page.keyboard.press('Enter');

    // The ack shows while the turn works; then the response starts streaming.
    await page.locator('li.part-ack').first().waitFor();
    expect(await page.locator('li.part-response').count()).toBe(0);
    const streaming = page.locator('li.part.streaming');
    await streaming.first().waitFor({ timeout: 15_000 });

    // Kill every TCP connection mid-turn; the page reconnects and resumes from its last seq.
    const seqBeforeKill = await page.evaluate(() => (window as unknown as { turnstateDemo: { state: { lastSeq: number } } }).turnstateDemo.state.lastSeq);
    expect(killConnections()).toBeGreaterThan(0);
    await page.locator('#conn[data-state="reconnecting"]').waitFor({ timeout: 5_000 });
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await page.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
    const lastSeq = (await log()).at(-1)!.seq;
    expect(seqBeforeKill).toBeLessThan(lastSeq);

    const order = await renderLog();
    const firstAck = order.findIndex((x) => x.partType === 'ack');
    const firstResponse = order.findIndex((x) => x.partType === 'response');
    expect(firstAck).toBeGreaterThanOrEqual(0);
    expect(firstAck).toBeLessThan(firstResponse);
    expect(new Set(order.map((x) => x.key)).size).toBe(order.length);
    await expectTranscriptMatchesLog();

    const table = page.locator('li.part-domain-data table');
    await expect(table.locator('caption').textContent()).resolves.toBe('flights');
    const ids = await table.locator('tbody tr td:first-child').allTextContents();
    expect(ids).toEqual(['TS205', 'TS101']);
    // The flights surface (template kind "flights") is rendered by @a2ui/lit, one row per flight.
    const flightsView = page.locator('li.part-a2ui-surface.surface').first();
    for (const want of ['2 flights found', 'TS205', 'TS101', '2026-06-12 07:40 UTC']) await flightsView.getByText(want, { exact: true }).waitFor({ timeout: 10_000 });
    expect(errors.filter((e) => !/WebSocket|ERR_CONNECTION|net::/.test(e))).toEqual([]);
  }, 60_000);

  it('web:demo:approve — "book TS101" asks for approval; after a killed connection the card and its A2UI surface are shown once; the surface shows the flight, and its Approve button answers the approval over the WebSocket: the turn resumes and the booking runs', async () => {
    await page.getByLabel('Message').fill('book TS101');
    await page.getByRole('button', { name: 'Send' }).click();
    const card = page.locator('li.approval');
    await card.waitFor({ timeout: 15_000 });
    await page.locator('#turn-state[data-state="suspended"]').waitFor();

    killConnections();
    await page.locator('#conn[data-state="reconnecting"]').waitFor({ timeout: 5_000 });
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    expect(await card.count()).toBe(1);

    // The booking surface (template "approval:book_flight"), rendered by @a2ui/lit: the flight and the two answers.
    const surface = page.locator('li.part-a2ui-surface.surface').last();
    await surface.locator('a2ui-surface').waitFor({ timeout: 10_000 });
    expect(await page.locator('li.part-a2ui-surface').count()).toBe(2);
    const approve = surface.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    await expect(surface.getByRole('button', { name: 'Deny' }).isVisible()).resolves.toBe(true);
    for (const want of ['Book flight TS101?', 'Departs', '2026-06-12 11:15 UTC', '94', 'EUR']) await surface.getByText(want, { exact: true }).waitFor();
    // The surface carries the buttons: the plain card's own are hidden, so there is one Approve on the page.
    expect(await card.locator('.actions').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(1);
    mkdirSync(ARTIFACTS, { recursive: true });
    // Tall enough that the sticky composer does not cover the surface.
    await page.setViewportSize({ width: 900, height: (await page.evaluate(() => document.documentElement.scrollHeight)) + 200 });
    await surface.screenshot({ path: join(ARTIFACTS, 'demo-approval-surface.png') });
    expect(desk.bookings.size).toBe(0);

    // Keyboard: focus Approve and press Enter.
    await approve.focus();
    await page.keyboard.press('Enter');
    await page.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
    expect([...desk.bookings.values()].map((b) => b.flightId)).toEqual(['TS101']);
    await expect(surface.getAttribute('class')).resolves.toContain('answered');
    await expect(card.locator('.resolution').textContent()).resolves.toMatch(/^Approved by local \(websocket\)|^Approved by anonymous \(websocket\)/);
    const booked = page.locator('li.part-response').last();
    await expect(booked.locator('.text').textContent()).resolves.toMatch(/^Booked: your reference is BK\d{4}\.$/);
    await expectTranscriptMatchesLog();

    const events = await log();
    const resolved = events.find((e) => e.type === 'approval.resolved');
    expect(resolved?.type === 'approval.resolved' && resolved.via).toBe('websocket');
    expect(resolved?.type === 'approval.resolved' && resolved.decision).toBe('approved');
    const bookResult = events.find((e) => e.type === 'tool.result' && e.tool === 'book_flight');
    expect(bookResult?.type === 'tool.result' && bookResult.isError).toBe(false);

    mkdirSync(ARTIFACTS, { recursive: true });
    // Tall enough for the whole conversation, so the sticky composer sits below it.
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    await page.setViewportSize({ width: 900, height: height + 40 });
    await page.screenshot({ path: join(ARTIFACTS, 'demo-finished-turn.png') });
  }, 60_000);

  it('web:demo:retracted — a streamed answer that is rejected is shown while it streams, then taken back at its part.retracted', async () => {
    const settled = async () => (await log()).filter((e) => e.type === 'turn.settled').length;
    const before = await settled();
    await page.getByLabel('Message').fill('second thoughts');
    await page.getByRole('button', { name: 'Send' }).click();
    // The previous turn also ended "complete": wait for this turn's settlement first.
    await expect.poll(settled, { timeout: 20_000 }).toBe(before + 1);
    await page.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
    const retracted = (await log()).filter((e) => e.type === 'part.retracted');
    expect(retracted).toHaveLength(1);
    const key = `${retracted[0]!.type === 'part.retracted' ? retracted[0]!.callId : ''}/0`;
    // It was on the page while it streamed ...
    expect((await renderLog()).some((r) => r.key === key)).toBe(true);
    // ... and is gone now: the transcript is exactly the log's parts.
    expect(await page.locator(`#transcript li.part[data-key="${key}"]`).count()).toBe(0);
    await expect(page.locator('li.part-response').last().locator('.text').textContent()).resolves.toBe('A considered answer.');
    expect(await page.locator('#transcript').textContent()).not.toContain(hasty.slice(0, 12));
    await expectTranscriptMatchesLog();
  }, 60_000);

  /* ---------------------------------------------------------------- each in a tab (a session) of its own */

  /** A new tab on `url` (a new session: sessionStorage is per tab), live; `setup` runs before it loads. */
  async function openTab(setup?: (p: Page) => Promise<unknown>, url = server.url + '/'): Promise<Page> {
    const p = await ctx.newPage();
    await setup?.(p);
    await p.goto(url);
    await p.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    return p;
  }
  const say = async (p: Page, text: string): Promise<void> => {
    await p.getByLabel('Message').fill(text);
    await p.keyboard.press('Enter');
  };
  /** Waits for the next turn of `p`'s session to settle (the previous one may also have ended "complete"). */
  async function sayAndSettle(p: Page, text: string, finalizedBy = 'complete'): Promise<void> {
    const id = await p.evaluate(() => document.body.dataset.sessionId ?? '');
    const settled = async () => (await runtime.store.readEvents(id, 0)).filter((e) => e.type === 'turn.settled' || (e.type === 'turnState.changed' && e.to === 'suspended')).length;
    const before = await settled();
    await say(p, text);
    await expect.poll(settled, { timeout: 20_000 }).toBeGreaterThan(before);
    await p.locator(`#turn-state[data-state="${finalizedBy}"]`).waitFor({ timeout: 20_000 });
  }
  const shownError = (p: Page): Promise<string | null> => p.evaluate(() => (document.getElementById('error')!.hidden ? null : document.getElementById('error')!.textContent));
  /** Passes the page's WebSocket through; `onClientFrame` may take a frame (return true) instead. */
  async function relay(p: Page, onClientFrame: (f: Record<string, unknown>, ws: WebSocketRoute, server: WebSocketRoute) => boolean = () => false): Promise<void> {
    await p.routeWebSocket(/\/ws/, (ws) => {
      const upstream = ws.connectToServer();
      ws.onMessage((m) => {
        if (!onClientFrame(JSON.parse(String(m)) as Record<string, unknown>, ws, upstream)) upstream.send(m);
      });
    });
  }

  it('web:demo:no-bundle — "Without the bundle the page shows a surface\'s data as a table": the surfaces show their data model (not raw A2UI messages), and the approval card keeps visible Approve and Deny buttons that answer it', async () => {
    const p = await openTab((t) => t.route('**/dist/surfaces.js', (r) => r.fulfill({ status: 404, body: 'not built' })));
    try {
      await sayAndSettle(p, 'find flights to Corfu');
      // The flights surface as data: its updateDataModel value, a table of the flights.
      const flightsView = p.locator('li.part-a2ui-surface').first();
      await flightsView.locator('table caption', { hasText: 'flights' }).waitFor();
      expect(await flightsView.locator('tbody tr td:first-child').allTextContents()).toEqual(['TS205', 'TS101']);
      await sayAndSettle(p, 'book TS101', 'suspended');
      const card = p.locator('li.approval');
      const bookingView = p.locator('li.part-a2ui-surface').last();
      await bookingView.getByText('TS101', { exact: true }).waitFor();
      for (const raw of ['createSurface', 'updateComponents', 'updateDataModel', 'v0.9']) expect(await bookingView.textContent()).not.toContain(raw);
      await expect(bookingView.locator('dd', { hasText: '2026-06-12 11:15 UTC' }).count()).resolves.toBe(1);
      // No renderer, so no surface buttons: the card's own are the ones to use.
      await expect(card.getAttribute('class')).resolves.not.toContain('has-surface');
      await expect(card.getByRole('button', { name: 'Approve' }).isVisible()).resolves.toBe(true);
      await expect(card.getByRole('button', { name: 'Deny' }).isVisible()).resolves.toBe(true);
      const booked = desk.bookings.size;
      await card.getByRole('button', { name: 'Approve' }).click();
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      await expect(card.locator('.resolution').textContent()).resolves.toMatch(/^Approved by /);
      expect(desk.bookings.size).toBe(booked + 1);
    } finally {
      await p.close();
    }
  }, 90_000);

  it('web:demo:long-message — "nothing typed is lost": a message over the 64 KiB frame limit stays in the box with the limit named and is not sent; a send the server refuses (session.queue_full) keeps its text; a 1009 close says the message was too large; the box is cleared only by the server\'s "sent" for that message', async () => {
    const sends: Record<string, unknown>[] = [];
    let refuseNext = false;
    let closeNext = false;
    const p = await openTab((t) =>
      relay(t, (f, ws, upstream) => {
        if (f.type !== 'send') return false;
        sends.push(f);
        if (refuseNext) {
          refuseNext = false;
          ws.send(JSON.stringify({ type: 'error', code: 'session.queue_full', message: 'the session already has 8 messages waiting', ref: f.ref }));
          return true;
        }
        if (closeNext) {
          closeNext = false;
          void ws.close({ code: 1009, reason: 'too big' });
          void upstream.close();
          return true;
        }
        return false;
      }),
    );
    try {
      const box = p.getByLabel('Message');
      for (const size of [70 * 1024, 1100 * 1024]) {
        await box.fill('x'.repeat(size));
        await p.getByRole('button', { name: 'Send' }).click();
        await expect.poll(() => shownError(p)).toMatch(/too long.*65,536 bytes/);
        expect((await box.inputValue()).length).toBe(size);
        await expect(p.locator('#conn').getAttribute('data-state')).resolves.toBe('live');
      }
      expect(sends).toHaveLength(0);

      // Refused by the server: the text stays.
      refuseNext = true;
      await box.fill('find flights to Corfu');
      await p.keyboard.press('Enter');
      await expect.poll(() => shownError(p)).toMatch(/not sent: the session already has 8 messages waiting/);
      await expect(box.inputValue()).resolves.toBe('find flights to Corfu');

      // Closed with 1009: said so, the text stays, and the page reconnects.
      closeNext = true;
      await p.keyboard.press('Enter');
      await expect.poll(() => shownError(p)).toMatch(/too large/);
      await expect(box.inputValue()).resolves.toBe('find flights to Corfu');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
      expect(await p.locator('#transcript li.user').count()).toBe(0);

      // Accepted: the box is cleared and the message shows.
      await p.keyboard.press('Enter');
      await p.locator('#transcript li.user', { hasText: 'find flights to Corfu' }).waitFor({ timeout: 10_000 });
      await expect.poll(() => box.inputValue()).toBe('');
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      expect(sends).toHaveLength(3);
    } finally {
      await p.close();
    }
  }, 90_000);

  describe('approval answers', () => {
    let p: Page;
    const answers: Record<string, unknown>[] = [];
    let dropNextAnswer = false;
    afterAll(async () => p?.close());

    it('web:demo:double-click — "ignore repeat clicks once an answer was sent": a double-click on the surface\'s Approve sends one answer and shows no "already resolved" error', async () => {
      p = await openTab((t) =>
        relay(t, (f, ws, upstream) => {
          const answer = f.type === 'approve' || f.type === 'deny' || (f.type === 'action' && ['approve', 'deny'].includes(String((f.action as { name?: string }).name)));
          if (!answer) return false;
          answers.push(f);
          if (!dropNextAnswer) return false;
          // Lost in a connection drop: it never reaches the server.
          dropNextAnswer = false;
          void ws.close({ code: 4000, reason: 'network drop' });
          void upstream.close();
          return true;
        }),
      );
      await sayAndSettle(p, 'find flights to Corfu');
      await sayAndSettle(p, 'book TS101', 'suspended');
      const approve = p.locator('li.part-a2ui-surface.surface').last().getByRole('button', { name: 'Approve' });
      await approve.waitFor({ timeout: 10_000 });
      await approve.dblclick();
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      await p.locator('li.approval[data-decision="approved"]').waitFor();
      await new Promise((r) => setTimeout(r, 500));
      expect(await shownError(p)).toBeNull();
      expect(answers).toHaveLength(1);
    }, 90_000);

    it('web:demo:lost-answer — "on reconnect, re-enable every unresolved card": an approval answer lost in a connection drop leaves the card answerable after the page reconnects', async () => {
      const booked = await p.locator('li.part-response').last().locator('.text').textContent();
      const ref = /BK\d+/.exec(booked ?? '')![0];
      await sayAndSettle(p, `cancel ${ref}`, 'suspended');
      const card = p.locator('li.approval').nth(1);
      await expect(card.locator('.tool').textContent()).resolves.toContain('cancel_booking');
      dropNextAnswer = true;
      await card.getByRole('button', { name: 'Approve' }).click();
      await p.locator('#conn[data-state="reconnecting"]').waitFor({ timeout: 5_000 });
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
      // The answer never arrived: the approval is still open, and its card takes the answer again.
      await expect.poll(() => card.getByRole('button', { name: 'Approve' }).isEnabled(), { timeout: 5_000 }).toBe(true);
      await card.getByRole('button', { name: 'Approve' }).click();
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      await expect(card.locator('.resolution').textContent()).resolves.toMatch(/^Approved by /);
      expect(answers).toHaveLength(3);
    }, 90_000);
  });

  it('web:demo:answer-timeout — "after a timeout with no answered/error reply, re-enable": an answer the server never replies to frees its approval after 10 s, and the answer given then goes through', async () => {
    const answers: Record<string, unknown>[] = [];
    let swallowNext = true;
    const p = await openTab(async (t) => {
      await t.clock.install();
      await relay(t, (f) => {
        if (f.type !== 'action' || (f.action as { name?: string }).name !== 'approve') return false;
        answers.push(f);
        if (!swallowNext) return false;
        swallowNext = false;
        return true; // the server never sees it, and the connection stays up
      });
    });
    try {
      await sayAndSettle(p, 'find flights to Corfu');
      await sayAndSettle(p, 'book TS101', 'suspended');
      const approve = p.locator('li.part-a2ui-surface.surface').last().getByRole('button', { name: 'Approve' });
      await approve.waitFor({ timeout: 10_000 });
      await approve.click();
      await approve.click(); // on its way: ignored
      await expect.poll(() => answers.length).toBe(1);
      await p.clock.fastForward(11_000);
      await expect.poll(() => shownError(p)).toMatch(/did not confirm your answer/);
      await approve.click();
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      await p.locator('li.approval[data-decision="approved"]').waitFor();
      expect(answers).toHaveLength(2);
    } finally {
      await p.close();
    }
  }, 60_000);

  it('web:demo:keyboard-reconnect — "keep the input enabled while reconnecting": text typed into the focused message box across a connection drop is kept, the box keeps focus, and Enter sends it once live', async () => {
    let current: { ws: WebSocketRoute; upstream: WebSocketRoute } | undefined;
    const p = await openTab((t) =>
      t.routeWebSocket(/\/ws/, (ws) => {
        current = { ws, upstream: ws.connectToServer() };
      }),
    );
    try {
      await p.getByLabel('Message').focus();
      await p.keyboard.type('find flights ');
      await current!.ws.close({ code: 4000, reason: 'drop' });
      await current!.upstream.close();
      await p.locator('#conn[data-state="reconnecting"]').waitFor();
      await p.keyboard.type('to Corfu');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
      await p.keyboard.type(' please');
      await expect(p.evaluate(() => document.activeElement?.id)).resolves.toBe('message');
      await p.keyboard.press('Enter');
      await p.locator('#transcript li.user').waitFor({ timeout: 10_000 });
      await expect(p.locator('#transcript li.user .text').allTextContents()).resolves.toEqual(['find flights to Corfu please']);
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
    } finally {
      await p.close();
    }
  }, 60_000);

  it('web:demo:refused-key — "probe GET /sessions/{id} after a refused upgrade": with a rotated API key the page stops reconnecting and says the key was refused; ?token= is taken out of the address bar', async () => {
    const keys = new Set(['k-one']);
    const authenticate: Authenticate = (req) => {
      const header = req.headers.authorization;
      const key = header?.startsWith('Bearer ') ? header.slice(7) : new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
      if (!key) return { ok: false, status: 401, message: 'an API key is required' };
      return keys.has(key) ? { ok: true, principal: { userId: 'ana' } } : { ok: false, status: 403, message: 'this API key is not valid' };
    };
    const guarded = await startServer({
      runtime,
      port: 0,
      closeRuntime: false,
      transports: [createAapTransport({ runtime, agents: desk.agents, authenticate }), createStreamsTransport({ runtime, webRoot: join(ROOT, 'web'), authenticate })],
    });
    const conns = new Set<Socket>();
    guarded.server.on('connection', (s: Socket) => {
      conns.add(s);
      s.on('close', () => conns.delete(s));
    });
    let upgrades = 0;
    guarded.server.on('upgrade', () => upgrades++);
    let p: Page | undefined;
    try {
      p = await openTab(undefined, `${guarded.url}/?token=k-one`);
      expect(p.url()).toBe(`${guarded.url}/`);
      await expect(p.evaluate(() => sessionStorage.getItem('turnstate.demo.token'))).resolves.toBe('k-one');
      // The key is rotated; the connection drops.
      keys.clear();
      keys.add('k-two');
      for (const s of conns) s.destroy();
      await expect.poll(() => shownError(p!), { timeout: 10_000 }).toMatch(/refused this page's API key/);
      await expect(p.locator('#conn').getAttribute('data-state')).resolves.toBe('offline');
      const tried = upgrades;
      await new Promise((r) => setTimeout(r, 2_500));
      expect(upgrades).toBe(tried);
    } finally {
      await p?.close();
      await guarded.close();
    }
  }, 60_000);

  it('web:static — content types, security headers, no directory traversal', async () => {
    const get = (p: string) => fetch(server.url + p);
    expect((await get('/app.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await get('/style.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const html = await get('/');
    expect(html.headers.get('x-content-type-options')).toBe('nosniff');
    expect(html.headers.get('content-security-policy')).toContain("default-src 'self'");
    for (const p of ['/..%2fpackage.json', '/%2e%2e/package.json', '/..%5cpackage.json', '/%00index.html', '/../package.json']) {
      const r = await get(p);
      expect(r.status, p).toBe(404);
      expect(await r.text()).not.toContain('"name": "turnstate"');
    }
  });
});
