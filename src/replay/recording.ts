/**
 * A recorded session as read from a store, and the model that plays its recorded outputs back.
 */
import { ModelError, TurnstateError, isModelErrorCode } from '../errors.js';
import type { ModelEvent, ModelPort, ModelRequest, SessionStore } from '../api.js';
import type { SessionRecord } from '../types.js';
import type { ApprovalRecord, ContentBlock, ExecutionRecord, MailboxEntry, ModelStopReason, SessionEvent, Usage } from '../types.js';

export interface Recording {
  record: SessionRecord;
  events: SessionEvent[];
  mailbox: MailboxEntry[];
  executions: ExecutionRecord[];
  approvals: ApprovalRecord[];
}

/** A recording that cannot be replayed as asked (unknown session, missing recorded output, ...). */
export class ReplayError extends TurnstateError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'ReplayError';
  }
}

/** A turn's injections: its user entries after its input (the first one, whatever its text), in order. */
export function injectionEntries(rec: Recording, turnId: string): Extract<MailboxEntry, { kind: 'user' }>[] {
  const out: Extract<MailboxEntry, { kind: 'user' }>[] = [];
  let input = true;
  for (const m of rec.mailbox) {
    if (m.kind !== 'user' || m.turnId !== turnId) continue;
    if (input) input = false;
    else out.push(m);
  }
  return out;
}

/** The turn a recording ends in the middle of, with the state it was in (see endedMidTurn). */
export interface MidTurnEnd {
  index: number;
  turnId: string;
  state: string;
}

/**
 * The recording's last turn when it ends in the middle of it: not settled, and not resting in a
 * state that holds the actor (waiting for an approval, a client result or an injection). Its
 * process stopped and the session was never recovered, or the turn was still running when the
 * recording was read. `turnStates` says which states hold (the re-run's registrations).
 */
export function endedMidTurn(rec: Recording, turnStates: { get(id: string): { meta: { holdsActor: boolean } } | undefined }): MidTurnEnd | undefined {
  let index = -1;
  let turnId: string | undefined;
  let state: string | undefined;
  let settled = false;
  for (const e of rec.events) {
    if (e.type === 'turn.started' && e.turnId !== turnId) {
      index++;
      turnId = e.turnId;
      state = undefined;
      settled = false;
    } else if (e.turnId === turnId) {
      if (e.type === 'turn.settled') settled = true;
      else if (e.type === 'turnState.changed') state = e.to;
    }
  }
  if (turnId === undefined || settled) return undefined;
  // A turn that never changed state is in its first one, which holds nothing.
  if (state !== undefined && turnStates.get(state)?.meta.holdsActor === true) return undefined;
  return { index, turnId, state: state ?? 'awaiting' };
}

/** Everything the store holds about one session. */
export async function readRecording(store: SessionStore, sessionId: string): Promise<Recording> {
  const record = await store.getSession(sessionId);
  if (!record) {
    const known = (await store.listSessions()).map((s) => s.id);
    throw new ReplayError(
      'replay.session_not_found',
      `no session "${sessionId}" in the ${store.kind} store${known.length ? ` (sessions: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', ...' : ''})` : ' (it holds no sessions)'}`,
    );
  }
  const [events, mailbox, executions, approvals] = await Promise.all([
    store.readEvents(sessionId, 0),
    store.readMailbox(sessionId),
    store.readExecutions(sessionId),
    store.listApprovals({ sessionId }),
  ]);
  return { record, events, mailbox, executions, approvals };
}

interface RecordedCall {
  content: ContentBlock[];
  usage: Usage;
  stopReason: ModelStopReason;
}

export interface RecordedModel extends ModelPort {
  /** Model calls answered from the recording. */
  readonly calls: number;
}

/**
 * A ModelPort that answers each request with the next recorded response of the same
 * (turn, actor), in order; nothing is called. A turn whose recorded model call failed fails
 * the same way. A request the recording has no answer for fails with a clear ModelError.
 */
export function createRecordedModel(rec: Recording): RecordedModel {
  const queues = new Map<string, RecordedCall[]>();
  const usages = new Map<string, { usage: Usage; stopReason?: ModelStopReason }[]>();
  const key = (turnId: string, actor: string) => `${turnId}\u0000${actor}`;
  for (const e of rec.events) {
    if (e.type !== 'model.usage') continue;
    const k = key(e.turnId, e.actor);
    let q = usages.get(k);
    if (!q) usages.set(k, (q = []));
    q.push(e.stopReason ? { usage: e.usage, stopReason: e.stopReason } : { usage: e.usage });
  }
  for (const m of rec.mailbox) {
    if (m.kind !== 'assistant') continue;
    const k = key(m.turnId, m.actor);
    let q = queues.get(k);
    if (!q) queues.set(k, (q = []));
    const u = usages.get(k)?.[q.length];
    const stopReason = u?.stopReason ?? (m.content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    q.push({ content: m.content, usage: u?.usage ?? { inputTokens: 0, outputTokens: 0 }, stopReason });
  }
  const failures = new Map<string, { code: string; message: string }>();
  for (const e of rec.events) {
    if (e.type === 'turn.settled' && e.error && e.error.code.startsWith('model.')) failures.set(e.turnId, e.error);
  }
  let calls = 0;
  return {
    name: 'recorded',
    get calls() {
      return calls;
    },
    stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
      const next = queues.get(key(req.turnId, req.actor))?.shift();
      return play(next, req, signal, failures.get(req.turnId), () => calls++);
    },
  };
}

async function* play(
  call: RecordedCall | undefined,
  req: ModelRequest,
  signal: AbortSignal,
  failure: { code: string; message: string } | undefined,
  count: () => void,
): AsyncGenerator<ModelEvent> {
  if (signal.aborted) throw new ModelError('model.aborted', 'model call aborted');
  if (!call) {
    if (failure) {
      // A recorded code outside MODEL_ERROR_CODES (a model port of the embedder's own threw it) is
      // no ModelError code: replayed as model.unknown, naming it.
      if (isModelErrorCode(failure.code)) throw new ModelError(failure.code, failure.message);
      throw new ModelError('model.unknown', `replay: the recorded model call failed with "${failure.code}", which is not a ModelError code: ${failure.message}`);
    }
    throw new ModelError(
      'model.invalid_request',
      `replay: the recording holds no further model output for actor "${req.actor}" in turn ${req.turnId}`,
    );
  }
  count();
  let index = 0;
  for (const block of call.content) {
    if (block.type === 'tool_use') {
      yield { type: 'block.start', index, block: { type: 'tool_use', id: block.id, name: block.name } };
      yield { type: 'input.delta', index, partialJson: JSON.stringify(block.input ?? {}) };
    } else if (block.type === 'text') {
      yield { type: 'block.start', index, block: { type: 'text' } };
      yield { type: 'text.delta', index, text: block.text };
    } else if (block.type === 'thinking') {
      yield { type: 'block.start', index, block: { type: 'thinking' } };
      yield { type: 'thinking.delta', index, text: block.thinking };
    }
    yield { type: 'block.stop', index, block };
    index++;
  }
  yield { type: 'message.stop', stopReason: call.stopReason, usage: call.usage, content: call.content };
}
