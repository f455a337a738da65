/**
 * The effect loop: executes, in order, the effects the session machine emits, and sends each
 * outcome back as an event. One loop per turn at a time; it stops when the turn waits (`hold`) or
 * has settled (`settle`), and runs again when an event (a resume) queues new effects.
 *
 * What executed effects publish is buffered and committed at the next boundary (before a model
 * call, a dispatch, a hold or a settlement), with the machine's snapshot when the turn state
 * changed.
 */
import type { TurnOutcome } from '../api.js';
import type { SessionEffect, SettleEffect } from '../machines/session.machine.js';
import { TurnstateError } from '../errors.js';
import type { MailboxEntry, Part, SessionEvent } from '../types.js';
import type { HostCore } from './core.js';
import { compatNudge } from './compat-turn.js';
import { carryJoined } from './double-texting.js';
import { callModel, compatFallback, partEvents } from './model-call.js';
import { settlement } from './settlement.js';
import { dispatchTools } from './tool-dispatch.js';
import { userEntry, userFacingModelError, type ActiveTurn } from './turn.js';

/** What the loop does after an effect: go on, or stop because the turn waits or has settled. */
const GO_ON = 0;
const HELD = 1;
const SETTLED = 2;

/** What the loop needs from the session that owns it. */
export interface LoopOwner extends HostCore {
  /** Joined messages the turn never answered become turns of their own, first in line. */
  requeue(t: ActiveTurn): void;
  /** The turn is over (settled, or abandoned because the store failed). */
  endTurn(): void;
  /** Start the next queued turn, or go idle. */
  next(): void;
  /** No turn runs any more: release whoever waits for the session to be idle. */
  released(): void;
  /** The store refused a write the turn needed: this host gives way to one restored from the store. */
  writeFailed(): void;
}

export class EffectLoop {
  /** What executed effects published and is not committed yet. */
  private out: SessionEvent[] = [];
  private outMailbox: MailboxEntry[] = [];
  /** A turn-state change is among `out`: the next commit carries the snapshot. */
  private changed = false;

  constructor(private readonly host: LoopOwner) {}

  /** Publish with the next commit (parts that must come before the effects queued now). */
  publish(events: readonly SessionEvent[]): void {
    for (const e of events) this.out.push(e);
  }

  /**
   * A state-changing call's parts, published before the change itself (respond(): parts, then
   * the state); a hand-off hands them over.
   */
  publishChange(t: ActiveTurn, actor: string, change: { callId: string; result: Parameters<typeof partEvents>[3] }): void {
    this.publish(partEvents(this.host, t, actor, change.result, change.callId));
    t.handoffParts = change.result.call.parts;
  }

  /** Execute queued effects until the turn waits or settles. One loop per turn at a time. */
  async pump(t: ActiveTurn): Promise<void> {
    if (t.running) return;
    t.running = true;
    let end = GO_ON;
    try {
      do {
        try {
          end = await this.drain(t);
        } catch (err) {
          end = await this.fail(t, err);
        }
        // Effects queued while the loop was stopping (a resume racing a hold) run now.
      } while (end === HELD && this.host.machine.effects.length > 0 && !this.host.closed && this.host.turn === t);
    } finally {
      t.running = false;
    }
  }

  private async drain(t: ActiveTurn): Promise<number> {
    const effects = this.host.machine.effects;
    while (effects.length > 0) {
      if (this.host.closed) return GO_ON;
      // Most effects only add to what the next commit publishes: no await (no microtask) for them.
      let end = this.execute(t, effects.shift()!);
      if (typeof end !== 'number') end = await end;
      if (end !== GO_ON) return end;
    }
    const f = this.flush();
    if (f) await f;
    return GO_ON;
  }

