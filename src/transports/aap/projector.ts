/**
 * The AAP projection of a session's event stream: a pure, synchronous fold from SessionEvents
 * to AAP items (text/thinking, as deltas or one per part; tool calls and results; user input).
 * The SSE writer, the `stream: "none"` body and the history endpoint all consume it, so the
 * three views of one turn carry the same content.
 *
 * Contract: `push` never throws on well-formed events; every `tool_result` it emits follows a
 * `tool_call` for the same id (in this projection or listed in `knownCalls`), at most once per id.
 */
import { denialText } from '../../types.js';
import { createDelivery } from '../../envelope/delivery.js';
import { PartTypeRegistry } from '../../registries/part-types.js';
import type { Part, SessionEvent } from '../../types.js';
import { AAP_REQUEST_KEY } from './session-config.js';
import type { AapContentBlock, StopReason } from './types.js';

export type AapItem =
  /** `joined`: a message that joined the running turn (double-texting `interrupt`), with the id of the request that sent it. */
  | { kind: 'user'; text: string; turnId: string; joined?: boolean; request?: string }
  | { kind: 'text_delta'; delta: string }
  | { kind: 'thinking_delta'; delta: string }
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; thinking: string }
  | { kind: 'tool_call'; toolCallId: string; name: string; input: Record<string, unknown>; side: CallSide }
  | { kind: 'tool_result'; toolCallId: string; content: string | AapContentBlock[]; side: CallSide };

/** `trusted`: a server tool run inline; `untrusted`: a server tool waiting for permission; `client`: declared by the client. */
export type CallSide = 'trusted' | 'untrusted' | 'client';

/** What a part type becomes on AAP: text, thinking, or nothing. */
export type PartClass = 'text' | 'thinking' | undefined;

export interface ProjectorOptions {
  /** `delta`: text_delta/thinking_delta; `whole`: one text/thinking item per part. */
  granularity: 'delta' | 'whole';
  classify: (partType: string) => PartClass;
  emit: (item: AapItem) => void;
  /** Calls already shown to the client in an earlier response (pending in `turnId` when this one starts). */
  knownCalls?: Iterable<{ callId: string; side: CallSide; turnId: string }> | undefined;
  /** Tool names never surfaced (respond() and its compatibility tools). */
  hiddenTools?: ReadonlySet<string> | undefined;
}

/** Tools that are framework infrastructure, never AAP tool calls. */
export const DEFAULT_HIDDEN_TOOLS: ReadonlySet<string> = new Set(['respond', 'respond_to_user', 'mark_work_complete']);

const CANONICAL = createDelivery(new PartTypeRegistry());

/** The transcript class of a canonical part type, from the registry's `transcript` metadata (response/ack/clarify/error: text; thinking/reasoning-trace: thinking). */
export function canonicalPartClass(partType: string): PartClass {
  return CANONICAL.transcript(partType);
}

/**
 * In delta mode, the delta sent between two parts of the same class (text or thinking): AAP has
 * no event that ends a message, so the boundary is a blank line in the stream itself.
 */
export const PART_BOUNDARY = '\n\n';

/** The text given to the model (and shown in history) for a denied tool call (one for every channel). */
export { denialText };

/** A tool result view as AAP content: strings as they are, anything else as JSON. */
export function toolContent(view: unknown): string {
  if (typeof view === 'string') return view;
  if (view === undefined) return '';
  try {
    return JSON.stringify(view);
  } catch {
    return String(view);
  }
}

interface DeltaState {
  cls: PartClass | 'unknown';
  /** Whether this part's first delta went out (so its boundary was sent). */
  started: boolean;
  /** Text already emitted as deltas. */
  emitted: string;
  /** Text received while the part type was still unknown. */
  pending: string;
}

interface CallState {
  callId: string;
  side: CallSide;
  shown: boolean;
  resolved: boolean;
  denial?: string;
}

