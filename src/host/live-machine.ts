/**
 * The session's machine while the host holds it: a live XState actor during a turn, its persisted
 * snapshot (a few hundred bytes) while the session sleeps.
 *
 * Contract:
 * - `send(event)` delivers one event and queues the effects the machine emits for it, in order,
 *   on `effects`; the host executes them. A stopped machine takes no events.
 * - `wake` restores the live actor from the snapshot (no entry actions run again: a restored turn
 *   continues through `RECOVER`); `sleep` keeps only the snapshot.
 * - `adopt` moves an idle session to a regenerated machine (a turn state registered later).
 */
import { createActor, type Actor } from 'xstate';
import type { SessionContext, SessionEffect, SessionMachine, SessionMachineEvent, SessionMachineInput } from '../machines/session.machine.js';

export function isIdleSnapshot(snapshot: unknown): boolean {
  return (snapshot as { value?: unknown } | null)?.value === 'idle';
}

export class LiveMachine {
  /** Effects emitted and not yet executed, oldest first. */
  readonly effects: SessionEffect[] = [];
  private live: Actor<SessionMachine> | null = null;
  private dormant: unknown = null;
  private stopped = false;
  /** The last persisted snapshot and the live snapshot it was taken from (a commit and the sleep after it share one). */
  private persistedOf: unknown = null;
  private persistedSnap: unknown = null;
  private readonly onEffect = (e: SessionEffect) => {
    this.effects.push(e);
  };

  constructor(
    private machine: SessionMachine,
    private readonly input: () => SessionMachineInput,
    snapshot: unknown,
    private readonly inspect: ((event: unknown) => void) | { next?: (event: unknown) => void } | undefined,
  ) {
    // An idle session sleeps from the start (no live actor: an idle session costs little).
    if (snapshot && !inspect && isIdleSnapshot(snapshot)) this.dormant = snapshot;
    else this.wake(snapshot);
  }

  private get actor(): Actor<SessionMachine> {
    return this.live ?? this.wake(this.dormant);
  }

  private wake(snapshot: unknown): Actor<SessionMachine> {
    const a = createActor(this.machine, {
      input: this.input(),
      ...(snapshot ? { snapshot: snapshot as any } : {}),
      ...(this.inspect ? { inspect: this.inspect as any } : {}),
    });
    a.on('*', this.onEffect as any);
    a.start();
    this.live = a;
    this.dormant = null;
    return a;
  }

  /** Keep only the persisted snapshot. With an inspector attached the actor stays live. */
  sleep(): boolean {
    if (!this.live || this.inspect || this.stopped) return false;
    this.dormant = this.persisted();
    this.persistedOf = this.persistedSnap = null;
    this.live.stop();
    this.live = null;
    return true;
  }

  send(event: SessionMachineEvent): void {
    if (!this.stopped) this.actor.send(event);
  }

  /** Whether the machine has a node for turn state `id` (one registered after it was built has none). */
  hasState(id: string): boolean {
    return Object.hasOwn((this.machine.root.states.turn as { states: Record<string, unknown> }).states, id);
  }

  /** Whether the machine would take `event` now (its guards decide; nothing is executed). */
  can(event: SessionMachineEvent): boolean {
    return !this.stopped && this.actor.getSnapshot().can(event);
  }

  /** Like `send`, but returns the effects this event produced (and takes them off the queue). */
  ask(event: SessionMachineEvent): SessionEffect[] {
    const start = this.effects.length;
    this.send(event);
    return this.effects.splice(start);
  }

  /** Between turns: move to `next` (a regenerated machine), keeping the idle snapshot. */
  adopt(next: SessionMachine): void {
    if (next === this.machine || this.state() !== 'idle') return;
    const snapshot = this.persisted();
    this.live?.stop();
    this.live = null;
    this.machine = next;
    this.wake(snapshot);
  }

  /** 'idle', or the current turn-state node (a label for events and snapshots). */
  state(): string {
    if (!this.live) return ((this.dormant as { value?: unknown } | null)?.value as string) ?? 'idle';
    const v = this.live.getSnapshot().value as string | { turn: string | Record<string, unknown> };
    if (typeof v === 'string') return v;
    const t = v.turn;
    return typeof t === 'string' ? t : Object.keys(t)[0]!;
  }

  context(): SessionContext {
    return this.live ? this.live.getSnapshot().context : (this.dormant as { context: SessionContext }).context;
  }

  /** The acting actor of the current turn (the entry actor between turns). */
  actingActor(): string {
    const c = this.context();
    return c.actor ?? c.entryActor;
  }

  persisted(): unknown {
    if (!this.live) return this.dormant;
    // XState snapshots are immutable: an unchanged one persists to the same object.
    const snap = this.live.getSnapshot();
    if (snap !== this.persistedOf) {
      this.persistedSnap = this.live.getPersistedSnapshot();
      this.persistedOf = snap;
    }
    return this.persistedSnap;
  }

  stop(): void {
    this.stopped = true;
    this.live?.stop();
  }
}