  private execute(t: ActiveTurn, fx: SessionEffect): number | Promise<number> {
    switch (fx.type) {
      case 'state.changed':
        this.out.push(this.host.journal.stateChanged(t.turnId, fx.from, fx.to, fx.actor, fx.resumedBy));
        this.changed = true;
        return GO_ON;
      case 'actor.passed': {
        // The hand-off's record: the receiver's history shows what the sender handed over.
        const parts = t.handoffParts ?? [];
        this.outMailbox.push({ kind: 'handoff', turnId: t.turnId, at: this.host.deps.clock.iso(), from: fx.from, to: fx.to, parts });
        this.out.push(this.host.journal.event(t.turnId, { type: 'actor.passed', from: fx.from, to: fx.to }));
        return GO_ON;
      }
      case 'fail': {
        t.stop = fx.stop ?? 'error';
        // A spent retry budget says why the last call was refused.
        const why = fx.code === 'turn.respond_retries' && t.lastRejection !== undefined ? `; the last refusal: ${t.lastRejection}` : '';
        t.error = { code: fx.code, message: fx.message + why };
        if (fx.userText) {
          const part: Part = { text: fx.userText, metadata: { partType: 'error', code: fx.code } };
          t.parts.push(part);
          this.out.push(this.host.journal.partReceived(t.turnId, `${t.turnId}:runtime`, 0, part, 'error', this.host.machine.actingActor()));
        }
        return GO_ON;
      }
      case 'join':
        return GO_ON;
      case 'model.next': {
        const f = this.flush();
        if (f) return f.then(() => this.call());
        return this.call();
      }
      case 'model.call':
        return this.callModel(t);
      case 'tools.dispatch':
        return this.dispatch(t);
      case 'fallback': {
        const actor = this.host.deps.registries.actors.get(this.host.machine.actingActor());
        const fb = actor ? compatFallback(t, actor) : undefined;
        if (fb) this.publish(partEvents(this.host, t, actor!.name, fb.result, fb.callId));
        return GO_ON;
      }
      case 'nudge':
        this.outMailbox.push(
          fx.compat
            ? compatNudge(t.turnId, this.host.deps.clock.iso(), this.host.machine.actingActor())
            : {
                kind: 'nudge',
                turnId: t.turnId,
                at: this.host.deps.clock.iso(),
                actor: this.host.machine.actingActor(),
                text: `Your last message${fx.freeText ? ' contained text outside respond() and' : ''} was not delivered to anyone. Produce all output by calling the respond() tool.`,
              },
        );
        return GO_ON;
      case 'hold':
        return this.hold(t, fx.state);
      case 'settle':
        return this.settle(t, fx).then(() => SETTLED);
    }
  }

  /** The loop is ready for its next model call: the machine checks the budget (`model.call` or a failure). */
  private call(): number {
    this.host.machine.send({ type: 'CALL' });
    return GO_ON;
  }

  private async dispatch(t: ActiveTurn): Promise<number> {
    const f = this.flush();
    if (f) await f;
    const r = t.response!;
    await dispatchTools(this.host, t, r.actor, r.toolUses, r.tools);
    // The tools are done: the machine holds the turn for pending calls or calls the model.
    this.host.machine.send({ type: 'CALL', pending: t.pending.size });
    return GO_ON;
  }

  private async hold(t: ActiveTurn, state: string): Promise<number> {
    const f = this.flush();
    if (f) await f;
    this.host.journal.barrier();
    const outcome: TurnOutcome = { turnId: t.turnId, finalizedBy: state, parts: t.parts.slice(), usage: t.usage };
    const held = this.host.machine.held();
    if (held !== undefined) outcome.held = held;
    t.resolve(outcome);
    return HELD;
  }

  /** Commit what executed effects published (with the snapshot when the turn state changed). */
  flush(withSnapshot = this.changed): void | Promise<void> {
    if (this.out.length === 0 && this.outMailbox.length === 0 && !withSnapshot) return;
    const step = { events: this.out, ...(this.outMailbox.length ? { mailbox: this.outMailbox } : {}) };
    this.out = [];
    this.outMailbox = [];
    this.changed = false;
    return this.host.journal.commit(step, withSnapshot);
  }

