/**
 * The path of a session: per turn, per model call ("step"), which turn states it went
 * through, which part types it produced, which tools it called and how they ended. Ids,
 * timestamps, usage and streaming deltas are left out, so two runs of the same conversation
 * have equal paths even when their ids and chunking differ; so is timing: a step's tool
 * outcomes are in the order its calls were made, whatever order they finished in.
 *
 * Events are attributed to the model call that caused them through the call ids of the
 * mailbox's `assistant` entries (one per completed model call): a respond() part or a tool
 * call belongs to the call whose response holds its tool_use id; state changes, settlement
 * and runtime parts belong to the call before them.
 */
import type { MailboxEntry, Part, SessionEvent } from '../types.js';

/** A thinking block's part: `<turnId>:thinking:<n>` (`<turnId>:thinking` in recordings before n). */
const THINKING_CALL = /:thinking(?::\d+)?$/;

export interface PathStep {
  /** The actor whose model call this step is (null when no model call completed, e.g. a failed one). */
  actor: string | null;
  /** Part types received, in order. */
  parts: string[];
  /** Turn-state changes, `from->to`. */
  states: string[];
  /** Tools called, in order (`client:<name>` for client-side tools). */
  tools: string[];
  /** `<tool>:requested`, `<tool>:approved`, `<tool>:denied`. */
  approvals: string[];
  /**
   * Tool outcomes, `<tool>:ok` or `<tool>:error`, in the order the calls were made (not the order
   * they finished: parallel calls finish as their timing has it, and a replay serves at once).
   */
  results: string[];
  /** Hand-offs, `from->to`. */
  handoffs: string[];
  /** Each part's text, or its data as JSON (compared after the structure). */
  texts: string[];
  /** Messages that joined the running turn (double-texting `interrupt`) as this step's model call took them in. */
  joined?: string[];
}

export interface TurnPath {
  index: number;
  turnId: string;
  /** The user's text that started the turn. */
  input: string;
  /** The entry actor. */
  actor: string;
  steps: PathStep[];
  /** The state the turn settled in, or null when it has not settled (e.g. still suspended). */
  finalizedBy: string | null;
  stop?: string;
  /**
   * Set (by replay) on a recorded turn the recording ends in the middle of: not settled and
   * waiting for nothing (its process stopped and it was never recovered, or it was still running).
   */
  endsMidTurn?: true;
}

export interface SessionPath {
  sessionId: string;
  turns: TurnPath[];
}

function emptyStep(actor: string | null): PathStep {
  return { actor, parts: [], states: [], tools: [], approvals: [], results: [], handoffs: [], texts: [] };
}

/** A part's comparable content: its text, or its data as JSON. */
export function partText(p: Part): string {
  if (typeof p.text === 'string') return p.text;
  const json = JSON.stringify(p.data ?? null);
  // A surface's id is made from its tool call's id, which a re-run under another model renews:
  // its content is compared with the part's own surface id as a placeholder.
  const id = p.metadata.surfaceId;
  return typeof id === 'string' && id !== '' ? json.split(JSON.stringify(id)).join('"<surface>"') : json;
}

