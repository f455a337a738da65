/**
 * The demo page in Debian's Chromium (playwright-core) against `turnstate serve`'s composition:
 * the travel desk on the real runtime, AAP for session creation, the streams transport for the
 * page and its WebSocket, all over 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import type { ModelPort } from '../../src/machines/ports.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { createStreamsTransport } from '../../src/transports/streams/index.js';
import type { Part, SessionEvent } from '../../src/types.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test-artifacts');

if (!existsSync(CHROMIUM)) {
  const msg = `Chromium is missing at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium) to run the demo page test`;
  if (process.env.CI) throw new Error(msg);
  console.warn(`\n!!! SKIPPING test/web: ${msg}\n`);
}

/** The scripted model, with a pause between stream events so a turn takes long enough to interrupt. */
function paced(inner: ModelPort, ms: number): ModelPort {
  return {
    ...inner,
    async *stream(req, signal) {
      for await (const ev of inner.stream(req, signal)) {
        await new Promise((r) => setTimeout(r, ms));
        yield ev;
      }
    },
  };
}

describe.skipIf(!existsSync(CHROMIUM))('web: the travel desk demo page in Chromium', () => {
  let server: RunningServer;
  let ctx: BrowserContext;
  let page: Page;
  let profile: string;
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
    // The page's A2UI renderer is a generated bundle (npm run build:web); build it for this run.
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-web.mjs')], { stdio: 'pipe' });
    server = await startServer({
      runtime,
      port: 0,
      transports: [createAapTransport({ runtime, agents: desk.agents }), createStreamsTransport({ runtime, webRoot: join(ROOT, 'web') })],
    });
    server.server.on('connection', (s: Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    profile = mkdtempSync(join(tmpdir(), 'turnstate-chromium-'));
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
      viewport: { width: 900, height: 1100 },
    });
    page = ctx.pages()[0] ?? (await ctx.newPage());
  }, 60_000);

  afterAll(async () => {
    await ctx?.close();
    await server?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
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
      if (m.type() === 'error') errors.push(m.text());
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
    for (const want of ['Book flight TS101?', 'London', 'Corfu', '2026-06-12 11:15 UTC', '94', 'EUR']) await surface.getByText(want, { exact: true }).waitFor();
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
