/**
 * The surface-template registry: a consumer registers one template per data kind; a template
 * turns that kind's domain data into A2UI v0.9 server-to-client messages (createSurface,
 * updateComponents, updateDataModel, ...) whose components bind into the data model by JSON
 * Pointer (spec 001 "Builds A2UI surface(s) using consumer-registered surface templates matching
 * the data kind").
 *
 * A leaf like every registry: templates are held as functions and never run or validated here.
 * Building and validation (with @a2ui/web_core) live in envelope/surfaces.ts; a template whose
 * output is not valid A2UI fails there, naming the template and the path.
 */
import { closestName, Registry } from './registry.js';
import { RegistrationError } from '../errors.js';
import type { SurfaceTemplate, SurfaceTemplateRegistryApi } from './types.js';

/** The A2UI v0.9 basic catalog id (the only catalog the runtime validates against). */
export const A2UI_BASIC_CATALOG_ID = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';

/** Data kinds: a letter, then letters, digits, '.', '_', ':' or '-', at most 128 characters. */
export const DATA_KIND = /^[a-zA-Z][a-zA-Z0-9._:-]{0,127}$/;

/** Action names a surface's buttons use to answer the approval named by `context.approvalId`. */
export const SURFACE_APPROVE_ACTION = 'approve';
export const SURFACE_DENY_ACTION = 'deny';

/** The data kind of a pending approval of `tool`: a template registered for it renders the approval-request. */
export function approvalKind(tool: string): string {
  return `approval:${tool}`;
}

const TEMPLATE_FIELDS: readonly string[] = Object.freeze(['kind', 'description', 'build']);

export class SurfaceTemplateRegistry extends Registry<SurfaceTemplate> implements SurfaceTemplateRegistryApi {
  register(template: SurfaceTemplate): SurfaceTemplate {
    if (template === null || typeof template !== 'object' || Array.isArray(template)) {
      throw new RegistrationError('surfaces:template:object', 'a surface template must be an object { kind, build(data, ctx) }');
    }
    const kind: unknown = template.kind;
    if (typeof kind !== 'string' || !DATA_KIND.test(kind)) {
      throw new RegistrationError(
        'surfaces:kind:invalid',
        `surface template kind ${typeof kind === 'string' ? JSON.stringify(kind) : String(kind)} is invalid: a letter, then letters, digits, '.', '_', ':' or '-', at most 128 characters`,
        { kind },
      );
    }
    // A misspelt field is refused naming it (a `descripton` would otherwise be dropped unnoticed).
    for (const key of Object.keys(template)) {
      if (TEMPLATE_FIELDS.includes(key)) continue;
      const near = closestName(key, TEMPLATE_FIELDS);
      throw new RegistrationError(
        'surfaces:template:field-unknown',
        `surface template '${kind}': ${key} is not a template field${near === undefined ? '' : ` (did you mean ${near}?)`}; the fields are ${TEMPLATE_FIELDS.join(', ')}`,
        { kind, field: key },
      );
    }
    if (typeof template.build !== 'function') {
      throw new RegistrationError('surfaces:build:function', `surface template '${kind}': build must be a function (data, ctx) => A2UI messages`, { kind });
    }
    if (template.description !== undefined && typeof template.description !== 'string') {
      throw new RegistrationError('surfaces:description:string', `surface template '${kind}': description must be a string`, { kind });
    }
    if (this.has(kind)) {
      throw new RegistrationError('surfaces:duplicate:rejected', `a surface template for data kind '${kind}' is already registered; one template per kind`, { kind });
    }
    return this.add(kind, Object.freeze({ ...template }));
  }
}
