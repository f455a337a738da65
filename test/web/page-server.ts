/**
 * The demo page served as `turnstate serve` serves it: the page's A2UI bundle built for this run
 * (npm run build:web), AAP and the streams transport with the web root, on a free port.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { Runtime } from '../../src/api.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime, type TurnstateRuntime } from '../../src/runtime.js';
import type { ModelPort } from '../../src/machines/ports.js';
import type { AapAgentConfig } from '../../src/transports/aap/index.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { createStreamsTransport, type StreamsTransportOptions } from '../../src/transports/streams/index.js';
import { launchChromium } from './chromium.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');

/** `streams`: options of the streams transport besides the runtime and web root (`heartbeatMs`, ...). */
export async function servePage(
  runtime: Runtime,
  agents: AapAgentConfig[],
  streams: Omit<StreamsTransportOptions, 'runtime' | 'webRoot'> = {},
): Promise<RunningServer> {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-web.mjs')], { stdio: 'pipe' });
  return startServer({
    runtime,
    port: 0,
    transports: [createAapTransport({ runtime, agents }), createStreamsTransport({ ...streams, runtime, webRoot: join(ROOT, 'web') })],
  });
}

/**
 * The page served (servePage) and a Chromium for one describe block: started before its tests,
 * closed after them, the runtime too. Read `server` and `ctx` inside the tests.
 */
export function pageFixture(
  runtime: Runtime,
  agents: AapAgentConfig[],
  viewport: { width: number; height: number },
): { readonly server: RunningServer; readonly ctx: BrowserContext } {
  const fx = {} as { server: RunningServer; ctx: BrowserContext };
  let closeBrowser: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    fx.server = await servePage(runtime, agents);
    ({ ctx: fx.ctx, close: closeBrowser } = await launchChromium(viewport));
  }, 60_000);
  afterAll(async () => {
    await closeBrowser?.();
    await fx.server?.close();
    await runtime.close();
  });
  return fx;
}

/** A runtime whose one actor, `desk`, answers every message "ok" and completes the turn. */
export function okDeskRuntime(): TurnstateRuntime {
  const runtime = createRuntime({
    model: createScriptedModel({
      rules: [{ when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { turnState: 'complete', parts: [{ text: 'ok', metadata: { partType: 'response' } }] } }] } }],
    }),
  });
  runtime.registries.actors.register({ name: 'desk' });
  return runtime;
}

/** `inner` with a pause of `ms` before each stream event, so a turn takes long enough to interrupt. */
export function paced(inner: ModelPort, ms: number): ModelPort {
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
