/**
 * The session's machine while the host holds it. It runs compiled (machines/compiled-machine.ts:
 * the same definition and action specs, no actor) unless the session is inspected or the machine
 * uses more than the compiled executor runs; then it is a live XState actor during a turn and its
 * persisted snapshot (a few hundred bytes) while the session sleeps.
 *
 * Contract:
 * - `send(event)` delivers one event and queues the effects the machine emits for it, in order,
 *   on `effects`; the host executes them. A stopped machine takes no events.
 * - `wake` restores the live actor from the snapshot (no entry actions run again: a restored turn
 *   continues through `RECOVER`); `sleep` keeps only the snapshot.
 * - `adopt` moves an idle session to a regenerated machine (a turn state registered later).
 */
import { createActor, type Actor } from 'xstate';
import type { Inspector } from './inspector.js';
import { sessionMachineLimits, type RuntimeLimits } from '../limits.js';
import type { CompiledRun } from '../machines/compiled-machine.js';
import {
  compiledSessionRun,
  type SessionContext,
  type SessionEffect,
  type SessionMachine,
  type SessionMachineEvent,
  type SessionMachineInput,
  upgradeSessionSnapshot,
} from '../machines/session.machine.js';

export function isIdleSnapshot(snapshot: unknown): boolean {
  return (snapshot as { value?: unknown } | null)?.value === 'idle';
}

export class LiveMachine {
  /** Effects emitted and not yet executed, oldest first. */
  readonly effects: SessionEffect[] = [];
  /** The compiled run (null: the session runs on an XState actor). */
  private run: CompiledRun | null = null;
  private live: Actor<SessionMachine> | null = null;
  private dormant: unknown = null;
  private stopped = false;
  /** The last persisted snapshot and the live snapshot it was taken from (a commit and the sleep after it share one). */
  private persistedOf: unknown = null;
  private persistedSnap: unknown = null;

  constructor(
    private machine: SessionMachine,
    /** The machine's input (computed when XState needs it: an idle live session keeps no copy). */
    private readonly entryActor: string,
    private readonly limits: RuntimeLimits,
    stored: unknown,
    private readonly inspect: Inspector | undefined,
  ) {
    const snapshot = upgradeSessionSnapshot(machine, stored);
    if (!inspect) this.run = compiledSessionRun(machine, snapshot ?? this.initial());
    if (this.run) return;
    // An idle session sleeps from the start (no live actor: an idle session costs little).
    if (snapshot && !inspect && isIdleSnapshot(snapshot)) this.dormant = snapshot;
    else this.wake(snapshot);
  }

  private input(): SessionMachineInput {
    return { entryActor: this.entryActor, ...sessionMachineLimits(this.limits) };
  }

  /** The machine's initial snapshot for this session's input (computed by XState). */
  private initial(): unknown {
    return createActor(this.machine, { input: this.input() }).getPersistedSnapshot();
  }

  private get actor(): Actor<SessionMachine> {
    return this.live ?? this.wake(this.dormant);
  }

  private wake(snapshot: unknown): Actor<SessionMachine> {
    const a = createActor(this.machine, {
      input: this.input(),
      ...(snapshot ? { snapshot: snapshot as any } : {}),
      ...(this.inspect ? { inspect: this.inspect } : {}),
    });
    const effects = this.effects;
    a.on('*', ((e: SessionEffect) => effects.push(e)) as any);
    a.start();
    this.live = a;
    this.dormant = null;
    return a;
  }

  /**
   * Keep only the persisted snapshot. With an inspector attached the actor stays live (the
   * inspector sees one actor per session, not a new one per turn); a compiled run is its snapshot.
   */
  sleep(): void {
    if (this.run || !this.live || this.inspect || this.stopped) return;
    this.dormant = this.persisted();
    this.persistedOf = this.persistedSnap = null;
    this.live.stop();
    this.live = null;
  }

  send(event: SessionMachineEvent): void {
    if (this.stopped) return;
    if (this.run) this.run.handle(event, this.effects);
    else this.actor.send(event);
  }

  /**
   * What resumes the turn while the machine holds it (the `resumeOn` its held state carries:
   * 'approval-response', 'peer-envelope', ...), as TurnOutcome and SessionSnapshot carry it;
   * undefined while the turn works, ends or is absent.
   */
  held(): { resumeOn: string } | undefined {
    const resumeOn = (this.machine.root.states.turn?.states[this.state()]?.meta as { resumeOn?: string } | undefined)?.resumeOn;
    return resumeOn === undefined ? undefined : { resumeOn };
  }

  /** Whether the machine would take `event` now (its guards decide; nothing is executed). */
  can(event: SessionMachineEvent): boolean {
    if (this.stopped) return false;
    return this.run ? this.run.can(event) : this.actor.getSnapshot().can(event);
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
    if (this.run) {
      const run = compiledSessionRun(next, snapshot);
      if (run) {
        this.machine = next;
        this.run = run;
        return;
      }
      this.run = null;
    }
    this.live?.stop();
    this.live = null;
    this.machine = next;
    this.wake(snapshot);
  }

  /** 'idle', or the current turn-state node (a label for events and snapshots). */
  state(): string {
    if (this.run) return labelOf(this.run.value);
    if (!this.live) return ((this.dormant as { value?: unknown } | null)?.value as string) ?? 'idle';
    return labelOf(this.live.getSnapshot().value);
  }

  context(): SessionContext {
    if (this.run) return this.run.ctx as unknown as SessionContext;
    return this.live ? this.live.getSnapshot().context : (this.dormant as { context: SessionContext }).context;
  }

  /** The acting actor of the current turn (the entry actor between turns). */
  actingActor(): string {
    const c = this.context();
    return c.actor ?? c.entryActor;
  }

  persisted(): unknown {
    if (this.run) return this.run.persisted();
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

/** 'idle', or the turn-state node of a state value. */
function labelOf(value: unknown): string {
  if (typeof value === 'string') return value;
  const t = (value as { turn: string | Record<string, unknown> }).turn;
  return typeof t === 'string' ? t : Object.keys(t)[0]!;
}
