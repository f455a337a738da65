// docs/concepts/replay.md: "without the application's setup, registrations inferred from the
// recording replay the same session identically", for consumer turn states too: a hand-off state
// and a holding state the recording ends in.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { replaySession } from '../../src/index.js';
import type { Registries } from '../../src/registries/types.js';

const respond = (text: string, partType: string, turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType } }], turnState } });
const dir = mkdtempSync(join(tmpdir(), 'turnstate-infer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('replay:exact:inferred-handoff-state — a consumer hand-off state (handsOff) replays identically without the application\'s setup', async () => {
  const setup = (reg: Registries) => {
    reg.turnStates.register({ id: 'escalated', meta: { description: 'Escalated to a supervisor.', isTerminal: false, emitsEnvelope: false, holdsActor: false, handsOff: true, requires: { passTo: true } } });
    reg.actors.register({ name: 'desk', tools: [], handoffs: ['supervisor'] });
    reg.actors.register({ name: 'supervisor', tools: [] });
  };
  const store = createSqliteStore({ path: join(dir, 'a.db') });
  const rt = createRuntime({ model: createScriptedModel({ rules: [
    { when: { actor: 'desk' }, respond: { blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Escalating.', metadata: { partType: 'ack' } }], turnState: 'escalated', passTo: 'supervisor' } }] } },
    { when: { actor: 'supervisor' }, respond: { blocks: [respond('Refund approved.', 'response', 'complete')] } },
  ] }), store });
  setup(rt.registries);
  const s = await rt.createSession({ id: 'a', actor: 'desk' });
  expect((await (await s.send('I want a refund')).settled).finalizedBy).toBe('complete');
  await rt.close();
  const ro = createSqliteStore({ path: join(dir, 'a.db'), readonly: true });
  const withSetup = await replaySession(ro, 'a', { setup });
  const inferred = await replaySession(ro, 'a');
  ro.close();
  expect(withSetup.diff.identical).toBe(true);
  expect(inferred.diff.identical).toBe(true);
});

it('replay:exact:inferred-held-state — a consumer holding state the recording ends in replays identically without the application\'s setup', async () => {
  const setup = (reg: Registries) => {
    reg.turnStates.register({ id: 'awaiting-payment', meta: { description: 'Waiting for payment.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'payment-confirmed' } });
    reg.actors.register({ name: 'till', tools: [] });
  };
  const store = createSqliteStore({ path: join(dir, 'b.db') });
  const rt = createRuntime({ model: createScriptedModel({ rules: [
    { when: { on: 'user' }, respond: { blocks: [respond('Waiting for your payment.', 'progress', 'awaiting-payment')] } },
  ] }), store });
  setup(rt.registries);
  const s = await rt.createSession({ id: 'b', actor: 'till' });
  expect((await (await s.send('pay for the ferry')).settled).finalizedBy).toBe('awaiting-payment');
  await rt.close();
  const ro = createSqliteStore({ path: join(dir, 'b.db'), readonly: true });
  const withSetup = await replaySession(ro, 'b', { setup });
  const inferred = await replaySession(ro, 'b');
  ro.close();
  expect(withSetup.diff.identical).toBe(true);
  expect(inferred.diff.identical).toBe(true);
});