  /** One model call; its outcome goes back to the machine. */
  private async callModel(t: ActiveTurn): Promise<number> {
    const f = this.flush();
    if (f) await f;
    const actorName = this.host.machine.actingActor();
    const actorDef = this.host.deps.registries.actors.get(actorName);
    if (!actorDef) throw new TurnstateError('actor.unknown', `no actor named "${actorName}" is registered`);
    const tools = this.host.deps.catalog.forActor(actorDef, t.opts);
    if (t.joined.length) {
      const at = this.host.deps.clock.iso();
      const messages = carryJoined(t);
      const mailbox = messages.map((m) => userEntry(t.turnId, at, m));
      // Published as the model takes them in: from here they are this turn's conversation.
      const events = messages.map((input) => this.host.journal.event(t.turnId, { type: 'message.joined', input }));
      await this.host.journal.commit({ events, mailbox }, true);
    }
    const o = await callModel(this.host, t, actorDef, tools);
    switch (o.kind) {
      case 'stopped':
        return GO_ON;
      case 'interrupted':
        if (o.written) await o.written;
        this.host.machine.send({ type: 'INTERRUPTED' });
        return GO_ON;
      case 'failed':
        if (o.written) await o.written;
        this.host.machine.send({ type: 'FAIL', code: o.error.code, message: o.error.message, userText: userFacingModelError(o.error), stop: 'error' });
        return GO_ON;
      case 'response': {
        t.response = { actor: actorName, tools, toolUses: o.toolUses };
        if (o.change) this.publishChange(t, actorName, o.change);
        // Told before the response's records are awaited: from here the machine knows where the
        // turn goes (a double-texted message sees a turn that is ending, and queues). The summary
        // is all it gets: its guards decide whether a requested state change is one it knows.
        this.host.machine.send({ type: 'MODEL_DONE', ...o.summary });
        if (o.written) await o.written;
        return GO_ON;
      }
    }
  }

  /** Settle the turn: its events, the joined messages it never answered as turns, the outcome. */
  private async settle(t: ActiveTurn, fx: SettleEffect): Promise<void> {
    await this.flush(false);
    const { events, outcome } = await settlement(this.host, t, fx);
    // Stopped while settling (close, deletion): nothing more is recorded; recover() settles it.
    if (this.host.closed) return;
    // A message that joined too late for the model to see it is not lost: it becomes a turn.
    this.host.requeue(t);
    this.host.machine.send({ type: 'SETTLE' });
    this.host.endTurn();
    try {
      await this.host.journal.commit({ events }, true);
      this.host.journal.barrier();
    } catch (err) {
      // The settlement was not written (in the store the turn has not settled: it resumes there).
      this.giveUp(t, errorOf(err, 'store.write_failed'));
      return;
    }
    t.resolve(outcome);
    // At once, as the sender learns of the settlement: the next queued turn starts, or the
    // session goes idle (and sleeps) before anything the sender does next.
    this.host.next();
  }

  /** An error inside the loop fails the turn through the machine; if even that fails, waiters are released. */
  private async fail(t: ActiveTurn, err: unknown): Promise<number> {
    // A host stopped mid-step (shutdown, passivation) records nothing more; recover() resumes it.
    if (this.host.closed || this.host.turn !== t) return GO_ON;
    const error = errorOf(err, 'runtime.internal');
    const { code, message } = error;
    // What the failed step had not committed never happened.
    this.host.machine.effects.length = 0;
    this.out = [];
    this.outMailbox = [];
    this.changed = false;
    try {
      t.stop = 'error';
      t.error = { code, message };
      const effects = this.host.machine.ask({ type: 'FAIL', code, message });
      // Not taken: the turn was already ending, so it settles where it stands.
      if (effects.length === 0) this.host.machine.send({ type: 'RECOVER' });
      else this.host.machine.effects.push(...effects);
      if (this.host.machine.effects.length === 0) throw err;
      return await this.drain(t);
    } catch {
      // The store itself failed: nothing more can be recorded.
      this.giveUp(t, error);
      return GO_ON;
    }
  }

  /**
   * Nothing more can be recorded for `t`: its sender learns the turn failed with `error`, waiters
   * are released, and the host gives way to one restored from the store.
   */
  private giveUp(t: ActiveTurn, error: { code: string; message: string }): void {
    this.host.machine.effects.length = 0;
    t.resolve({ turnId: t.turnId, finalizedBy: 'error', stop: 'error', parts: t.parts, usage: t.usage, error });
    this.host.endTurn();
    this.host.released();
    this.host.writeFailed();
  }
}

/** A thrown value as a turn's error: a TurnstateError's code, else `fallback`. */
function errorOf(err: unknown, fallback: string): { code: string; message: string } {
  return { code: err instanceof TurnstateError ? err.code : fallback, message: err instanceof Error ? err.message : String(err) };
}
