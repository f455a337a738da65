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
import type { SessionHandle } from '../../src/api.js';
import { readRecording } from '../../src/replay/recording.js';
import { createMemoryStore } from '../../src/stores/memory.js';

const respond = (text: string, partType: string, turnState: string, passTo?: string) => ({
  type: 'tool_use' as const,
  name: 'respond',
  input: { parts: [{ text, metadata: { partType } }], turnState, ...(passTo ? { passTo } : {}) },
});
const dir = mkdtempSync(join(tmpdir(), 'turnstate-infer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Records session `name` of `actor` into a SQLite file, driven by `drive`; the file's path. */
async function record(name: string, setup: (reg: Registries) => void, script: ModelScript, actor: string, drive: (s: SessionHandle) => Promise<void>): Promise<string> {
  const path = join(dir, `${name}.db`);
  const rt = createRuntime({ model: createScriptedModel(script), store: createSqliteStore({ path }) });
  setup(rt.registries);
  await drive(await rt.createSession({ id: name, actor }));
  await rt.close();
  return path;
}

/**
 * Records one turn of `actor` under `setup` and `script` (it ends in `finalizedBy`), then replays
 * it with the setup and with registrations inferred from the recording: both must be identical.
 */
async function recordAndReplay(name: string, setup: (reg: Registries) => void, script: ModelScript, actor: string, text: string, finalizedBy: string): Promise<void> {
  const path = await record(name, setup, script, actor, async (s) => {
    expect((await (await s.send(text)).settled).finalizedBy).toBe(finalizedBy);
  });
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

/** Two consumer holding states in one turn, each resumed by its own injection; the user's message itself starts with a bracket. */
const twoHolds = {
  setup: (reg: Registries) => {
    reg.turnStates.register({ id: 'awaiting-review', meta: { description: 'Waiting for a reviewer.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'review' } });
    reg.turnStates.register({ id: 'awaiting-payment', meta: { description: 'Waiting for payment.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'payment-confirmed' } });
    reg.actors.register({ name: 'till', tools: [] });
  },
  script: {
    rules: [
      { when: { on: 'user' as const, text: '^\\[payment-confirmed\\]' }, respond: { blocks: [respond('Paid.', 'response', 'complete')] } },
      { when: { on: 'user' as const, text: '^\\[review\\]' }, respond: { blocks: [respond('Reviewed; now pay.', 'progress', 'awaiting-payment')] } },
      { when: { on: 'user' as const }, respond: { blocks: [respond('Draft ready for review.', 'progress', 'awaiting-review')] } },
    ],
  },
};

function recordTwoHolds(name: string): Promise<string> {
  return record(name, twoHolds.setup, twoHolds.script, 'till', async (s) => {
    expect((await (await s.send('[urgent] order the ferry ticket')).settled).finalizedBy).toBe('awaiting-review');
    expect((await (await s.inject({ kind: 'resume', resumeOn: 'review', payload: { ok: true } }))!.settled).finalizedBy).toBe('awaiting-payment');
    expect((await (await s.inject({ kind: 'resume', resumeOn: 'payment-confirmed', payload: { amount: 42 } }))!.settled).finalizedBy).toBe('complete');
  });
}

it('replay:exact:consumer-hold — each of two holding states in one turn replays with the injection that resumed it, inferred from the turnState.changed that records it (a user message starting with "[urgent] " is no injection)', async () => {
  const path = await recordTwoHolds('two-holds');
  const ro = createSqliteStore({ path, readonly: true });
  try {
    const resumes = (await ro.readEvents('two-holds', 0)).flatMap((e) => (e.type === 'turnState.changed' && e.resumedBy !== undefined ? [`${e.from}:${e.resumedBy}`] : []));
    expect(resumes).toEqual(['awaiting-review:review', 'awaiting-payment:payment-confirmed']);
    expect((await replaySession(ro, 'two-holds', { setup: twoHolds.setup })).diff.identical).toBe(true);
    const inferred = await replaySession(ro, 'two-holds');
    expect(inferred.stoppedEarly).toBeUndefined();
    expect(inferred.diff.identical).toBe(true);
  } finally {
    ro.close();
  }
});

it('replay:exact:consumer-hold — a recording from before turnState.changed named its injection: each state left without a model call takes the turn\'s next injection, after its input; one whose injection is missing is named in the stop', async () => {
  const path = await recordTwoHolds('two-holds-legacy');
  const ro = createSqliteStore({ path, readonly: true });
  const rec = await readRecording(ro, 'two-holds-legacy');
  ro.close();
  const legacy = async (mailbox = rec.mailbox) => {
    const store = createMemoryStore();
    await store.createSession(rec.record);
    const events = rec.events.map((e) => {
      if (e.type !== 'turnState.changed') return e;
      const { resumedBy: _, ...older } = e;
      return older;
    });
    await store.commit(rec.record.id, { events, mailbox, executions: rec.executions, approvals: rec.approvals });
    return store;
  };
  const store = await legacy();
  expect((await replaySession(store, 'two-holds-legacy')).diff.identical).toBe(true);
  // Without the payment injection, the replay stops where the recording resumed and says what it lacks.
  const cut = await legacy(rec.mailbox.filter((m) => !(m.kind === 'user' && m.text.startsWith('[payment-confirmed] '))));
  const r = await replaySession(cut, 'two-holds-legacy', { setup: twoHolds.setup });
  expect(r.stoppedEarly).toMatch(/stopped in "awaiting-payment" and the recording holds no "payment-confirmed" injection to resume it/);
});

const compatCall = (name: 'respond_to_user' | 'mark_work_complete', input: Record<string, string>) => ({ type: 'tool_use' as const, name, input });

it('replay:exact:inferred-compat — a spec-003 compatibility actor (respond_to_user, mark_work_complete) is inferred from its recorded calls and replays identically without the application\'s setup', async () => {
  await recordAndReplay(
    'compat',
    (reg) => {
      reg.actors.register({ name: 'voice', compat: 'respond_to_user' });
    },
    {
      rules: [
        { when: { call: 0 }, respond: { blocks: [compatCall('respond_to_user', { text: 'It is sunny.' })] } },
        { when: { call: 1 }, respond: { blocks: [compatCall('mark_work_complete', { summary: 'Answered.' })] } },
      ],
    },
    'voice',
    'weather?',
    'complete',
  );
});

it('replay:exact:inferred-compat — with deliverDrafts (each respond_to_user delivered as it is made, as the log shows) and an application tool beside it', async () => {
  await recordAndReplay(
    'compat-drafts',
    (reg) => {
      reg.tools.register({ name: 'forecast', description: 'Forecast', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => ({ sky: 'clear' }) });
      reg.actors.register({ name: 'voice', tools: ['forecast'], compat: { mode: 'respond_to_user', deliverDrafts: true } });
    },
    {
      rules: [
        { when: { call: 0 }, respond: { blocks: [compatCall('respond_to_user', { text: 'Checking.' }), { type: 'tool_use', name: 'forecast', input: {} }] } },
        { when: { call: 1 }, respond: { blocks: [compatCall('respond_to_user', { text: 'Clear skies.' })] } },
        { when: { call: 2 }, respond: { blocks: [compatCall('mark_work_complete', { summary: 'Forecast given.' })] } },
      ],
    },
    'voice',
    'weather?',
    'complete',
  );
});
