/**
 * Accessibility of the demo page in Chromium (docs/guide/serve.md, "The demo page"): axe-core
 * finds no serious or critical violation in the states a conversation passes through, the
 * transcript is a list inside its live log, and answering an approval with the keyboard leaves
 * focus on what became of the answer.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RunningServer } from '../../src/transports/server.js';
import { haveChromium, launchChromium } from './chromium.js';
import { servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/a11y');

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

describe.skipIf(!CHROMIUM_OK)('web: accessibility of the demo page (axe-core, keyboard, accessibility tree)', () => {
  let server: RunningServer;
  let ctx: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  const runtime = createRuntime({ model: createScriptedModel(travelDeskScript()) });
  const desk = createTravelDesk(runtime);

  beforeAll(async () => {
    server = await servePage(runtime, desk.agents);
    // bypassCSP: axe-core is injected as an inline script (page.addScriptTag), which the page's
    // Content-Security-Policy (script-src 'self') would block.
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 1000, height: 900 }, { bypassCSP: true }));
    page = ctx.pages()[0] ?? (await ctx.newPage());
    await page.goto(server.url + '/');
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
    await runtime.close();
  });

  /**
   * axe-core's violations of impact serious or critical on the page as it is now (shadow roots
   * included); `rules`: only these rules.
   */
  async function seriousViolations(rules?: string[]): Promise<AxeViolation[]> {
    if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE_SOURCE });
    const violations = await page.evaluate(async (rules) => {
      const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
      const res = await axe.run(document, { resultTypes: ['violations'], ...(rules ? { runOnly: { type: 'rule', values: rules } } : {}) });
      return res.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
    }, rules);
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  /** Fails naming each rule, its impact and the elements it found, when axe reports a serious or critical violation. */
  async function expectNoSeriousViolations(state: string, rules?: string[]): Promise<void> {
    const found = await seriousViolations(rules);
    const report = found.map((v) => `  ${v.id} [${v.impact}] ${v.help}: ${v.targets.join(', ')}`).join('\n');
    expect(found, `axe-core, ${state}:\n${report}`).toEqual([]);
  }

  /** What has the keyboard focus, looking into shadow roots (e.g. "button", "p.resolution", "body"). */
  const focused = (): Promise<string> =>
    page.evaluate(() => {
      let a = document.activeElement;
      while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
      if (!a) return 'none';
      return `${a.tagName.toLowerCase()}${a.classList.length ? `.${Array.from(a.classList).join('.')}` : ''}`;
    });

  /** Chromium's accessibility tree (CDP Accessibility.getFullAXTree): the roles of its non-ignored nodes. */
  async function axRoles(): Promise<string[]> {
    const cdp = await ctx.newCDPSession(page);
    try {
      const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: { ignored: boolean; role?: { value?: unknown } }[] };
      return nodes.filter((n) => !n.ignored).map((n) => String(n.role?.value ?? ''));
    } finally {
      await cdp.detach();
    }
  }

  async function say(text: string, settledIn: string): Promise<void> {
    await page.getByLabel('Message').fill(text);
    await page.keyboard.press('Enter');
    await page.locator(`#turn-state[data-state="${settledIn}"]`).waitFor({ timeout: 20_000 });
  }

  it('web:a11y:axe — "no serious or critical axe-core violations": the empty page', async () => {
    await expectNoSeriousViolations('the empty page');
  });

  it('web:a11y:axe — "no serious or critical axe-core violations": "color-contrast" of the connection and turn pills in every state they show', async () => {
    const states = ['idle', 'connecting', 'reconnecting', 'live', 'offline', 'error', 'working', 'awaiting', 'passed', 'suspended', 'clarifying', 'complete', 'failed', 'interrupted'];
    const shown = await page.evaluate(() => ['conn', 'turn-state'].map((id) => ({ id, state: document.getElementById(id)!.dataset.state })));
    try {
      for (const state of states) {
        await page.evaluate((s) => {
          for (const id of ['conn', 'turn-state']) document.getElementById(id)!.dataset.state = s;
        }, state);
        await expectNoSeriousViolations(`the pills in state ${state}`, ['color-contrast']);
      }
    } finally {
      await page.evaluate((shown) => {
        for (const { id, state } of shown) document.getElementById(id)!.dataset.state = state ?? '';
      }, shown);
    }
  });

  it('web:a11y:axe — "no serious or critical axe-core violations": after a search turn, with the flights table and the flights view', async () => {
    await say('find flights to Corfu', 'complete');
    await page.locator('li.part-domain-data table').waitFor();
    await page.locator('li.part-a2ui-surface.surface a2ui-surface').first().getByText('TS101', { exact: true }).waitFor({ timeout: 10_000 });
    await expectNoSeriousViolations('after a search turn');
  });

  it('web:a11y:listitems — "the conversation is a list": the transcript\'s items are listitems in Chromium\'s accessibility tree, inside the live log; the connection and turn pills are no status regions of their own', async () => {
    const roles = await axRoles();
    const items = await page.locator('#transcript > li').count();
    expect(items).toBeGreaterThan(0);
    expect(roles.filter((r) => r === 'listitem').length, 'listitem nodes in the accessibility tree').toBeGreaterThanOrEqual(items);
    expect(roles.filter((r) => r === 'log')).toHaveLength(1);
    await expect(page.getByRole('log').getByRole('list').count()).resolves.toBe(1);
    await expect(page.getByRole('log').getAttribute('aria-live')).resolves.toBe('polite');
    // #status is the one status region.
    expect(roles.filter((r) => r === 'status')).toHaveLength(1);
  });

  it('web:a11y:axe — "no serious or critical axe-core violations": with an approval waiting (its card and the booking view with Approve and Deny)', async () => {
    await say('book TS101', 'suspended');
    await page.locator('li.approval').waitFor();
    await page.locator('li.part-a2ui-surface.surface').last().getByRole('button', { name: 'Approve' }).waitFor({ timeout: 10_000 });
    await expectNoSeriousViolations('with an approval waiting');
  });

  it('web:a11y:focus — "focus goes to the answer, not to <body>": Approve pressed with the keyboard in the booking view leaves focus on the resolution text; the answered view stays readable, its buttons disabled', async () => {
    const surface = page.locator('li.part-a2ui-surface.surface').last();
    await surface.getByRole('button', { name: 'Approve' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('li.approval[data-decision="approved"]').waitFor({ timeout: 20_000 });
    await expect.poll(focused).toBe('p.resolution');
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toMatch(/^Approved by /);
    await page.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
    // Still in the accessibility tree (no inert): its heading is read, its buttons are there, disabled.
    await expect(surface.getByRole('heading', { name: 'Book flight TS101?' }).count()).resolves.toBe(1);
    await expect(surface.getByRole('button', { name: 'Approve' }).isDisabled()).resolves.toBe(true);
    await expect(surface.getByRole('button', { name: 'Deny' }).isDisabled()).resolves.toBe(true);
  });

  it('web:a11y:axe — "no serious or critical axe-core violations": after approving (the answered view and the resolved card)', async () => {
    await expectNoSeriousViolations('after approving');
  });

  it('web:a11y:focus — "focus goes to the answer, not to <body>": Deny pressed with the keyboard on a plain approval card (no view) leaves focus on the resolution text', async () => {
    const booked = await page.locator('li.part-response').last().locator('.text').textContent();
    const ref = /BK\d+/.exec(booked ?? '')![0];
    await say(`cancel ${ref}`, 'suspended');
    const card = page.locator('li.approval').last();
    await expect(card.locator('.tool').textContent()).resolves.toContain('cancel_booking');
    await card.getByRole('button', { name: 'Deny' }).focus();
    await page.keyboard.press('Enter');
    await card.locator('.resolution:not([hidden])').waitFor({ timeout: 20_000 });
    await expect.poll(focused).toBe('p.resolution');
    expect(await focused()).not.toBe('body');
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toMatch(/^Denied by /);
  });
});
