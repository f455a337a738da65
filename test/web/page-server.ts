/**
 * The demo page served as `turnstate serve` serves it: the page's A2UI bundle built for this run
 * (npm run build:web), AAP and the streams transport with the web root, on a free port.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Runtime } from '../../src/api.js';
import type { ModelPort } from '../../src/machines/ports.js';
import type { AapAgentConfig } from '../../src/transports/aap/index.js';
import { createAapTransport } from '../../src/transports/aap/index.js';
import { startServer, type RunningServer } from '../../src/transports/server.js';
import { createStreamsTransport, type StreamsTransportOptions } from '../../src/transports/streams/index.js';

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
