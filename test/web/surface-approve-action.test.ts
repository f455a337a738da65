/**
 * The demo page and an approve/deny surface button that does not say which approval it answers
 * (its approvalId binding resolves to nothing): the click is not sent at all, so it can never
 * become a message telling the model "approve" (docs/concepts/surfaces.md, surfaces:action:route).
 */
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { RunningServer } from '../../src/transports/server.js';
import { haveChromium, launchChromium } from './chromium.js';
import { servePage } from './page-server.js';

const CHROMIUM_OK = haveChromium('test/web/surface-approve-action');
const CATALOG = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';

/** An Approve button whose approvalId binds to a path the data model lacks, and a Pick button. */
const BUTTONS = [
  { version: 'v0.9', createSurface: { surfaceId: 'ask', catalogId: CATALOG } },
  {
    version: 'v0.9',
    updateComponents: {
      surfaceId: 'ask',
      components: [
        { id: 'root', component: 'Row', children: ['ok', 'pick'] },
        { id: 'ok', component: 'Button', child: 'okl', action: { event: { name: 'approve', context: { approvalId: { path: '/missing' } } } } },
        { id: 'okl', component: 'Text', text: 'Approve' },
        { id: 'pick', component: 'Button', child: 'pickl', action: { event: { name: 'pick', context: { choice: 'A' } } } },
        { id: 'pickl', component: 'Text', text: 'Pick' },
      ],
    },
  },
  { version: 'v0.9', updateDataModel: { surfaceId: 'ask', path: '/', value: { title: 'x' } } },
];

describe.skipIf(!CHROMIUM_OK)('web: a surface approve without an approvalId', () => {
  let server: RunningServer;
  let ctx: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  const script = travelDeskScript();
  const say = (text: string) => ({ blocks: [{ type: 'tool_use' as const, name: 'respond', input: { turnState: 'complete', parts: [{ text, metadata: { partType: 'response' } }] } }] });
  script.rules.unshift(
    {
      when: { on: 'user', text: '^ask$' },
      respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { turnState: 'complete', parts: [{ text: 'Choose.', metadata: { partType: 'response' } }, { data: { messages: BUTTONS }, metadata: { partType: 'a2ui-surface' } }] } }] },
    },
    { when: { on: 'user', text: '^\\[surface action\\]' }, respond: say('Noted.') },
  );
  const runtime = createRuntime({ model: createScriptedModel(script) });
  const desk = createTravelDesk(runtime);

  beforeAll(async () => {
    server = await servePage(runtime, desk.agents);
    ({ ctx, close: closeBrowser } = await launchChromium({ width: 900, height: 900 }));
  }, 60_000);
  afterAll(async () => {
    await closeBrowser?.();
    await server?.close();
  });

  it('web:surface:approve-without-id — "an action named approve or deny … MUST answer that approval": a surface Approve whose approvalId resolves to nothing sends no frame and says so; the next click (Pick) is sent and is the only surface action the session gets', async () => {
    const p = await ctx.newPage();
    const sent: string[] = [];
    p.on('websocket', (ws) => ws.on('framesent', (f) => sent.push(String(f.payload))));
    try {
      await p.goto(server.url + '/');
      await p.locator('#conn[data-state="live"]').waitFor({ timeout: 15_000 });
      await p.getByLabel('Message').fill('ask');
      await p.keyboard.press('Enter');
      const approve = p.locator('a2ui-surface[data-surface-id="ask"]').getByRole('button', { name: 'Approve' });
      await approve.waitFor({ timeout: 20_000 });
      await p.locator('#turn-state[data-state="complete"]').waitFor({ timeout: 20_000 });
      await approve.click();
      await expect.poll(() => p.locator('#error').innerText(), { timeout: 10_000 }).toMatch(/does not say which approval it answers; nothing was sent/);
      // Frames leave in click order: once Pick's action is sent, an Approve frame would be too.
      await p.locator('a2ui-surface[data-surface-id="ask"]').getByRole('button', { name: 'Pick' }).click();
      const sessionId = await p.evaluate(() => document.body.dataset.sessionId ?? '');
      const actions = async () => (await runtime.store.readEvents(sessionId, 0)).flatMap((e) => (e.type === 'turn.started' && e.input.text.startsWith('[surface action]') ? [e.input.text] : []));
      await expect.poll(actions, { timeout: 10_000 }).toEqual(['[surface action] pick on ask (pick)\n{"choice":"A"}']);
      const actionFrames = sent.map((t) => JSON.parse(t) as { type: string; action?: { name: string } }).filter((f) => f.type === 'action');
      expect(actionFrames.map((f) => f.action?.name)).toEqual(['pick']);
    } finally {
      await p.close();
    }
  }, 90_000);
});