/** The path of one session from its event log and mailbox. */
export function extractPath(sessionId: string, events: readonly SessionEvent[], mailbox: readonly MailboxEntry[]): SessionPath {
  const turns: TurnPath[] = [];
  const byTurn = new Map<string, { turn: TurnPath; calls: Map<string, number>; made: Map<string, number>; callActors: string[]; usage: number; cur: number }>();
  const toolNames = new Map<string, string>();

  // Per turn: its model calls in order, which call each tool_use id belongs to, and each id's place
  // in the order the calls were made. Per turn, not per session: a tool_use id is unique within
  // its turn's conversation, not across turns (a script's fixed `id`, a restarted counter).
  const callsOf = new Map<string, { calls: Map<string, number>; actors: string[]; made: Map<string, number> }>();
  for (const m of mailbox) {
    if (m.kind !== 'assistant') continue;
    let c = callsOf.get(m.turnId);
    if (!c) callsOf.set(m.turnId, (c = { calls: new Map(), actors: [], made: new Map() }));
    const k = c.actors.length;
    c.actors.push(m.actor);
    for (const b of m.content) {
      if (b.type !== 'tool_use') continue;
      c.calls.set(b.id, k);
      if (!c.made.has(b.id)) c.made.set(b.id, c.made.size);
    }
  }
  /** Each step's outcomes with the place of their call, put in call order at the end. */
  const outcomes = new Map<PathStep, { place: number; result: string }[]>();

  for (const e of events) {
    let st = byTurn.get(e.turnId);
    if (!st) {
      if (e.type !== 'turn.started') continue;
      const c = callsOf.get(e.turnId);
      const turn: TurnPath = { index: turns.length, turnId: e.turnId, input: e.input.text, actor: e.actor, steps: [], finalizedBy: null };
      turns.push(turn);
      st = { turn, calls: c?.calls ?? new Map(), made: c?.made ?? new Map(), callActors: c?.actors ?? [], usage: 0, cur: 0 };
      byTurn.set(e.turnId, st);
      continue;
    }
    const s = st;
    /** Step `k` of the turn, made (with those before it) when the log reaches it first. */
    const pad = (k: number): PathStep => {
      const steps = s.turn.steps;
      while (steps.length <= k) steps.push(emptyStep(s.callActors[steps.length] ?? null));
      return steps[k]!;
    };
    const at = (k: number): PathStep => {
      s.cur = k;
      return pad(k);
    };
    const byCall = (callId: string) => s.calls.get(callId) ?? s.cur;
    switch (e.type) {
      case 'message.joined': {
        // The turn's next model call takes it in (the event is written as that call is built).
        (pad(s.usage).joined ??= []).push(e.input.text);
        break;
      }
      case 'turn.started':
      case 'turnTools.changed':
      case 'part.delta':
      case 'part.retracted':
      case 'envelope.settled':
        break;
      case 'model.usage': {
        const step = at(s.usage++);
        step.actor = e.actor;
        break;
      }
      case 'part.received': {
        const k = s.calls.has(e.callId) ? s.calls.get(e.callId)! : THINKING_CALL.test(e.callId) ? s.usage : s.cur;
        const step = at(k);
        step.parts.push(e.part.metadata.partType);
        step.texts.push(partText(e.part));
        break;
      }
      case 'turnState.changed':
        at(s.cur).states.push(`${e.from}->${e.to}`);
        break;
      case 'tool.called':
        toolNames.set(e.callId, e.tool);
        at(byCall(e.callId)).tools.push(e.side === 'client' ? `client:${e.tool}` : e.tool);
        break;
      case 'tool.result': {
        const step = at(byCall(e.callId));
        let list = outcomes.get(step);
        if (!list) outcomes.set(step, (list = []));
        list.push({ place: s.made.get(e.callId) ?? Infinity, result: `${e.tool}:${e.isError ? 'error' : 'ok'}` });
        break;
      }
      case 'approval.requested':
        at(byCall(e.callId)).approvals.push(`${e.tool}:requested`);
        break;
      case 'approval.resolved':
        at(byCall(e.callId)).approvals.push(`${toolNames.get(e.callId) ?? '?'}:${e.decision}`);
        break;
      case 'actor.passed':
        at(s.cur).handoffs.push(`${e.from}->${e.to}`);
        break;
      case 'turn.settled':
        at(s.cur);
        s.turn.finalizedBy = e.finalizedBy;
        if (e.stop) s.turn.stop = e.stop;
        break;
    }
  }
  // A stable sort: outcomes of calls the mailbox does not name keep the order they came in.
  for (const [step, list] of outcomes) step.results = list.sort((a, b) => (a.place === b.place ? 0 : a.place < b.place ? -1 : 1)).map((o) => o.result);
  return { sessionId, turns };
}

const list = (xs: readonly string[]) => `[${xs.join(', ')}]`;

/** One line per turn and per step, for terminals and logs. */
export function formatPath(path: SessionPath): string {
  const lines: string[] = [`session ${path.sessionId}: ${path.turns.length} turn(s)`];
  for (const t of path.turns) {
    const end = t.finalizedBy ?? (t.endsMidTurn ? 'not settled (the recording ends mid-turn)' : 'not settled');
    lines.push(`turn ${t.index} ${t.turnId} ${JSON.stringify(t.input)} (${t.actor}) -> ${end}${t.stop ? ` [${t.stop}]` : ''}`);
    t.steps.forEach((s, k) => {
      const bits = [`  step ${k} ${s.actor ?? '(no model call)'}:`];
      if (s.joined?.length) bits.push(`joined ${list(s.joined.map((x) => JSON.stringify(x)))}`);
      bits.push(`parts ${list(s.parts)}`, `states ${list(s.states)}`);
      if (s.tools.length) bits.push(`tools ${list(s.tools)}`);
      if (s.approvals.length) bits.push(`approvals ${list(s.approvals)}`);
      if (s.results.length) bits.push(`results ${list(s.results)}`);
      if (s.handoffs.length) bits.push(`handoffs ${list(s.handoffs)}`);
      lines.push(bits.join(' '));
    });
  }
  return lines.join('\n');
}
