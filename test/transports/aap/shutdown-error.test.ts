/**
 * A turn still running when the server shuts down: its response ends with turn_stop error saying
 * why (`server.closing`), as every errored turn does; a `none` response keeps its exact body and
 * carries the code in its `turnstate-error-code` header.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/api.js';
import type { ModelScript } from '../../../src/models/script.js';
import { checkResponse } from './conformance.js';
import { createSession, MODES, startHarness, turn, user } from './helpers.js';

const SLOW: ModelScript = {
  rules: [
    { when: { on: 'user', text: 'slow' }, respond: { blocks: [{ type: 'tool_use', name: 'wait', input: {} }] } },
    { when: { on: 'tool_result' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ metadata: { partType: 'response' }, text: 'slow done' }], turnState: 'complete' } }] } },
  ],
};

const releases: (() => void)[] = [];
afterAll(() => {
  for (const r of releases) r();
});

/** Registers a `wait` tool held until the test ends, and the `slowpoke` actor using it. */
function setup(rt: Runtime): void {
  rt.registries.tools.register({
    name: 'wait',
    description: 'Waits until the test ends',
    inputSchema: { type: 'object' },
    scope: 'generalist',
    handler: () => new Promise<string>((resolve) => releases.push(() => resolve('released'))),
  });
  rt.registries.actors.register({ name: 'slowpoke', tools: ['wait'] });
}

async function untilToolCalled(runtime: Runtime, sid: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await runtime.history(sid)).some((e) => e.type === 'tool.called')) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('the slow turn never called its tool');
}

describe('AAP: a turn cut by shutdown', () => {
  for (const mode of MODES) {
    it(`aap:turn_stop:server-closing — "each ends with turn_stop {stopReason: error, error: {code: server.closing, …}}" (${mode}): the turn was cut by shutdown and resumes when the server is back; a none body stays {stopReason, messages}, the code in turnstate-error-code`, async () => {
      const h = await startHarness({ script: SLOW, setup, agents: [{ name: 'slowpoke' }], aap: { closeGraceMs: 50 }, closeTimeoutMs: 5_000 });
      const sid = await createSession(h.url, { name: 'slowpoke' });
      const pending = turn(h.url, sid, user('slow please', mode));
      await untilToolCalled(h.runtime, sid);
      const closing = h.close();
      const r = await pending;
      checkResponse(r, mode);
      const message = expect.stringMatching(/shut down before this turn finished; the turn resumes when the server is back, and the session's history shows how it ended/);
      if (mode === 'none') {
        expect(r.json.stopReason).toBe('error');
        expect(Object.keys(r.json).sort()).toEqual(['messages', 'stopReason']);
        expect(r.headers.get('turnstate-error-code')).toBe('server.closing');
      } else {
        expect(r.events.at(-1)).toEqual({ event: 'turn_stop', rawData: expect.any(String), data: { stopReason: 'error', error: { code: 'server.closing', message } } });
      }
      for (const rel of releases.splice(0)) rel();
      await closing;
    });
  }
});
