/**
 * Building `a2ui-surface` parts from consumer-registered surface templates (spec 001 "Builds
 * A2UI surface(s) using consumer-registered surface templates matching the data kind").
 *
 * Contract: `buildSurfaces` is pure and never throws. A source whose kind has no template yields
 * nothing (spec 001 "Data without a UI surface"). A template that throws, or whose messages are
 * not valid A2UI v0.9 for the basic catalog, yields no part and one `SurfaceTemplateError` naming
 * the template's kind and the path of what is wrong; nothing invalid is ever published.
 */
import { TurnstateError } from '../errors.js';
import { A2UI_BASIC_CATALOG_ID } from '../registries/surface-templates.js';
import type { SurfaceContext, SurfaceTemplateRegistryApi } from '../registries/types.js';
import type { Part } from '../types.js';
import { A2UI_MIME_TYPE, checkA2uiMessages, type A2uiProblem } from './a2ui.js';

/** One data record a surface may be built for. */
export interface SurfaceSource {
  /** The data kind (an AnnotatedRecord's `kind`, or `approvalKind(tool)`). */
  kind: string;
  data: unknown;
  sessionId: string;
  turnId: string;
  callId: string;
}

export class SurfaceTemplateError extends TurnstateError {
  readonly kind: string;
  readonly problems: readonly A2uiProblem[];
  constructor(kind: string, problems: readonly A2uiProblem[], cause?: unknown) {
    const list = problems.map((p) => `${p.path || '(the list)'}: ${p.message}`).join('; ');
    super('surface.template_invalid', `surface template '${kind}' built an invalid A2UI surface: ${list}`, {
      details: { kind, problems },
      ...(cause !== undefined ? { cause } : {}),
    });
    this.name = 'SurfaceTemplateError';
    this.kind = kind;
    this.problems = problems;
  }
}

/** A surface id unique per session and tool call: A2UI ids are free-form strings; keep them readable. */
export function surfaceIdFor(kind: string, callId: string): string {
  return `${kind}:${callId}`.replace(/[^A-Za-z0-9._:-]/g, '_');
}

export function buildSurfaces(
  templates: SurfaceTemplateRegistryApi,
  sources: readonly SurfaceSource[],
): { parts: Part[]; errors: SurfaceTemplateError[] } {
  const parts: Part[] = [];
  const errors: SurfaceTemplateError[] = [];
  for (const s of sources) {
    const template = templates.get(s.kind);
    if (template === undefined) continue;
    const ctx: SurfaceContext = {
      surfaceId: surfaceIdFor(s.kind, s.callId),
      catalogId: A2UI_BASIC_CATALOG_ID,
      kind: s.kind,
      sessionId: s.sessionId,
      turnId: s.turnId,
      callId: s.callId,
    };
    let messages: unknown;
    let problems: A2uiProblem[];
    try {
      messages = template.build(s.data, ctx);
    } catch (err) {
      errors.push(new SurfaceTemplateError(s.kind, [{ path: '', message: `build threw: ${err instanceof Error ? err.message : String(err)}` }], err));
      continue;
    }
    try {
      // checkA2uiMessages never throws; kept inside a try so that no template output can break the contract.
      problems = checkA2uiMessages(messages);
    } catch (err) {
      problems = [{ path: '', message: `could not be checked: ${err instanceof Error ? err.message : String(err)}` }];
    }
    if (problems.length > 0) {
      errors.push(new SurfaceTemplateError(s.kind, problems));
      continue;
    }
    parts.push({
      data: { messages: messages as unknown[] },
      metadata: { partType: 'a2ui-surface', mimeType: A2UI_MIME_TYPE, surfaceId: ctx.surfaceId, kind: s.kind, callId: s.callId, source: 'template' },
    });
  }
  return { parts, errors };
}