export class AapProjector {
  readonly #opts: ProjectorOptions;
  readonly #hidden: ReadonlySet<string>;
  readonly #deltas = new Map<string, DeltaState>();
  readonly #calls = new Map<string, CallState>();
  readonly #hiddenCalls = new Set<string>();
  #settled: Extract<SessionEvent, { type: 'turn.settled' }> | undefined;
  /** Delta mode: whether a text / thinking part already went out in this projection. */
  #sent = { text: false, thinking: false };

  constructor(opts: ProjectorOptions) {
    this.#opts = opts;
    this.#hidden = opts.hiddenTools ?? DEFAULT_HIDDEN_TOOLS;
    for (const c of opts.knownCalls ?? []) this.#calls.set(callKey(c.turnId, c.callId), { callId: c.callId, side: c.side, shown: true, resolved: false });
  }

  /** The turn.settled event, once seen. */
  get settled(): Extract<SessionEvent, { type: 'turn.settled' }> | undefined {
    return this.#settled;
  }

  /** Project the next turn into the same response (a joined message requeued as its own turn): the last one's settlement is forgotten. */
  nextTurn(): void {
    this.#settled = undefined;
  }

  /** Ids of shown client or untrusted calls that have no result yet. */
  unresolvedCalls(): string[] {
    const ids: string[] = [];
    for (const c of this.#calls.values()) if (c.shown && !c.resolved && c.side !== 'trusted') ids.push(c.callId);
    return ids;
  }

  /** Ids of shown calls (any side) without a result. */
  openCalls(): string[] {
    const ids: string[] = [];
    for (const c of this.#calls.values()) if (c.shown && !c.resolved) ids.push(c.callId);
    return ids;
  }

  /** The stop reason for the current state: after turn.settled its mapping, before it `tool_use`/`end_turn`. */
  stopReason(): StopReason {
    const s = this.#settled;
    if (s?.stop === 'max_tokens') return 'max_tokens';
    if (s?.stop === 'refusal') return 'refusal';
    if (s?.stop === 'error') return 'error';
    return this.unresolvedCalls().length > 0 ? 'tool_use' : 'end_turn';
  }

  push(ev: SessionEvent): void {
    switch (ev.type) {
      case 'turn.started':
        this.#opts.emit({ kind: 'user', text: ev.input.text, turnId: ev.turnId });
        return;
      case 'message.joined': {
        const request = ev.input.metadata?.[AAP_REQUEST_KEY];
        this.#opts.emit({ kind: 'user', text: ev.input.text, turnId: ev.turnId, joined: true, ...(typeof request === 'string' ? { request } : {}) });
        return;
      }
      case 'turnTools.changed':
        return;
      case 'part.delta':
        this.#onDelta(ev.callId, ev.index, ev.partType, ev.text);
        return;
      case 'part.received':
        this.#onPart(ev.callId, ev.index, ev.part);
        return;
      case 'part.retracted': {
        // AAP has no way to take text back: deltas already sent stay sent (documented); what was
        // still held (its part type unknown) is dropped.
        const prefix = `${ev.callId}\u0000`;
        for (const key of this.#deltas.keys()) if (key.startsWith(prefix)) this.#deltas.delete(key);
        return;
      }
      case 'tool.called': {
        const key = callKey(ev.turnId, ev.callId);
        if (this.#hidden.has(ev.tool) || ev.routing === 'bypass') {
          this.#hiddenCalls.add(key);
          return;
        }
        const existing = this.#calls.get(key);
        if (existing !== undefined) return;
        const side: CallSide = ev.side === 'client' ? 'client' : 'trusted';
        this.#calls.set(key, { callId: ev.callId, side, shown: true, resolved: false });
        this.#opts.emit({ kind: 'tool_call', toolCallId: ev.callId, name: ev.tool, input: asInput(ev.args), side });
        return;
      }
      case 'approval.requested': {
        const key = callKey(ev.turnId, ev.callId);
        const existing = this.#calls.get(key);
        if (existing !== undefined) {
          if (!existing.resolved) existing.side = 'untrusted';
          return;
        }
        this.#hiddenCalls.delete(key);
        this.#calls.set(key, { callId: ev.callId, side: 'untrusted', shown: true, resolved: false });
        this.#opts.emit({ kind: 'tool_call', toolCallId: ev.callId, name: ev.tool, input: asInput(ev.args), side: 'untrusted' });
        return;
      }
      case 'approval.resolved': {
        const call = this.#calls.get(callKey(ev.turnId, ev.callId));
        if (call === undefined || call.resolved) return;
        if (ev.decision === 'denied') {
          call.resolved = true;
          this.#opts.emit({ kind: 'tool_result', toolCallId: ev.callId, content: denialText(ev.reason), side: call.side });
        }
        return;
      }
      case 'tool.result': {
        const key = callKey(ev.turnId, ev.callId);
        if (this.#hiddenCalls.has(key)) return;
        const call = this.#calls.get(key);
        if (call === undefined || call.resolved) return;
        call.resolved = true;
        this.#opts.emit({ kind: 'tool_result', toolCallId: ev.callId, content: toolContent(ev.view), side: call.side });
        return;
      }
      case 'turn.settled':
        this.#settled = ev;
        return;
      case 'turnState.changed':
      case 'actor.passed':
      case 'model.usage':
      case 'envelope.settled':
        return;
      default:
        assertNeverEvent(ev);
    }
  }

  #onDelta(callId: string, index: number, partType: string | undefined, text: string): void {
    if (this.#opts.granularity !== 'delta') return;
    const key = `${callId}\u0000${index}`;
    let st = this.#deltas.get(key);
    if (st === undefined) {
      st = { cls: 'unknown', started: false, emitted: '', pending: '' };
      this.#deltas.set(key, st);
    }
    if (st.cls === 'unknown' && partType !== undefined) {
      st.cls = this.#opts.classify(partType);
      if (st.pending !== '') {
        const buffered = st.pending;
        st.pending = '';
        this.#emitDelta(st, buffered);
      }
    }
    if (st.cls === 'unknown') st.pending += text;
    else this.#emitDelta(st, text);
  }

  #emitDelta(st: DeltaState, text: string): void {
    if (text === '' || st.cls === undefined || st.cls === 'unknown') return;
    if (!st.started) {
      st.started = true;
      this.#boundary(st.cls);
    }
    st.emitted += text;
    this.#opts.emit(st.cls === 'text' ? { kind: 'text_delta', delta: text } : { kind: 'thinking_delta', delta: text });
  }

  /** Before the first delta of a part: the boundary, when a part of the same class went out before it. */
  #boundary(cls: 'text' | 'thinking'): void {
    if (this.#sent[cls]) this.#opts.emit(cls === 'text' ? { kind: 'text_delta', delta: PART_BOUNDARY } : { kind: 'thinking_delta', delta: PART_BOUNDARY });
    this.#sent[cls] = true;
  }

  #onPart(callId: string, index: number, part: Part): void {
    const cls = this.#opts.classify(part.metadata.partType);
    if (cls === undefined) return;
    const text = part.text ?? '';
    if (this.#opts.granularity === 'whole') {
      if (text === '') return;
      this.#opts.emit(cls === 'text' ? { kind: 'text', text } : { kind: 'thinking', thinking: text });
      return;
    }
    const key = `${callId}\u0000${index}`;
    const st = this.#deltas.get(key);
    if (st === undefined) {
      this.#emitDelta({ cls, started: false, emitted: '', pending: '' }, text);
      return;
    }
    this.#deltas.delete(key);
    st.cls = cls;
    // Whatever the deltas did not cover yet (the tail, or everything when the type came late).
    const rest = text.startsWith(st.emitted) ? text.slice(st.emitted.length) : text.slice(Math.min(st.emitted.length, text.length));
    this.#emitDelta(st, rest);
  }
}

/** Calls are tracked per turn: a model that reuses ids across turns loses nothing. */
function callKey(turnId: string, callId: string): string {
  return `${turnId}\u0000${callId}`;
}

function asInput(args: unknown): Record<string, unknown> {
  return args !== null && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : { value: args };
}

function assertNeverEvent(ev: never): void {
  // New event types are ignored by AAP until mapped; the union check keeps the switch exhaustive.
  void ev;
}
