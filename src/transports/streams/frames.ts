/**
 * WebSocket frames of the `turnstate.v1` subprotocol and their validation.
 *
 * Contract: `parseClientFrame` never throws. It accepts a text frame of at most `maxBytes`
 * holding one JSON object of a known `type` with exactly the fields that type allows, and
 * otherwise returns an error naming what was wrong (and the frame's `ref` when one could be read).
 * The error's code: `frame.*` when the frame itself is wrong (not JSON, not an object, an unknown
 * type or field, a missing or malformed id or `ref`); when a field holds a value the session API
 * would refuse, the code that API gives the same mistake (`cursor.invalid` as
 * `session.events(afterSeq)`, `message.invalid` and `message.invalid_consumes` as `send()`,
 * `approval.invalid` as `answerApproval()`), so one mistake has one code on every channel.
 * Any client frame may carry `ref` (a string of at most 128 UTF-16 code units or a finite number);
 * every reply to that frame echoes it. Every length limit here counts UTF-16 code units
 * (`String.length`: an emoji counts 2), as docs/concepts/approvals.md does for a reason. Text of
 * the frame echoed in an error is cut without splitting a surrogate pair (clipForEcho), and the
 * JSON parser's message is made well-formed: an error frame always has a UTF-8 form.
 */
import { MAX_APPROVAL_REASON_CHARS } from '../../limits.js';
import type { SurfaceAction } from '../../registries/surface-actions.js';
import { clipForEcho, wellFormed } from '../../text.js';
import type { SessionEvent } from '../../types.js';

export const SUBPROTOCOL = 'turnstate.v1';

export type Ref = string | number;

export type ClientFrame =
  | { type: 'subscribe'; sessionId: string; resumeFrom?: number; ref?: Ref }
  | { type: 'unsubscribe'; sessionId: string; ref?: Ref }
  /** `consumes`: part types this client consumes (e.g. ['llm-context'] for a peer LLM), as SendOptions `consumes`. */
  | { type: 'send'; sessionId: string; text: string; consumes?: string[]; ref?: Ref }
  | { type: 'approve' | 'deny'; approvalId: string; sessionId?: string; reason?: string; ref?: Ref }
  /** A click on an A2UI surface (the v0.9 client-to-server action); see routeSurfaceAction. */
  | { type: 'action'; sessionId: string; action: SurfaceAction; ref?: Ref }
  | { type: 'ping'; ref?: Ref };

export type ServerFrame =
  | { type: 'event'; sessionId: string; seq: number; event: SessionEvent }
  /** `queued`: the messages waiting behind the running turn when the subscription was made, in queue order (absent when none). */
  | { type: 'subscribed'; sessionId: string; lastSeq: number; queued?: Array<{ turnId: string; text: string }>; ref?: Ref }
  | { type: 'unsubscribed'; sessionId: string; reason: 'requested' | 'session-ended'; ref?: Ref }
  | { type: 'sent'; sessionId: string; turnId: string; queued: boolean; ref?: Ref }
  | { type: 'answered'; approvalId: string; decision: 'approved' | 'denied'; ref?: Ref }
  | { type: 'error'; code: string; message: string; ref?: Ref; sessionId?: string }
  | { type: 'pong'; ref?: Ref }
  | { type: 'heartbeat'; at: string };

/** Close codes (RFC 6455 section 7.4 plus the application range). */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  policy: 1008,
  tooBig: 1009,
  internal: 1011,
  /** Application code: the client read too slowly; reconnect and resume from the last seq received. */
  slowConsumer: 4008,
} as const;

export const SLOW_CONSUMER_REASON = 'slow consumer: resume from last seq';

export type FrameResult = { ok: true; frame: ClientFrame } | { ok: false; code: string; message: string; ref?: Ref };

/** Length limits, in UTF-16 code units (`String.length`). */
const MAX_REF = 128;
const MAX_ID = 256;
const MAX_REASON = MAX_APPROVAL_REASON_CHARS;
const MAX_CONSUMES = 64;

