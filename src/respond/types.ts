/**
 * respond() contracts. Implementations: schema.ts (tool schema from the registries), parse.ts
 * (ajv + semantic rules -> ordered events or a rejection), prompt.ts (system-prompt snippet),
 * stream.ts (incremental part.delta parser), compat.ts (respond_to_user / mark_work_complete).
 */
import type { Part } from '../types.js';
import type { LiveSurfaceView, Violation } from '../registries/types.js';

export const RESPOND_TOOL_NAME = 'respond';

/** A respond() call that passed every rule. */
export interface RespondCall {
  parts: Part[];
  turnState: string;
  passTo?: string;
  note?: string;
}

/** What a valid call turns into, in order: one part.received per part, then turnState.changed. */
export type RespondEvent =
  | { type: 'part.received'; index: number; part: Part; turnState: string }
  | { type: 'turnState.changed'; to: string };

export type RespondResult =
  | { ok: true; call: RespondCall; events: RespondEvent[] }
  | {
      ok: false;
      /** Every violation, each with its JSON path. */
      violations: Violation[];
      /** One message phrased so a model can fix its next call (sent back as an is_error tool_result). */
      message: string;
    };

/** What the parser needs to know about the calling actor. */
export interface RespondContext {
  actor: string;
  /** Handoff targets the calling actor declares. */
  handoffs: readonly string[];
  /** The calling session and its tenant (what part checks such as the artifact check scope by). */
  sessionId?: string | undefined;
  tenantId?: string | undefined;
  /** The session's live A2UI surfaces (see PartCheckContext.surfaces). */
  surfaces?: LiveSurfaceView | undefined;
}

export type { LiveSurfaceView, PartCheck, PartCheckContext } from '../registries/types.js';

/** A growing-text notification while a respond() call is still being written. */
export interface PartDelta {
  /** Index of the part in `parts`. */
  index: number;
  /** Known once `metadata.partType` has been read (it may arrive after the text). */
  partType?: string;
  /** The new characters only; concatenated deltas equal the final text. */
  text: string;
}
