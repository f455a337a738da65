/**
 * The respond() check of an actor's `a2ui-surface` parts (rule `respond:a2ui-surface:valid`),
 * against the session's live surfaces (`ctx.surfaces`, surfaces:live); one A2UI message as the
 * data is delivered as `{ messages: [message] }`.
 */
import type { PartCheck } from '../registries/types.js';
import { checkSurfaceData, normalizeSurfaceData } from './a2ui.js';

export const surfacePartCheck: PartCheck = {
  rule: 'respond:a2ui-surface:valid',
  check: (data, ctx) => checkSurfaceData(data, ctx.surfaces),
  normalize: (data) => normalizeSurfaceData(data),
};