/**
 * The fields each frame type allows. A Map, not an object literal: the type is client-controlled,
 * and `{"type":"constructor"}` (or `__proto__`, `toString`) must find nothing rather than a member
 * inherited from Object.prototype.
 */
const FIELDS: ReadonlyMap<string, readonly string[]> = new Map<ClientFrame['type'], readonly string[]>([
  ['subscribe', ['type', 'ref', 'sessionId', 'resumeFrom']],
  ['unsubscribe', ['type', 'ref', 'sessionId']],
  ['send', ['type', 'ref', 'sessionId', 'text', 'consumes']],
  ['approve', ['type', 'ref', 'approvalId', 'sessionId', 'reason']],
  ['deny', ['type', 'ref', 'approvalId', 'sessionId', 'reason']],
  ['action', ['type', 'ref', 'sessionId', 'action']],
  ['ping', ['type', 'ref']],
]);

const TYPES = [...FIELDS.keys()].join(', ');

export function parseClientFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean, maxBytes: number): FrameResult {
  if (isBinary) return fail('frame.binary', 'binary frames are not accepted: send one JSON object as a text frame');
  const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
  if (buf.byteLength > maxBytes) {
    return fail('frame.too_large', `frame of ${buf.byteLength} bytes exceeds the limit of ${maxBytes} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    return fail('frame.invalid_json', `frame is not valid JSON: ${wellFormed((e as Error).message)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('frame.invalid', `a frame must be a JSON object, got ${Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'null' : typeof value}`);
  }
  const obj = value as Record<string, unknown>;
  const refValue = obj.ref;
  let ref: Ref | undefined;
  if (refValue !== undefined) {
    if ((typeof refValue === 'string' && refValue.length <= MAX_REF) || (typeof refValue === 'number' && Number.isFinite(refValue))) {
      ref = refValue;
    } else {
      return fail('frame.invalid', `/ref must be a string of at most ${MAX_REF} UTF-16 code units (an emoji counts 2) or a finite number`);
    }
  }
  const type = obj.type;
  if (typeof type !== 'string') return fail('frame.invalid', `/type is required: one of ${TYPES}`, ref);
  const allowed = FIELDS.get(type);
  if (allowed === undefined) return fail('frame.unknown_type', `unknown frame type '${truncate(type)}': expected one of ${TYPES}`, ref);
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) return fail('frame.invalid', `/${truncate(key)} is not a field of a '${type}' frame (allowed: ${allowed.join(', ')})`, ref);
  }
  const withRef = <T extends object>(f: T): T => (ref === undefined ? f : { ...f, ref });

  switch (type as ClientFrame['type']) {
    case 'ping':
      return { ok: true, frame: withRef({ type: 'ping' as const }) };
    case 'subscribe': {
      const sessionId = id(obj, 'sessionId');
      if (typeof sessionId !== 'string') return fail('frame.invalid', sessionId.message, ref);
      const resumeFrom = obj.resumeFrom;
      if (resumeFrom !== undefined && !(typeof resumeFrom === 'number' && Number.isSafeInteger(resumeFrom) && resumeFrom >= 0)) {
        return fail('cursor.invalid', '/resumeFrom must be a non-negative integer seq (the last seq received)', ref);
      }
      return {
        ok: true,
        frame: withRef(resumeFrom === undefined ? { type: 'subscribe' as const, sessionId } : { type: 'subscribe' as const, sessionId, resumeFrom }),
      };
    }
    case 'unsubscribe': {
      const sessionId = id(obj, 'sessionId');
      if (typeof sessionId !== 'string') return fail('frame.invalid', sessionId.message, ref);
      return { ok: true, frame: withRef({ type: 'unsubscribe' as const, sessionId }) };
    }
    case 'send': {
      const sessionId = id(obj, 'sessionId');
      if (typeof sessionId !== 'string') return fail('frame.invalid', sessionId.message, ref);
      const text = obj.text;
      if (typeof text !== 'string' || text.trim() === '') return fail('message.invalid', '/text must be a non-empty string', ref);
      const consumes = obj.consumes;
      if (consumes === undefined) return { ok: true, frame: withRef({ type: 'send' as const, sessionId, text }) };
      if (!Array.isArray(consumes) || consumes.length > MAX_CONSUMES || !consumes.every((c) => typeof c === 'string' && c !== '' && c.length <= MAX_ID)) {
        return fail('message.invalid_consumes', `/consumes must be an array of at most ${MAX_CONSUMES} part type names, each a non-empty string of at most ${MAX_ID} UTF-16 code units`, ref);
      }
      return { ok: true, frame: withRef({ type: 'send' as const, sessionId, text, consumes: consumes as string[] }) };
    }
    case 'approve':
    case 'deny': {
      const approvalId = id(obj, 'approvalId');
      if (typeof approvalId !== 'string') return fail('frame.invalid', approvalId.message, ref);
      const frame: Extract<ClientFrame, { type: 'approve' | 'deny' }> = { type: type as 'approve' | 'deny', approvalId };
      if (obj.sessionId !== undefined) {
        const sessionId = id(obj, 'sessionId');
        if (typeof sessionId !== 'string') return fail('frame.invalid', sessionId.message, ref);
        frame.sessionId = sessionId;
      }
      if (obj.reason !== undefined) {
        if (typeof obj.reason !== 'string' || obj.reason.length > MAX_REASON) {
          return fail('approval.invalid', `/reason must be a string of at most ${MAX_REASON} UTF-16 code units (an emoji counts 2)`, ref);
        }
        frame.reason = obj.reason;
      }
      return { ok: true, frame: withRef(frame) };
    }
    case 'action': {
      const sessionId = id(obj, 'sessionId');
      if (typeof sessionId !== 'string') return fail('frame.invalid', sessionId.message, ref);
      const a = obj.action;
      if (typeof a !== 'object' || a === null || Array.isArray(a)) {
        return fail('frame.invalid', '/action must be an A2UI action { name, surfaceId, sourceComponentId, context }', ref);
      }
      const action = a as Record<string, unknown>;
      for (const key of ['name', 'surfaceId', 'sourceComponentId'] as const) {
        const v = id(action, key);
        if (typeof v !== 'string') return fail('frame.invalid', `/action${v.message}`, ref);
      }
      const context = action.context ?? {};
      if (typeof context !== 'object' || context === null || Array.isArray(context)) return fail('frame.invalid', '/action/context must be an object', ref);
      const out: SurfaceAction = {
        name: action.name as string,
        surfaceId: action.surfaceId as string,
        sourceComponentId: action.sourceComponentId as string,
        context: context as Record<string, unknown>,
      };
      if (typeof action.timestamp === 'string') out.timestamp = action.timestamp;
      return { ok: true, frame: withRef({ type: 'action' as const, sessionId, action: out }) };
    }
  }
}

function id(obj: Record<string, unknown>, key: string): string | { message: string } {
  const v = obj[key];
  if (typeof v !== 'string' || v === '' || v.length > MAX_ID) {
    return { message: `/${key} must be a non-empty string of at most ${MAX_ID} UTF-16 code units (an emoji counts 2)` };
  }
  return v;
}

function fail(code: string, message: string, ref?: Ref): FrameResult {
  return ref === undefined ? { ok: false, code, message } : { ok: false, code, message, ref };
}

/** Client text echoed in an error: at most 40 UTF-16 code units, never half a surrogate pair. */
function truncate(s: string): string {
  return clipForEcho(s, 40);
}

/** Encodes a control frame (events use the codec's cached frames). */
export function encodeFrame(frame: ServerFrame): Buffer {
  return Buffer.from(JSON.stringify(frame), 'utf8');
}
