/**
 * Spec 003 compatibility: actors that speak `respond_to_user({ text })` and
 * `mark_work_complete({ summary })` instead of respond() (ActorDefinition `compat`).
 *
 * Use: give the model `compatTools()` (and `COMPAT_PROMPT_SNIPPET` in its system prompt), make one
 * tracker per turn with `createCompatTracker(compatOptions(actor))`, and for each tool call the
 * model makes:
 *
 *   const r = tracker.onCall(block.name, block.input);
 *   // r.ok: publish r.events in order, answer the tool_use with r.content (is_error: false);
 *   //       r.completed: the turn is settled ('complete').
 *   // !r.ok: answer the tool_use with r.message (is_error: true); nothing was recorded.
 *
 * Free assistant text is internal in this mode: pass it to `tracker.onAssistantText(text)` so it
 * can serve as the fallback. `tracker.userResponse` is what a voice or messaging channel delivers:
 * the last `respond_to_user` text of the turn (trimmed), else the final text (the
 * `mark_work_complete` summary, else the last assistant text). `tracker.finalContent` is the
 * final text for display (spec 003 `finalContent`).
 *
 * Mapping onto parts and turn states (spec 003 "use the last call", "only deliver at completion"):
 * - `respond_to_user({ text })` records a draft; the last one wins. Nothing is published: the
 *   turn state does not change and no part goes out, unless the actor opts into mid-turn
 *   delivery (`deliverDrafts`), where each draft is one `part.received` of a `response` part
 *   with turnState 'awaiting'.
 * - `mark_work_complete({ summary })` -> one `part.received` of a `response` part holding
 *   `userResponse` (turnState 'complete'), except after delivered drafts (the last draft already
 *   went out); then `turnState.changed` to 'complete'.
 * A call after `mark_work_complete` is answered with an error: the turn is already settled.
 */
import type { ActorDefinition } from '../registries/types.js';
import type { MailboxEntry, ModelTool, Part } from '../types.js';
import type { RespondEvent, RespondResult } from './types.js';

export const RESPOND_TO_USER_TOOL = 'respond_to_user';
export const MARK_WORK_COMPLETE_TOOL = 'mark_work_complete';

/** Tool result contents. The first two are spec 003's, byte for byte. */
export const RESPOND_TO_USER_SUCCESS = '{"success":true,"message":"Response recorded for delivery to user."}';
export const RESPOND_TO_USER_TEXT_REQUIRED = '{"success":false,"error":"text is required"}';
export const MARK_WORK_COMPLETE_SUCCESS = '{"success":true,"message":"Work marked complete."}';
export const MARK_WORK_COMPLETE_SUMMARY_TYPE = '{"success":false,"error":"summary must be a string"}';
export const MARK_WORK_COMPLETE_NOTHING_TO_DELIVER =
  '{"success":false,"error":"summary is required: nothing was sent to the user with respond_to_user"}';
export const COMPAT_ALREADY_COMPLETE = '{"success":false,"error":"work is already marked complete for this turn"}';

/** Spec 003's respond_to_user tool (its name without the builtin server prefix). */
export const RESPOND_TO_USER_MODEL_TOOL: ModelTool = Object.freeze({
  name: RESPOND_TO_USER_TOOL,
  description:
    'Send a response directly to the user. On voice interfaces this will be spoken aloud via TTS; ' +
    'on messaging channels (mobile, WhatsApp, etc.) it will be sent as a message. ' +
    'Regular assistant text is internal and not guaranteed to reach the user; ' +
    'use this tool to explicitly communicate with them.',
  input_schema: Object.freeze({
    type: 'object',
    properties: Object.freeze({
      text: Object.freeze({
        type: 'string',
        description: 'The response text for the user. Write naturally and conversationally, without markdown or code formatting.',
      }),
    }),
    required: Object.freeze(['text']),
  }) as Record<string, unknown>,
});

export const MARK_WORK_COMPLETE_MODEL_TOOL: ModelTool = Object.freeze({
  name: MARK_WORK_COMPLETE_TOOL,
  description:
    'Signal that all requested work is complete. Call it after respond_to_user has told the user the result, ' +
    'with a concise summary of what was done. This ends your turn.',
  input_schema: Object.freeze({
    type: 'object',
    properties: Object.freeze({
      summary: Object.freeze({
        type: 'string',
        description: 'A concise summary of the completed work. Shown for display; delivered to the user only when respond_to_user was not called.',
      }),
    }),
    required: Object.freeze(['summary']),
  }) as Record<string, unknown>,
});

