// The demo page's A2UI renderer: @a2ui/lit's <a2ui-surface> on @a2ui/web_core's
// MessageProcessor, both v0.9. Bundled by `npm run build:web` (scripts/build-web.mjs) into
// web/dist/surfaces.js, which app.js loads; without the bundle the page shows surfaces as data.
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/lit/v0_9';

/**
 * A renderer for one page: one processor holds every surface of the conversation. `onAction`
 * receives each click as the A2UI client action { name, surfaceId, sourceComponentId, context }.
 */
export function createSurfaceRenderer(onAction) {
  const created = new Map();
  const processor = new MessageProcessor([basicCatalog], (action) => onAction(action));
  processor.onSurfaceCreated((surface) => created.set(surface.id, surface));
  return {
    /**
     * Applies one a2ui-surface part's messages; returns an element per surface the part created.
     * Throws (the A2UI error) when the messages are refused, so the caller can fall back.
     */
    render(messages) {
      const before = new Set(created.keys());
      processor.processMessages(messages);
      const elements = [];
      for (const [id, surface] of created) {
        if (before.has(id)) continue;
        const el = document.createElement('a2ui-surface');
        el.surface = surface;
        el.dataset.surfaceId = id;
        elements.push(el);
      }
      return elements;
    },
  };
}
