/**
 * What reached a recorded turn while it ran, replayed at the matching point of the re-run:
 *
 * - the turn's tool settings: the send's (SendOptions `enabledTools`, `howToEnableTools`,
 *   `standingApprovals`, `clientTools`) and each `turnTools.changed` (SessionHandle.updateTurnTools).
 *   A recording does not hold the send's settings; they are inferred from what they did: standing
 *   approvals from the approvals they gave, client tools from the client calls, and enabledTools
 *   (with howToEnableTools) from calls refused as not enabled, compared with the runtime's own
 *   refusal text. A change is applied through `updateTurnTools` at its point: while the call it
 *   came during runs (before that call's result is served), while the turn waits (before the
 *   answer that came after it), else as the model call it came before starts.
 * - messages that joined the turn (`message.joined`, double-texting `interrupt`): each is sent
 *   again as the model call that took it in starts; that call is cut (it has applied nothing) and
 *   made again with the message, as the runtime does when a message joins a running call.
 *
 * What could not be placed is named in `notes()`.
 */
import type { SendOptions, SessionHandle, TurnTools } from '../api.js';
import { toolNotEnabledMessage } from '../host/tool-catalog.js';
import type { Registries } from '../registries/types.js';
import type { ClientTool, InboundMessage, SessionEvent } from '../types.js';
import type { Recording } from './recording.js';

type Event<T extends SessionEvent['type']> = Extract<SessionEvent, { type: T }>;

/** Where a tool refused as not enabled got its text: `how` is howToEnableTools with the tool's name in it (undefined: the default). */
export function notEnabledHow(tool: string, text: unknown): { how: string | undefined } | undefined {
  if (typeof text !== 'string') return undefined;
  if (text === toolNotEnabledMessage(tool, undefined)) return { how: undefined };
  const mark = '\u0000';
  const [head, tail] = toolNotEnabledMessage(tool, mark).split(mark);
  if (head === undefined || tail === undefined || text.length < head.length + tail.length || !text.startsWith(head) || !text.endsWith(tail)) return undefined;
  return { how: text.slice(head.length, text.length - tail.length) };
}

interface Change {
  seq: number;
  tools: TurnTools;
  metadata?: Record<string, unknown>;
  applied: boolean;
}

interface Join {
  /** Model calls of the turn that completed before the message joined it. */
  before: number;
  input: InboundMessage;
  sent: boolean;
}

interface TurnRecord {
  index: number;
  changes: Change[];
  joins: Join[];
  /** The seq of each completed model call's `model.usage`, in order. */
  usage: number[];
  /** Per call id: the seq of its `tool.result`. */
  results: Map<string, number>;
  /** Per call id: the seq of its `tool.called`. */
  called: Map<string, number>;
  /** Calls refused as not enabled: tool, text, seq. */
  refused: { tool: string; text: string; seq: number }[];
  clientCalls: { tool: string; seq: number }[];
  /** The seq of the event that answered each call of the turn (its approval's resolution or its client result), by tool_use id: ids are unique within a turn, not across turns. */
  answers: Map<string, number>;
  /** The turn's client calls, by tool_use id. */
  clientIds: Set<string>;
}

export interface TurnPoints {
  /** The re-run's session (its joined messages and tool settings go to it). */
  attach(session: SessionHandle): void;
  /** Whether the recording has messages that joined a running turn (the session must let them join). */
  readonly joins: boolean;
  /** The tool settings to send turn `turnId`'s input with, as the recording shows them. */
  sendOptions(turnId: string, registries: Registries): Pick<SendOptions, 'enabledTools' | 'howToEnableTools' | 'standingApprovals' | 'clientTools'>;
  /** Model call `k` (0-based, completed calls before it) of the turn starts; true: a message joined it here, so the call is cut. */
  beforeModelCall(turnId: string, k: number): Promise<boolean> | undefined;
  /** The re-run is about to serve the recorded result of call `recordedCallId`. */
  beforeResult(turnId: string, recordedCallId: string | undefined): Promise<void> | undefined;
  /** The re-run is about to answer the waiting turn as the recording did at `seq`. */
  beforeAnswer(turnId: string, seq: number): Promise<void> | undefined;
  /** The seq of the event that answered a recorded call: its approval's resolution or its client result. */
  answerSeq(turnId: string, callId: string): number;
  /** The turn is over in the re-run: what was not applied or sent is a note. */
  turnDone(turnId: string): void;
  notes(): string[];
}

