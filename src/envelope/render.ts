/**
 * Plain-text renderings of parts, for the `render-as-text` delivery rule (SMS, WhatsApp, email
 * bodies, text-only transcripts).
 *
 * Contract: total on any part (never throws; an `artifactUrl` that throws is the caller's) and
 * deterministic for the same options. A text part renders as its text; a citation, with data or
 * text only, as its source (`Source: title (url)`); the canonical data parts a channel renders have
 * a fixed form (artifact: a reference, approval-request: the question, or what was decided once it
 * carries its resolution); any other data renders as compact JSON. A human channel's body takes a
 * text part's markdown as plain text (`renderBodyText`).
 */
import type { Part } from '../types.js';
import { markdownToPlainText } from './plain-text.js';

export interface RenderOptions {
  /**
   * The link an artifact renders with (e.g. `ArtifactLinks.url`, a signed link to the artifacts
   * route); without it, or when it gives undefined, an artifact renders as `artifact:<id>`.
   */
  artifactUrl?: ((artifactId: string) => string | undefined) | undefined;
}

export function renderPartText(part: Part, opts: RenderOptions = {}): string {
  const d = part.data;
  if (d === undefined) return part.metadata.partType === 'citation' ? renderTextCitation(part) : (part.text ?? '');
  switch (part.metadata.partType) {
    case 'artifact':
      return renderArtifact(d, opts);
    case 'citation':
      return renderCitation(d, part.text);
    case 'approval-request':
      return renderApproval(d);
    default:
      return part.text ?? json(d);
  }
}

/**
 * `name: link` (`name: artifact:<id>` without link configuration): an SMS carries a reference,
 * not bytes. The link comes from `artifactUrl` only, never from the part: a `url` in the data is
 * not the server's (the respond() check refuses one; a part from elsewhere may still hold it).
 */
function renderArtifact(d: Record<string, unknown>, opts: RenderOptions): string {
  const id = str(d.artifactId);
  const name = str(d.name) ?? id ?? 'attachment';
  if (id === undefined) return name;
  const url = str(opts.artifactUrl?.(id));
  return `${name}: ${url ?? `artifact:${id}`}`;
}

/**
 * A part as the body of a human channel (email, SMS, WhatsApp) shows it: a text part's markdown as
 * plain text (`markdownToPlainText`: the words without the markup, a link as `text (url)`), any
 * other part as `renderPartText` gives it (a citation's title, an artifact's name are not markdown).
 */
export function renderBodyText(part: Part, opts: RenderOptions = {}): string {
  return part.data === undefined && part.text !== undefined && part.metadata.partType !== 'citation' ? markdownToPlainText(part.text) : renderPartText(part, opts);
}

/** A text citation (its pointer in `metadata.path`): `Source: text (url)`, the URL from `metadata.url` or `metadata.source`. */
function renderTextCitation(part: Part): string {
  const text = str(part.text);
  if (text === undefined) return part.text ?? '';
  return renderCitation({ url: part.metadata.url, source: part.metadata.source }, text);
}

function renderCitation(d: Record<string, unknown>, text: string | undefined): string {
  const title = str(d.title) ?? str(text);
  const where = str(d.url) ?? str(d.source);
  if (title !== undefined && where !== undefined) return `Source: ${title} (${where})`;
  return `Source: ${title ?? where ?? json(d)}`;
}

/**
 * The question (`Approval needed: tool {args}`) while the approval is open; once settlement has
 * recorded its `resolution` (docs/concepts/delivery.md), what was decided: `Approved: tool {args}`
 * or `Denied: tool {args} (reason)`. A buffered channel only ever sees the settled envelope, whose
 * approvals are all answered, so asking there would ask for something already decided.
 */
function renderApproval(d: Record<string, unknown>): string {
  const tool = str(d.tool) ?? 'a tool';
  const call = d.args === undefined ? tool : `${tool} ${json(d.args)}`;
  const r = d.resolution;
  const decision = r !== null && typeof r === 'object' ? (r as Record<string, unknown>).decision : undefined;
  if (decision === 'approved') return `Approved: ${call}`;
  if (decision === 'denied') {
    const reason = str((r as Record<string, unknown>).reason);
    return reason === undefined ? `Denied: ${call}` : `Denied: ${call} (${reason})`;
  }
  return `Approval needed: ${call}`;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return String(v);
  }
}
