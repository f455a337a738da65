/**
 * Surfaces in a replay. A template is code, so a replay whose setup does not register the
 * application's templates (an inferred setup) could not build the surfaces the recording has.
 * For each data kind the recording built surfaces for and the setup left unregistered, this
 * registers a template that serves the recorded messages of the same tool call (or, under another
 * model, the turn's next recorded surface of the kind), so the re-run publishes the same
 * a2ui-surface parts. A call the recording has no surface for fails the
 * build (`SurfaceTemplateError`), which the replay diff then shows as a missing part.
 */
import type { SurfaceTemplateRegistryApi } from '../registries/types.js';
import type { Recording } from './recording.js';

export function registerRecordedSurfaces(templates: SurfaceTemplateRegistryApi, rec: Recording): void {
  const byKind = new Map<string, { turnId: string; callId: string; messages: readonly unknown[]; used: boolean }[]>();
  for (const e of rec.events) {
    if (e.type !== 'part.received' || e.part.metadata.partType !== 'a2ui-surface' || e.part.metadata.source !== 'template') continue;
    const { kind, callId } = e.part.metadata;
    const messages = e.part.data?.messages;
    if (typeof kind !== 'string' || typeof callId !== 'string' || !Array.isArray(messages)) continue;
    let surfaces = byKind.get(kind);
    if (surfaces === undefined) byKind.set(kind, (surfaces = []));
    surfaces.push({ turnId: e.turnId, callId, messages, used: false });
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
        return s.messages;
      },
    });
  }
}
