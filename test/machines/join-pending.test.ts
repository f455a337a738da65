/**
 * Double-texting `interrupt`: a message may join the running turn only when no dispatched call
 * is pending (architecture.md: `join` is emitted on `JOIN` with `noPending`). A message that
 * arrives while an approval or client call waits must queue, not cut into the turn.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createSessionMachine, compiledSessionRun } from '../../src/machines/session.machine.js';
import { createRegistries } from '../../src/create-registries.js';

function joinsOn(pending: number | undefined) {
  const m = createSessionMachine(createRegistries().turnStates);
  const a = createActor(m, { input: { entryActor: 'a' } as any });
  const joins: unknown[] = [];
  a.on('join', (e) => joins.push(e));
  a.start();
  a.send({ type: 'START', turnId: 't1' });
  a.send({ type: 'CALL' });
  // A response with a tool use: the loop dispatches (a call may be pending before CALL{pending} holds the turn).
  a.send({ type: 'MODEL_DONE', toolUses: 1, rejected: 0, applied: 0, freeText: false, stopReason: 'tool_use' });
  expect(a.getSnapshot().value).toEqual({ turn: { awaiting: 'dispatching' } });
  a.send(pending === undefined ? { type: 'JOIN' } : { type: 'JOIN', pending });
  // The compiled run sessions use decides the same.
  const run = compiledSessionRun(m, a.getPersistedSnapshot())!;
  const out: { type: string }[] = [];
  run.handle(pending === undefined ? { type: 'JOIN' } : { type: 'JOIN', pending } as any, out);
  a.stop();
  return { xstate: joins.length, compiled: out.filter((e) => e.type === 'join').length };
}

describe('double-texting interrupt: JOIN', () => {
  it('machines:join:pending-refused — "a message may join the running turn only when no dispatched call is pending": JOIN with calls pending emits no join', () => {
    expect(joinsOn(1)).toEqual({ xstate: 0, compiled: 0 });
    expect(joinsOn(3)).toEqual({ xstate: 0, compiled: 0 });
  });
  it('machines:join:no-pending — a message joins a working turn that has no pending call', () => {
    expect(joinsOn(0)).toEqual({ xstate: 1, compiled: 1 });
    expect(joinsOn(undefined)).toEqual({ xstate: 1, compiled: 1 });
  });
});
