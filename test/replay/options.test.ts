/**
 * docs/concepts/replay.md, "Runtime options": the options that shape a path (reasoningTraces,
 * limits) are not in the recording's registrations. Replay takes them as options, infers
 * reasoningTraces where the recording says, and never shows thinking the recording withheld.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatDiff, formatPath, replaySession, ReplayError } from '../../src/replay/index.js';
import { recordBudget, recordThinking, THINKING } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `${files++}.db`);

describe('replay with the runtime options of the recording', () => {
  it('replay:options:reasoning-traces — a recording made with reasoningTraces "drop" or "redact" replays identically with the option, and without it (inferred from the recording)', async () => {
    for (const mode of ['drop', 'redact', 'keep'] as const) {
      const store = await recordThinking('r1', mode, file());
      const told = await replaySession(store, 'r1', { reasoningTraces: mode });
      expect(told.diff.differences, mode).toEqual([]);
      expect(told.reasoningTraces).toEqual({ mode, source: 'option' });
      const inferred = await replaySession(store, 'r1');
      expect(inferred.diff.differences, mode).toEqual([]);
      expect(inferred.diff.identical).toBe(true);
      expect(inferred.reasoningTraces).toEqual({ mode, source: 'recording' });
      store.close();
    }
    // A recording without thinking says nothing: the runtime's default.
    const plain = await recordBudget('b1', file());
    expect((await replaySession(plain, 'b1', { limits: { maxModelCallsPerTurn: 3 } })).reasoningTraces).toEqual({ mode: 'keep', source: 'default' });
    plain.close();
  });

  it('replay:options:never-shows-withheld-thinking — replayed against another reasoningTraces, the path, the diff and their JSON never show thinking text the recording redacted or dropped', async () => {
    for (const mode of ['redact', 'drop'] as const) {
      const store = await recordThinking('r1', mode, file());
      const r = await replaySession(store, 'r1', { reasoningTraces: 'keep' });
      expect(r.diff.identical, mode).toBe(false);
      expect(r.diff.first!.field).toBe(mode === 'redact' ? 'texts' : 'parts');
      const shown = [formatPath(r.recorded), formatPath(r.replayed), formatDiff(r.diff), JSON.stringify({ recorded: r.recorded, replayed: r.replayed, diff: r.diff })].join('\n');
      expect(shown, mode).not.toContain(THINKING);
      expect(shown).not.toContain('internal notes');
      expect(r.replayed.turns[0]!.steps[0]!.texts[0]).toBe('[thinking the recording withheld]');
      store.close();
    }
    // Thinking the recording kept is shown as it was.
    const kept = await recordThinking('r1', 'keep', file());
    expect((await replaySession(kept, 'r1')).replayed.turns[0]!.steps[0]!.texts[0]).toBe(THINKING);
    kept.close();
  });

  it('replay:options:limits — a turn that ran out of its recorded model-call budget replays identically with the recorded limits; without them the result names the budget and the option', async () => {
    const store = await recordBudget('b1', file());
    expect((await replaySession(store, 'b1', { limits: { maxModelCallsPerTurn: 3 } })).diff.identical).toBe(true);
    const blind = await replaySession(store, 'b1');
    expect(blind.diff.identical).toBe(false);
    expect(blind.notes.join('\n')).toMatch(/turn 0 \(turn_[^)]+\) settled on "turn\.model_call_budget".*limits/);
    store.close();
  });

  it('replay:options:invalid — an unknown reasoningTraces mode, an unknown limit or a limit that is no count is a ReplayError naming it', async () => {
    const store = await recordBudget('b1', file());
    await expect(replaySession(store, 'b1', { reasoningTraces: 'hide' as never })).rejects.toThrow(ReplayError);
    await expect(replaySession(store, 'b1', { reasoningTraces: 'hide' as never })).rejects.toThrow(/reasoningTraces must be "keep", "redact" or "drop", not "hide"/);
    await expect(replaySession(store, 'b1', { limits: { maxCalls: 3 } as never })).rejects.toThrow(/limits\.maxCalls is not a runtime limit \(limits: maxModelCallsPerTurn, /);
    await expect(replaySession(store, 'b1', { limits: { maxModelCallsPerTurn: -1 } })).rejects.toThrow(/limits\.maxModelCallsPerTurn must be an integer of at least 1, got -1/);
    await expect(replaySession(store, 'b1', { limits: { maxModelCallsPerTurn: '3' as never } })).rejects.toThrow(/limits\.maxModelCallsPerTurn must be an integer of at least 1, got "3"/);
    store.close();
  });
});
