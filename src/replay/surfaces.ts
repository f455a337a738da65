/**
 * Surfaces in a replay. A template is code, so a replay whose setup does not register the
 * application's templates (an inferred setup) could not build the surfaces the recording has.
 * For each data kind the recording built surfaces for and the setup left unregistered, this
 * registers a template that serves the recorded messages of the same tool call (or, under another
 * model, the turn's next recorded surface of the kind, renamed to the new call's surface id), so
 * the re-run publishes the same a2ui-surface parts. A call the recording has no surface for fails the
 * build (`SurfaceTemplateError`), which the replay diff then shows as a missing part.
 */
import type { SurfaceTemplateRegistryApi } from '../registries/types.js';
import type { Recording } from './recording.js';

export function registerRecordedSurfaces(templates: SurfaceTemplateRegistryApi, rec: Recording): void {
  const byKind = new Map<string, { turnId: string; callId: string; surfaceId: string | undefined; messages: readonly unknown[]; used: boolean }[]>();
  for (const e of rec.events) {
    if (e.type !== 'part.received' || e.part.metadata.partType !== 'a2ui-surface' || e.part.metadata.source !== 'template') continue;
    const { kind, callId, surfaceId } = e.part.metadata;
    const messages = e.part.data?.messages;
    if (typeof kind !== 'string' || typeof callId !== 'string' || !Array.isArray(messages)) continue;
    let surfaces = byKind.get(kind);
    if (surfaces === undefined) byKind.set(kind, (surfaces = []));
    surfaces.push({ turnId: e.turnId, callId, surfaceId: typeof surfaceId === 'string' ? surfaceId : undefined, messages, used: false });
  }
  for (const [kind, surfaces] of byKind) {
    if (templates.has(kind)) continue;
    templates.register({
      kind,
      description: 'the recorded surfaces of this kind (replay)',
      build(_data, ctx) {
        // The same call (a replay of the recording's own responses); else, under another model
        // whose calls have new ids, the turn's next recorded surface of this kind, in order, as
        // tool results are matched within the turn.
        const s = surfaces.find((x) => !x.used && x.callId === ctx.callId) ?? surfaces.find((x) => !x.used && x.turnId === ctx.turnId);
        if (s === undefined) throw new Error(`the recording has no '${kind}' surface for call ${ctx.callId}`);
        s.used = true;
        return withSurfaceId(s.messages, s.surfaceId, ctx.surfaceId);
      },
    });
  }
}

/** A2UI's four message kinds; each names its surface in `surfaceId`. */
const KINDS = ['createSurface', 'updateComponents', 'updateDataModel', 'deleteSurface'] as const;

/**
 * The recorded messages with the recorded surface's id replaced by the replay's (under another
 * model the call, and so the surface id, is new: the part names the new one, its messages must
 * too). Other surfaces' ids, and the same messages when the ids agree, are left as they are.
 */
function withSurfaceId(messages: readonly unknown[], recorded: string | undefined, now: string): readonly unknown[] {
  if (recorded === undefined || recorded === now) return messages;
  return messages.map((m) => {
    if (m === null || typeof m !== 'object') return m;
    for (const k of KINDS) {
      const body = (m as Record<string, unknown>)[k];
      if (body !== null && typeof body === 'object' && (body as { surfaceId?: unknown }).surfaceId === recorded) {
        return { ...m, [k]: { ...body, surfaceId: now } };
      }
    }
    return m;
  });
}
