// docs/concepts/replay.md: "without the application's setup, registrations inferred from the
// recording replay the same session identically", for consumer turn states too: a hand-off state
// and a holding state the recording ends in.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { replaySession } from '../../src/index.js';
import type { Registries } from '../../src/registries/types.js';

const respond = (text: string, partType: string, turnState: string, passTo?: string) => ({
  type: 'tool_use' as const,
  name: 'respond',
  input: { parts: [{ text, metadata: { partType } }], turnState, ...(passTo ? { passTo } : {}) },
});
const dir = mkdtempSync(join(tmpdir(), 'turnstate-infer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Records one turn of `actor` under `setup` and `script` (it ends in `finalizedBy`), then replays
 * it with the setup and with registrations inferred from the recording: both must be identical.
 */
async function recordAndReplay(name: string, setup: (reg: Registries) => void, script: ModelScript, actor: string, text: string, finalizedBy: string): Promise<void> {
  const path = join(dir, `${name}.db`);
  const rt = createRuntime({ model: createScriptedModel(script), store: createSqliteStore({ path }) });
  setup(rt.registries);
  const s = await rt.createSession({ id: name, actor });
  expect((await (await s.send(text)).settled).finalizedBy).toBe(finalizedBy);
  await rt.close();
  const ro = createSqliteStore({ path, readonly: true });
  try {
    expect((await replaySession(ro, name, { setup })).diff.identical).toBe(true);
    expect((await replaySession(ro, name)).diff.identical).toBe(true);
  } finally {
    ro.close();
  }
}

it('replay:exact:inferred-handoff-state — a consumer hand-off state (handsOff) replays identically without the application\'s setup', async () => {
  await recordAndReplay(
    'a',
    (reg) => {
      reg.turnStates.register({ id: 'escalated', meta: { description: 'Escalated to a supervisor.', isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true, requires: { passTo: true } } });
      reg.actors.register({ name: 'desk', tools: [], handoffs: ['supervisor'] });
      reg.actors.register({ name: 'supervisor', tools: [] });
    },
    {
      rules: [
        { when: { actor: 'desk' }, respond: { blocks: [respond('Escalating.', 'ack', 'escalated', 'supervisor')] } },
        { when: { actor: 'supervisor' }, respond: { blocks: [respond('Refund approved.', 'response', 'complete')] } },
      ],
    },
    'desk',
    'I want a refund',
    'complete',
  );
});

it('replay:exact:inferred-held-state — a consumer holding state the recording ends in replays identically without the application\'s setup', async () => {
  await recordAndReplay(
    'b',
    (reg) => {
      reg.turnStates.register({ id: 'awaiting-payment', meta: { description: 'Waiting for payment.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'payment-confirmed' } });
      reg.actors.register({ name: 'till', tools: [] });
    },
    { rules: [{ when: { on: 'user' }, respond: { blocks: [respond('Waiting for your payment.', 'progress', 'awaiting-payment')] } }] },
    'till',
    'pay for the ferry',
    'awaiting-payment',
  );
});