export function turnPoints(rec: Recording): TurnPoints {
  const turns = new Map<string, TurnRecord>();
  const denied = new Set<string>();
  for (const e of rec.events) {
    let t = turns.get(e.turnId);
    if (e.type === 'turn.started' && !t) {
      turns.set(e.turnId, (t = { index: turns.size, changes: [], joins: [], usage: [], results: new Map(), called: new Map(), refused: [], clientCalls: [], answers: new Map(), clientIds: new Set() }));
      continue;
    }
    if (!t) continue;
    switch (e.type) {
      case 'turnTools.changed':
        t.changes.push({ seq: e.seq, tools: e.tools, ...(e.metadata ? { metadata: e.metadata } : {}), applied: false });
        break;
      case 'message.joined':
        t.joins.push({ before: t.usage.length, input: e.input, sent: false });
        break;
      case 'model.usage':
        t.usage.push(e.seq);
        break;
      case 'tool.called':
        t.called.set(e.callId, e.seq);
        if (e.side === 'client') {
          t.clientIds.add(e.callId);
          t.clientCalls.push({ tool: e.tool, seq: e.seq });
        }
        break;
      case 'tool.result':
        t.results.set(e.callId, e.seq);
        if (t.clientIds.has(e.callId) && !t.answers.has(e.callId)) t.answers.set(e.callId, e.seq);
        if (e.denial) denied.add(e.callId);
        else if (e.isError && !t.called.has(e.callId) && notEnabledHow(e.tool, e.view)) t.refused.push({ tool: e.tool, text: e.view as string, seq: e.seq });
        break;
      case 'approval.resolved':
        t.answers.set(e.callId, e.seq);
        break;
      default:
        break;
    }
  }
  const joins = [...turns.values()].some((t) => t.joins.length > 0);
  const notes: string[] = [];
  let session: SessionHandle | undefined;

  const label = (turnId: string) => `turn ${turns.get(turnId)?.index ?? '?'} (${turnId})`;
  /** Applies the turn's changes recorded before `seq`, in order. */
  const applyBefore = (turnId: string, seq: number): Promise<void> | undefined => {
    const t = turns.get(turnId);
    const due = t?.changes.filter((c) => !c.applied && c.seq < seq) ?? [];
    if (due.length === 0 || session === undefined) return undefined;
    const s = session;
    return (async () => {
      for (const c of due) {
        c.applied = true;
        if (!(await s.updateTurnTools(turnId, c.tools, c.metadata))) {
          notes.push(`${label(turnId)}: the tool settings changed at seq ${c.seq} of the recording (${JSON.stringify(c.tools)}) could not be applied: the re-run's turn was not running there`);
        }
      }
    })();
  };
  const firstChange = (t: TurnRecord, key: keyof TurnTools) => t.changes.find((c) => c.tools[key] !== undefined)?.seq ?? Infinity;

  return {
    joins,
    attach(s) {
      session = s;
    },
    sendOptions(turnId, registries) {
      const t = turns.get(turnId);
      if (!t) return {};
      const out: Pick<SendOptions, 'enabledTools' | 'howToEnableTools' | 'standingApprovals' | 'clientTools'> = {};
      const beforeStanding = firstChange(t, 'standingApprovals');
      const standing = new Set<string>();
      for (const a of rec.approvals) {
        if (a.turnId === turnId && a.policyResult.source === 'standing' && (t.called.get(a.callId) ?? Infinity) < beforeStanding) standing.add(a.tool);
      }
      if (standing.size) out.standingApprovals = [...standing];
      const beforeClient = firstChange(t, 'clientTools');
      const client: ClientTool[] = [];
      for (const c of t.clientCalls) {
        if (c.seq < beforeClient && !client.some((x) => x.name === c.tool)) client.push({ name: c.tool, description: `${c.tool} (client-side, replayed)`, parameters: { type: 'object' } });
      }
      if (client.length) out.clientTools = client;
      const refused = t.refused.filter((r) => r.seq < firstChange(t, 'enabledTools'));
      if (refused.length) {
        const off = new Set(refused.map((r) => r.tool));
        out.enabledTools = registries.tools.list().map((x) => x.name).filter((n) => !off.has(n));
        const how = howToEnable(refused);
        if (how === null) notes.push(`${label(turnId)}: the howToEnableTools the turn was sent with could not be told from its refusals (${[...off].join(', ')}); the model reads another refusal text`);
        else if (how !== undefined) out.howToEnableTools = how;
        notes.push(
          `${label(turnId)}: the recording does not hold the tool settings the turn was sent with; enabledTools was inferred from the calls refused as not enabled (${[...off].join(', ')}): all the registered tools but those`,
        );
      }
      return out;
    },
    beforeModelCall(turnId, k) {
      const t = turns.get(turnId);
      if (!t) return undefined;
      const applying = applyBefore(turnId, t.usage[k] ?? Infinity);
      const due = t.joins.filter((j) => !j.sent && j.before === k);
      if (due.length === 0 || session === undefined) return applying?.then(() => false);
      const s = session;
      return (async () => {
        await applying;
        for (const j of due) {
          j.sent = true;
          await s.send({ ...j.input }, j.input.principal ? { principal: j.input.principal } : {});
        }
        return true;
      })();
    },
    beforeResult(turnId, recordedCallId) {
      const seq = recordedCallId === undefined ? undefined : turns.get(turnId)?.results.get(recordedCallId);
      return seq === undefined ? undefined : applyBefore(turnId, seq);
    },
    beforeAnswer: applyBefore,
    answerSeq(turnId, callId) {
      return turns.get(turnId)?.answers.get(callId) ?? Infinity;
    },
    turnDone(turnId) {
      const t = turns.get(turnId);
      if (!t) return;
      for (const c of t.changes) {
        if (!c.applied) notes.push(`${label(turnId)}: the tool settings changed at seq ${c.seq} of the recording (${JSON.stringify(c.tools)}) were not applied: the re-run's turn never reached the matching point`);
      }
      for (const j of t.joins) {
        if (!j.sent) notes.push(`${label(turnId)}: the message ${JSON.stringify(j.input.text)} joined the running turn before its model call ${j.before + 1} in the recording; the replay did not send it (the re-run's turn made fewer model calls)`);
      }
    },
    notes: () => notes,
  };
}

/** howToEnableTools that gives every refusal its recorded text: undefined for the default, null when none does. */
function howToEnable(refused: readonly { tool: string; text: string }[]): string | undefined | null {
  const first = refused[0]!;
  const how = notEnabledHow(first.tool, first.text)!.how;
  if (how === undefined) return refused.every((r) => r.text === toolNotEnabledMessage(r.tool, undefined)) ? undefined : null;
  // The recorded text has the tool's name where the setting said {tool}.
  for (const candidate of [how.split(first.tool).join('{tool}'), how]) {
    if (refused.every((r) => r.text === toolNotEnabledMessage(r.tool, candidate))) return candidate;
  }
  return null;
}
