/**
 * Injections into a held turn: a client-side tool's result, a peer agent's envelope, or a resume
 * payload. Each is journaled before the turn moves on; the machine decides whether the turn
 * resumes (`RESUME` with the state's `resumeOn`, or once no call is pending).
 *
 * A peer's envelope (spec 000 `delegated`: "streaming of the peer's envelope as it arrives") is
 * written, in one step before the turn resumes: as the model reads it (a user entry
 * `[peer-envelope] <json>`, which replay injects again), as a data-bearing record of the turn
 * (its domain-data, which settlement merges under `/peer`), and as `part.received` events of its
 * deliverable parts (registered part types that belong in an envelope), in the held state. Their
 * callId is `<turnId>:peer-envelope:<n>`, n counting the turn's peer envelopes from 0; they are
 * the peer's parts, never the actor's (recovery leaves them out of the turn's parts).
 */
import type { Injection, TurnRef } from '../api.js';
import { PEER_DATA_KEY, peerData } from '../envelope/assemble.js';
import { TurnstateError } from '../errors.js';
import type { SessionMachineEvent } from '../machines/session.machine.js';
import type { Envelope, MailboxEntry, Part, SessionEvent } from '../types.js';
import { needsSurfaces, sessionOf, type HostCore } from './core.js';
import { outcomeStep } from './tool-results.js';
import { ANSWERED, type ActiveTurn } from './turn.js';

/** What an injection needs of the session it lands in. */
export interface HeldSession extends HostCore {
  /** 'idle', or the current turn-state node. */
  turnState(): string;
  /** A pending call was answered: resumes the turn when none is left. */
  answered(t: ActiveTurn): TurnRef;
  /** Resumes a held turn if the machine takes `event`. */
  resume(t: ActiveTurn, event: SessionMachineEvent): TurnRef | undefined;
}

export async function inject(s: HeldSession, injection: Injection): Promise<TurnRef | undefined> {
  checkInjection(injection);
  const t = s.turn;
  switch (injection.kind) {
    case 'client-tool-result': {
      const p = t?.pending.get(injection.callId);
      if (!t || !p || p.kind !== 'client') {
        const waiting = t ? [...t.pending.values()].filter((x) => x.kind === 'client').map((x) => x.callId) : [];
        throw new TurnstateError(
          'injection.unknown_call',
          `no client-side tool call ${injection.callId} is pending in session ${s.id}` + (waiting.length ? `; pending: ${waiting.join(', ')}` : '; none is pending'),
          { details: { callId: injection.callId, pending: waiting } },
        );
      }
      t.pending.delete(p.callId);
      await s.journal.commit(
        outcomeStep(s.journal, s.deps.clock.iso(), {
          turnId: t.turnId,
          actor: s.machine.actingActor(),
          callId: p.callId,
          tool: p.tool,
          content: injection.content,
          isError: !!injection.isError,
        }),
      );
      return s.answered(t);
    }
    case 'peer-envelope':
    case 'resume': {
      const resumeOn = injection.kind === 'peer-envelope' ? 'peer-envelope' : injection.resumeOn;
      const resume: SessionMachineEvent = { type: 'RESUME', resumeOn };
      // Pending calls hold the turn until they are answered (answerApproval, client-tool-result),
      // and where the machine rests a turn for its calls (it would take ANSWERED) only their
      // answers resume it, never an injection. Otherwise the machine decides whether the state
      // the turn rests in resumes on this kind: a consumer's holding state may name
      // `approval-response` too (a human's sign-off).
      if (t && (t.pending.size > 0 || s.machine.can(ANSWERED))) {
        const pending = [...t.pending.values()].map((p) => `${p.callId} (${p.kind === 'client' ? 'a client tool result' : `approval ${p.approvalId}`})`);
        throw new TurnstateError(
          'injection.not_waiting',
          `session ${s.id} waits for answers to its pending calls, not a "${resumeOn}" injection: ${pending.length ? pending.join(', ') : 'answer them with answerApproval or a client-tool-result'}`,
          { details: { pending: [...t.pending.keys()] } },
        );
      }
      // One injection resumes a hold: a second one arriving while the first is written is refused.
      if (!t || t.resuming || !s.machine.can(resume)) {
        throw new TurnstateError('injection.not_waiting', `session ${s.id} is not waiting for "${resumeOn}" (state: ${t?.resuming ? `${s.turnState()}, already being resumed` : s.turnState()})`);
      }
      const text = injection.kind === 'peer-envelope' ? JSON.stringify(injection.envelope) : JSON.stringify(injection.payload ?? null);
      t.resuming = true;
      try {
        const at = s.deps.clock.iso();
        const mailbox: MailboxEntry[] = [{ kind: 'user', turnId: t.turnId, at, text: `[${resumeOn}] ${text}` }];
        const events = injection.kind === 'peer-envelope' ? await peerEnvelopeStep(s, t.turnId, at, injection.envelope, mailbox) : [];
        await s.journal.commit({ events, mailbox });
      } finally {
        t.resuming = false;
      }
      return s.resume(t, resume)!;
    }
  }
}

