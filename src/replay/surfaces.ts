/**
 * Surfaces in a replay. A template is code, so a replay whose setup does not register the
 * application's templates (an inferred setup) could not build the surfaces the recording has.
 * For each data kind the recording built surfaces for and the setup left unregistered, this
 * registers a template that serves the recorded messages of the same tool call, so the re-run
 * publishes the same a2ui-surface parts. A call the recording has no surface for fails the
 * build (`SurfaceTemplateError`), which the replay diff then shows as a missing part.
 */
import type { SurfaceTemplateRegistryApi } from '../registries/types.js';
import type { Recording } from './recording.js';

export function registerRecordedSurfaces(templates: SurfaceTemplateRegistryApi, rec: Recording): void {
  const byKind = new Map<string, Map<string, readonly unknown[]>>();
  for (const e of rec.events) {
    if (e.type !== 'part.received' || e.part.metadata.partType !== 'a2ui-surface' || e.part.metadata.source !== 'template') continue;
    const { kind, callId } = e.part.metadata;
    const messages = e.part.data?.messages;
    if (typeof kind !== 'string' || typeof callId !== 'string' || !Array.isArray(messages)) continue;
    let calls = byKind.get(kind);
    if (calls === undefined) byKind.set(kind, (calls = new Map()));
    calls.set(callId, messages);
  }
  for (const [kind, calls] of byKind) {
    if (templates.has(kind)) continue;
    templates.register({
      kind,
      description: 'the recorded surfaces of this kind (replay)',
      build(_data, ctx) {
        const recorded = calls.get(ctx.callId);
        if (recorded === undefined) throw new Error(`the recording has no '${kind}' surface for call ${ctx.callId}`);
        return recorded;
      },
    });
  }
}