const TOOLS: readonly ModelTool[] = Object.freeze([RESPOND_TO_USER_MODEL_TOOL, MARK_WORK_COMPLETE_MODEL_TOOL]);

/** The two compatibility tools, in Anthropic's tool format (frozen, shared). */
export function compatTools(): readonly ModelTool[] {
  return TOOLS;
}

export function isCompatTool(name: string): boolean {
  return name === RESPOND_TO_USER_TOOL || name === MARK_WORK_COMPLETE_TOOL;
}

/** How an actor in the compatibility mode delivers (ActorDefinition `compat`). */
export interface CompatOptions {
  /** Deliver each respond_to_user draft as it is made (default false: only the last, at completion). */
  deliverDrafts: boolean;
}

/** The actor's `compat` setting as options, or undefined when the actor speaks respond(). */
export function compatOptions(actor: Pick<ActorDefinition, 'compat'>): CompatOptions | undefined {
  const c = actor.compat;
  if (c === undefined) return undefined;
  if (c === 'respond_to_user') return NO_DRAFTS;
  return c.deliverDrafts === true ? DRAFTS : NO_DRAFTS;
}
const NO_DRAFTS: CompatOptions = Object.freeze({ deliverDrafts: false });
const DRAFTS: CompatOptions = Object.freeze({ deliverDrafts: true });

/** Spec 003's system-prompt guidance, plus the line on mark_work_complete. */
export const COMPAT_PROMPT_SNIPPET = [
  '## Responding to the User',
  '',
  'You have a `respond_to_user` tool. This is how you communicate with the user —',
  'on voice interfaces it will be spoken aloud, on messaging channels it will be sent as a message.',
  'Your regular text responses are internal and NOT delivered to the user.',
  '',
  'ALWAYS use `respond_to_user` when:',
  '- Answering a question',
  '- Reading content back to the user',
  '- Providing a summary or result',
  '- Confirming an action',
  '- Any time you want the user to receive something',
  '',
  'Write the response text naturally and conversationally. Avoid markdown,',
  'code blocks, bullet points, or formatting — just natural speech/text.',
  '',
  `When all requested work is done, call \`${MARK_WORK_COMPLETE_TOOL}\` with a concise summary.`,
].join('\n');

/** Spec 003's completion nudge, naming respond_to_user. */
export const COMPAT_COMPLETION_NUDGE =
  `If all requested work is complete, use ${RESPOND_TO_USER_TOOL} to tell the user the result, ` +
  `then call ${MARK_WORK_COMPLETE_TOOL} with a concise summary. Otherwise continue working.`;

export type CompatCallResult =
  | {
      ok: true;
      /** In order; publish them as the turn's part.received / turnState.changed events. */
      events: RespondEvent[];
      /** The tool_result content (is_error: false). */
      content: string;
      /** True after mark_work_complete: the turn is settled with 'complete'. */
      completed: boolean;
    }
  | {
      ok: false;
      /** The tool_result content (is_error: true). Nothing was recorded. */
      message: string;
    };

/**
 * A refused compatibility call as a respond() result: the model reads `error` in spec 003's
 * result form ({"success":false,"error":...}), as it does the tracker's own refusals.
 */
export function compatRejection(rule: string, error: string, path = ''): Extract<RespondResult, { ok: false }> {
  return { ok: false, violations: [{ rule, path, message: error }], message: JSON.stringify({ success: false, error }) };
}

/** Per-turn state of the compatibility mode. */
export interface CompatTracker {
  onCall(name: string, input: unknown): CompatCallResult;
  /**
   * Checks a mark_work_complete call's input without applying it: the host applies the call
   * (onCall) only at its response's end, once the response is accepted, with the response's text
   * and later drafts known; a response that is cut or refused never completed anything.
   */
  checkComplete(input: unknown): { ok: true } | { ok: false; message: string };
  /** Free assistant text (internal in this mode); the last non-empty one is the fallback final text. */
  onAssistantText(text: string): void;
  /** The last respond_to_user text (trimmed), else `finalContent`. */
  readonly userResponse: string | undefined;
  /** The mark_work_complete summary (trimmed, when non-empty), else the last assistant text. */
  readonly finalContent: string | undefined;
  /** Whether respond_to_user was called successfully this turn. */
  readonly responded: boolean;
  /** Whether mark_work_complete settled the turn. */
  readonly completed: boolean;
  /** Starts a new turn: forgets everything above. */
  reset(): void;
}