/** The callId of the parts and the data record of a turn's peer envelopes: `<turnId>:peer-envelope:<n>`. */
export function peerCallPrefix(turnId: string): string {
  return `${turnId}:${PEER_ENVELOPE}:`;
}

const PEER_ENVELOPE = 'peer-envelope';

/** Adds a peer envelope's data record to `mailbox` and returns the events of its deliverable parts. */
async function peerEnvelopeStep(s: HeldSession, turnId: string, at: string, envelope: Envelope, mailbox: MailboxEntry[]): Promise<SessionEvent[]> {
  // The n-th peer envelope of the turn (the user entries written before this one).
  const prefix = `[${PEER_ENVELOPE}] `;
  const written = await s.journal.mailbox();
  let n = 0;
  for (let i = written.length - 1; i >= 0 && written[i]!.turnId === turnId; i--) {
    const m = written[i]!;
    if (m.kind === 'user' && m.text.startsWith(prefix)) n++;
  }
  const callId = `${peerCallPrefix(turnId)}${n}`;
  const actor = s.machine.actingActor();
  // A peer is outside the runtime: a copy (the caller keeps its objects), and only the parts that
  // pass the checks an actor's own respond() part passes (shape, registered type, content checks
  // such as A2UI's; a runtime-only type such as approval-request never), each in its own call.
  const raw: unknown[] = Array.isArray(envelope.parts) ? structuredClone(envelope.parts) : [];
  const parts: { part: Part; index: number }[] = [];
  if (needsSurfaces(raw)) await s.journal.liveSurfaces();
  const session = sessionOf(s);
  for (let i = 0; i < raw.length; i++) {
    const r = s.deps.parser.parse({ parts: [raw[i]], turnState: 'complete' }, { actor, handoffs: [], ...session });
    if (r.ok) parts.push({ part: r.call.parts[0]!, index: i });
  }
  const data = peerData(parts.map((p) => p.part));
  if (data !== undefined) mailbox.push({ kind: 'data', turnId, at, actor, callId, tool: PEER_DATA_KEY, data, from: 'peer' });
  const partTypes = s.deps.registries.partTypes;
  const state = s.turnState();
  const events: SessionEvent[] = [];
  for (const { part, index } of parts) {
    if (partTypes.get(part.metadata.partType)?.meta.inEnvelope) events.push(s.journal.partReceived(turnId, callId, index, part, state, actor));
  }
  return events;
}

const KINDS = ['client-tool-result', 'peer-envelope', 'resume'];

/** Refused before anything is looked at: an injection of no known kind, or without what its kind needs. */
function checkInjection(injection: Injection): void {
  const i = injection as { kind?: unknown; callId?: unknown; content?: unknown; resumeOn?: unknown; envelope?: unknown } | null;
  const kind = i !== null && typeof i === 'object' ? i.kind : undefined;
  let problem: string | undefined;
  if (typeof kind !== 'string' || !KINDS.includes(kind)) problem = `kind must be one of ${KINDS.map((k) => `"${k}"`).join(', ')}, got ${JSON.stringify(kind) ?? 'undefined'}`;
  else if (kind === 'client-tool-result' && (typeof i!.callId !== 'string' || typeof i!.content !== 'string')) problem = 'a client-tool-result needs a string callId and a string content';
  else if (kind === 'resume' && (typeof i!.resumeOn !== 'string' || i!.resumeOn === '')) problem = 'a resume needs a non-empty resumeOn';
  else if (kind === 'peer-envelope' && (i!.envelope === null || typeof i!.envelope !== 'object')) problem = 'a peer-envelope needs an envelope object';
  if (problem !== undefined) throw new TurnstateError('injection.invalid', `inject(): ${problem}; nothing was injected`);
}
