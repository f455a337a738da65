/** The respond() check of an actor's `a2ui-surface` parts (rule `respond:a2ui-surface:valid`). */
import type { PartCheck } from '../registries/types.js';
import { checkSurfaceData } from './a2ui.js';

export const surfacePartCheck: PartCheck = {
  rule: 'respond:a2ui-surface:valid',
  check: (data) => checkSurfaceData(data),
};
