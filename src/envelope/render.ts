/**
 * Plain-text renderings of parts, for the `render-as-text` delivery rule (SMS, WhatsApp, email
 * bodies, text-only transcripts).
 *
 * Contract: total (never throws) and deterministic. A text part renders as its text; the canonical
 * data parts a channel renders have a fixed form (artifact: a reference, citation: its source,
 * approval-request: the question, or what was decided once it carries its resolution); any other
 * data renders as compact JSON.
 */
import type { Part } from '../types.js';

export function renderPartText(part: Part): string {
  const d = part.data;
  if (d === undefined) return part.text ?? '';
  switch (part.metadata.partType) {
    case 'artifact':
      return renderArtifact(d);
    case 'citation':
      return renderCitation(d, part.text);
    case 'approval-request':
      return renderApproval(d);
    default:
      return part.text ?? json(d);
  }
}

/** `name: url` (or `artifact:<id>` when the artifact has no URL): an SMS carries a reference, not bytes. */
function renderArtifact(d: Record<string, unknown>): string {
  const id = str(d.artifactId);
  const ref = str(d.url) ?? (id === undefined ? undefined : `artifact:${id}`);
  const name = str(d.name) ?? str(d.filename) ?? id ?? 'attachment';
  return ref === undefined ? name : `${name}: ${ref}`;
}

function renderCitation(d: Record<string, unknown>, text: string | undefined): string {
  const title = str(d.title) ?? text;
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
