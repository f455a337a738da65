/**
 * An inspector is a debugging hook: whatever it does must not change a turn. XState calls it
 * inside the actor's own step, where a throw would fail session creation or the turn being
 * inspected; the runtime hands actors this wrapper instead, which contains the throw and reports
 * the first one as a process warning (code TURNSTATE_INSPECTOR_ERROR).
 */
import type { InspectionEvent } from 'xstate';

export type Inspector = ((event: InspectionEvent) => void) | { next?: (event: InspectionEvent) => void };

export function containInspector(inspect: Inspector): (event: InspectionEvent) => void {
  let reported = false;
  return (event) => {
    try {
      if (typeof inspect === 'function') inspect(event);
      else inspect.next?.(event);
    } catch (err) {
      if (reported) return;
      reported = true;
      const msg = err instanceof Error ? err.message : String(err);
      process.emitWarning(`the inspector threw on an ${event.type} event: ${msg} (ignored, as later ones will be)`, {
        code: 'TURNSTATE_INSPECTOR_ERROR',
      });
    }
  };
}
