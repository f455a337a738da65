// The demo page's A2UI renderer: @a2ui/lit's <a2ui-surface> on @a2ui/web_core's
// MessageProcessor, both v0.9. Bundled by `npm run build:web` (scripts/build-web.mjs) into
// web/dist/surfaces.js, which app.js loads; without the bundle the page shows surfaces as data.
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog, Context } from '@a2ui/lit/v0_9';
import { renderMarkdown } from '@a2ui/markdown-it';

/**
 * A2UI's Text is "simple Markdown": @a2ui/markdown-it renders it (markdown-it, whose raw HTML is
 * off, so `<img onerror=…>` stays text; then DOMPurify). What the page's CSP would refuse, or a
 * click should not do, goes too: an image (img-src is the page's own origin) is shown as its alt
 * text, and a link that is not http(s) as its text; an http(s) link opens in a new tab without a
 * referrer. Parsed in a <template>, whose content is inert (nothing loads, nothing runs).
 */
export async function renderSafeMarkdown(value, options) {
  const template = document.createElement('template');
  template.innerHTML = await renderMarkdown(String(value), options);
  for (const img of template.content.querySelectorAll('img')) img.replaceWith(img.getAttribute('alt') ?? '');
  for (const a of template.content.querySelectorAll('a')) {
    if (/^https?:\/\//i.test(a.getAttribute('href') ?? '')) {
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
    } else a.replaceWith(...a.childNodes);
  }
  return template.innerHTML;
}

/**
 * Gives `element`'s Text components the markdown renderer: @a2ui/lit's markdown context, answered
 * by the context protocol's `context-request` event (what @lit/context's ContextProvider does).
 */
function provideMarkdown(element) {
  element.addEventListener('context-request', (e) => {
    if (e.context !== Context.markdown) return;
    e.stopPropagation();
    e.callback(renderSafeMarkdown);
  });
}

/**
 * A renderer for one page: one processor holds every *active* surface of the conversation.
 * `onAction` receives each click as the A2UI client action { name, surfaceId, sourceComponentId, context }.
 * `onClosed(surfaceId, element, { replaced })` is called when a rendered surface is deleted:
 * by a deleteSurface message, or (`replaced: true`) by a createSurface for its id while it is
 * still active, which this page takes as "replace it": the old surface is deleted, then the new
 * one created. The page takes `element` off the screen (which unsubscribes its bindings).
 *
 * A surface id is only unique among active surfaces (A2UI v0.9.1): once deleted, it may be
 * created again, and renders again.
 */
export function createSurfaceRenderer(onAction, onClosed = () => {}) {
  /** Active surfaces: id → { surface, element } (element: the <a2ui-surface> showing it, once mounted). */
  const live = new Map();
  /** While a render() runs: the ids it created, and whether a deletion is a replacement. */
  let createdNow = null;
  let replacing = null;
  const processor = new MessageProcessor([basicCatalog], (action) => onAction(action));
  processor.onSurfaceCreated((surface) => {
    live.set(surface.id, { surface, element: null });
    createdNow?.push(surface.id);
  });
  processor.onSurfaceDeleted((id) => {
    const entry = live.get(id);
    live.delete(id);
    if (entry?.element) {
      const element = entry.element;
      element.surface = undefined;
      onClosed(id, element, { replaced: replacing === id });
    }
  });
  const deleteSurface = (id, version) => processor.processMessages([{ version: version ?? 'v0.9', deleteSurface: { surfaceId: id } }]);

  return {
    /**
     * Applies one a2ui-surface part's messages, in order. Returns
     * { elements: an <a2ui-surface> per surface the part created, closed: ids of active surfaces
     * it deleted (not counting replacements), updated: ids of earlier surfaces it updated }.
     * Throws (the A2UI error) when the messages are refused, so the caller can fall back; the
     * surfaces the part created are deleted again then (their ids stay free).
     */
    render(messages) {
      const created = [];
      const closed = [];
      const updated = new Set();
      createdNow = created;
      try {
        for (const message of messages) {
          const create = message?.createSurface?.surfaceId;
          if (typeof create === 'string' && live.has(create)) {
            replacing = create;
            try {
              deleteSurface(create, message.version);
            } finally {
              replacing = null;
            }
            const i = created.indexOf(create);
            if (i >= 0) created.splice(i, 1);
          }
          const del = message?.deleteSurface?.surfaceId;
          const wasLive = typeof del === 'string' && live.has(del);
          processor.processMessages([message]);
          if (wasLive && !live.has(del)) {
            const i = created.indexOf(del);
            if (i >= 0) created.splice(i, 1);
            else closed.push(del);
          }
          const target = message?.updateComponents?.surfaceId ?? message?.updateDataModel?.surfaceId;
          if (typeof target === 'string' && !created.includes(target)) updated.add(target);
        }
      } catch (e) {
        for (const id of created) deleteSurface(id);
        throw e;
      } finally {
        createdNow = null;
      }
      const elements = [];
      for (const id of created) {
        const entry = live.get(id);
        if (!entry) continue;
        const el = document.createElement('a2ui-surface');
        el.surface = entry.surface;
        el.dataset.surfaceId = id;
        provideMarkdown(el);
        entry.element = el;
        elements.push(el);
      }
      for (const id of closed) updated.delete(id);
      return { elements, closed, updated: [...updated] };
    },
  };
}
