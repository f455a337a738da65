/**
 * The respond() check of an actor's `a2ui-surface` parts (rule `respond:a2ui-surface:valid`); one
 * A2UI message as the data is delivered as `{ messages: [message] }`.
 */
import type { PartCheck } from '../registries/types.js';
import { checkSurfaceData, normalizeSurfaceData } from './a2ui.js';

export const surfacePartCheck: PartCheck = {
  rule: 'respond:a2ui-surface:valid',
  check: (data) => checkSurfaceData(data),
  normalize: (data) => normalizeSurfaceData(data),
};
