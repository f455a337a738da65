/**
 * The handle callers hold for a session (`SessionHandle`). It finds its session's live host on
 * every call, so a handle kept across passivation wakes the session instead of going stale.
 * Methods live on the prototype: a handle costs one small object per session.
 */
import { defer, from, switchMap } from 'rxjs';
import type { SessionHandle } from '../api.js';
import { normalizeConsumes } from '../envelope/consumers.js';
import { TurnstateError } from '../errors.js';
import { formatValue } from '../limits.js';
import type { PartTypeRegistryApi } from '../registries/types.js';
import type { SessionRecord } from '../types.js';
import { checkAnswer } from './approval-answers.js';
import { checkSend } from './input-checks.js';
import { containSubscribers } from './journal.js';
import type { SessionHost } from './session-host.js';

export class SessionRef implements SessionHandle {
  constructor(
    readonly id: string,
    readonly record: SessionRecord,
    /** The live host, woken from the store if need be (throws when the session is gone). */
    private readonly live: (id: string) => Promise<SessionHost>,
    /** The live host if there is one, without waking anything. */
    private readonly peek: (id: string) => SessionHost | undefined,
    private readonly partTypes: PartTypeRegistryApi,
  ) {}
  async send(m: Parameters<SessionHandle['send']>[0], o?: Parameters<SessionHandle['send']>[1]) {
    // Checked before anything is accepted; the turn persists the part type names, never a card.
    checkSend(m, o);
    const opts = normalizeConsumes(o, this.partTypes);
    return (this.peek(this.id) ?? (await this.live(this.id))).send(m, opts);
  }
  async inject(i: Parameters<SessionHandle['inject']>[0]) {
    return (await this.live(this.id)).inject(i);
  }
  async answerApproval(...a: Parameters<SessionHandle['answerApproval']>) {
    // Checked before the session is looked up (or woken); runtime.answerApproval checks the same.
    checkAnswer(a[1], a[2], a[3]);
    return (await this.live(this.id)).answerApproval(...a);
  }
  persistNow(): void {
    this.peek(this.id)?.persistNow();
  }
  async updateTurnTools(turnId: string, tools: Parameters<SessionHandle['updateTurnTools']>[1], metadata?: Record<string, unknown>) {
    checkSend(metadata === undefined ? undefined : { metadata }, tools);
    return (await this.live(this.id)).updateTurnTools(turnId, tools, metadata);
  }
  events(afterSeq?: number) {
    // Refused here, naming this call (not the store's readEvents that would meet it later). A cursor
    // past the end of the log is refused when the subscription starts (Journal.events).
    if (afterSeq !== undefined && !(typeof afterSeq === 'number' && Number.isSafeInteger(afterSeq) && afterSeq >= 0)) {
      throw new TurnstateError('cursor.invalid', `events(afterSeq): afterSeq must be a non-negative integer seq (0: from the start), got ${formatValue(afterSeq)}`);
    }
    // The host is found when someone subscribes, not now: an observable kept across passivation
    // subscribes to the session as it is then (the live host, or one reactivated from the store).
    // A subscriber that throws is reported, never rethrown into the process (containSubscribers).
    return containSubscribers(
      this.id,
      defer(() => {
        const h = this.peek(this.id);
        return h ? h.events(afterSeq) : from(this.live(this.id)).pipe(switchMap((x) => x.events(afterSeq)));
      }),
    );
  }
  async snapshot() {
    return (await this.live(this.id)).snapshot();
  }
  async mailbox() {
    return (await this.live(this.id)).mailbox();
  }
  async executions() {
    return (await this.live(this.id)).executions();
  }
  async surfaces() {
    return (await this.live(this.id)).surfaces();
  }
  async idle() {
    return this.peek(this.id)?.idle();
  }
}
