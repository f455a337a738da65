/**
 * Budgets are per turn (limits.ts: "a bound is what one actor may spend" in one turn): a free-text
 * nudge spent in one turn must not count against the next turn of the same session.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createSessionMachine, compiledSessionRun } from '../../src/machines/session.machine.js';
import { createRegistries } from '../../src/create-registries.js';

const FREE_TEXT = { type: 'MODEL_DONE', toolUses: 0, rejected: 0, applied: 0, freeText: true, stopReason: 'end_turn' } as const;
const COMPLETE = { type: 'MODEL_DONE', toolUses: 0, rejected: 0, applied: 1, freeText: false, stopReason: 'tool_use', change: { to: 'complete' } } as const;

describe('free-text nudge budget', () => {
  it('machines:budget:nudges-per-turn — "a bound is what one actor may spend in one turn": each turn starts with its whole free-text nudge budget, whatever the previous turn spent', () => {
    const m = createSessionMachine(createRegistries().turnStates);
    const a = createActor(m, { input: { entryActor: 'a', loop: { maxNudges: 1 } } as any });
    const effects: { type: string; code?: string }[] = [];
    a.on('*', (e) => effects.push(e as any));
    a.start();
    // Turn 1 spends its one nudge, then completes.
    a.send({ type: 'START', turnId: 't1' });
    a.send({ type: 'CALL' });
    a.send(FREE_TEXT);
    a.send({ type: 'CALL' });
    a.send(COMPLETE);
    expect(a.getSnapshot().value).toEqual({ turn: 'complete' });
    a.send({ type: 'SETTLE' });
    expect(a.getSnapshot().value).toBe('idle');
    // Turn 2: its first free-text response is nudged, not failed.
    a.send({ type: 'START', turnId: 't2' });
    expect(a.getSnapshot().context.nudges).toBe(0);
    const snap = a.getPersistedSnapshot();
    effects.length = 0;
    a.send({ type: 'CALL' });
    a.send(FREE_TEXT);
    expect(effects.map((e) => e.type)).toEqual(['model.call', 'nudge', 'model.next']);
    expect(a.getSnapshot().value).toEqual({ turn: { awaiting: 'ready' } });
    // The compiled run sessions use agrees.
    const run = compiledSessionRun(m, snap)!;
    const out: { type: string }[] = [];
    run.handle({ type: 'CALL' }, out);
    run.handle(FREE_TEXT as any, out);
    expect(out.map((e) => e.type)).toEqual(['model.call', 'nudge', 'model.next']);
    a.stop();
  });
});