/**
 * Rebuilds a turn's tracker from its mailbox (after a restart): the accepted respond_to_user
 * drafts and the assistant text, in order. mark_work_complete is not replayed: a completion that
 * was recorded but not applied is made again by the model.
 */
export function replayCompat(tracker: CompatTracker, mailbox: readonly MailboxEntry[], turnId: string): CompatTracker {
  const accepted = new Set<string>();
  for (const m of mailbox) if (m.turnId === turnId && m.kind === 'tool_result' && m.tool === RESPOND_TO_USER_TOOL && !m.isError) accepted.add(m.callId);
  for (const m of mailbox) {
    if (m.turnId !== turnId || m.kind !== 'assistant') continue;
    for (const b of m.content) {
      if (b.type === 'text') tracker.onAssistantText(b.text);
      else if (b.type === 'tool_use' && b.name === RESPOND_TO_USER_TOOL && accepted.has(b.id)) tracker.onCall(b.name, b.input);
    }
  }
  return tracker;
}

function field(input: unknown, key: string): unknown {
  return input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>)[key] : undefined;
}

function responsePart(text: string): Part {
  return { text, metadata: { partType: 'response' } };
}

export function createCompatTracker(options: CompatOptions = NO_DRAFTS): CompatTracker {
  const { deliverDrafts } = options;
  let userText: string | undefined;
  let summary: string | undefined;
  let assistantText: string | undefined;
  let completed = false;

  const finalContent = (): string | undefined => summary ?? assistantText;

  function respondToUser(input: unknown): CompatCallResult {
    const text = field(input, 'text');
    if (typeof text !== 'string' || text.trim() === '') return { ok: false, message: RESPOND_TO_USER_TEXT_REQUIRED };
    userText = text.trim();
    return {
      ok: true,
      events: deliverDrafts ? [{ type: 'part.received', index: 0, part: responsePart(userText), turnState: 'awaiting' }] : [],
      content: RESPOND_TO_USER_SUCCESS,
      completed: false,
    };
  }

  function checkComplete(input: unknown): { ok: true } | { ok: false; message: string } {
    if (completed) return { ok: false, message: COMPAT_ALREADY_COMPLETE };
    const raw = field(input, 'summary');
    if (raw !== undefined && raw !== null && typeof raw !== 'string') return { ok: false, message: MARK_WORK_COMPLETE_SUMMARY_TYPE };
    return { ok: true };
  }

  function markWorkComplete(input: unknown): CompatCallResult {
    const checked = checkComplete(input);
    if (!checked.ok) return checked;
    const raw = field(input, 'summary');
    const trimmed = typeof raw === 'string' ? raw.trim() : '';
    const nextSummary = trimmed === '' ? undefined : trimmed;
    const events: RespondEvent[] = [];
    const delivered = userText ?? nextSummary ?? assistantText;
    if (delivered === undefined) return { ok: false, message: MARK_WORK_COMPLETE_NOTHING_TO_DELIVER };
    // Delivered drafts already carried the last respond_to_user text.
    if (!(deliverDrafts && userText !== undefined)) {
      events.push({ type: 'part.received', index: 0, part: responsePart(delivered), turnState: 'complete' });
    }
    events.push({ type: 'turnState.changed', to: 'complete' });
    summary = nextSummary;
    completed = true;
    return { ok: true, events, content: MARK_WORK_COMPLETE_SUCCESS, completed: true };
  }

  return {
    onCall(name, input) {
      if (!isCompatTool(name)) {
        return {
          ok: false,
          message: JSON.stringify({ success: false, error: `unknown tool '${name}': use ${RESPOND_TO_USER_TOOL} or ${MARK_WORK_COMPLETE_TOOL}` }),
        };
      }
      if (completed) return { ok: false, message: COMPAT_ALREADY_COMPLETE };
      return name === RESPOND_TO_USER_TOOL ? respondToUser(input) : markWorkComplete(input);
    },
    checkComplete,
    onAssistantText(text) {
      if (typeof text !== 'string') return;
      const t = text.trim();
      if (t !== '') assistantText = t;
    },
    get userResponse() {
      return userText ?? finalContent();
    },
    get finalContent() {
      return finalContent();
    },
    get responded() {
      return userText !== undefined;
    },
    get completed() {
      return completed;
    },
    reset() {
      userText = undefined;
      summary = undefined;
      assistantText = undefined;
      completed = false;
    },
  };
}
