/**
 * Replayed surfaces under another model: "surfaces:oracle — Every surface the runtime emits is
 * accepted by @a2ui/web_core's ... MessageProcessor" holds for a replay too, and a replayed part's
 * messages name the surface its metadata names (found by a review session: under a new script
 * the part said `flights:<new call>` while its messages created `flights:<recorded call>`).
 */
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import { describe, expect, it } from 'vitest';
import { createTravelDesk, travelDeskScript } from '../../examples/travel-desk/app.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { replayWithScript } from '../../src/replay/index.js';
import { partText } from '../../src/replay/path.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import type { SessionEvent } from '../../src/types.js';

type SurfacePart = { metadata: { surfaceId?: string; partType: string }; data: { messages: Record<string, { surfaceId?: string }>[] } };
const surfaces = (events: readonly SessionEvent[]): SurfacePart[] =>
  events.flatMap((e) => (e.type === 'part.received' && e.part.metadata.partType === 'a2ui-surface' ? [e.part as unknown as SurfacePart] : []));
const idsOf = (p: SurfacePart) => p.data.messages.map((m) => Object.values(m).find((v) => typeof v === 'object' && v !== null)?.surfaceId);

describe('replay: recorded surfaces under another model', () => {
  it('surfaces:oracle — a replayed surface part (inferred setup, new call ids) has its messages name its own surfaceId, and one MessageProcessor for the whole replay accepts them all', async () => {
    const store = createMemoryStore();
    const rt = createRuntime({ model: createScriptedModel(travelDeskScript()), store });
    createTravelDesk(rt);
    const s = await rt.createSession({ actor: 'triage' });
    for (const text of ['find flights to Corfu', 'flights to Rome']) await (await s.send(text)).settled;
    const recorded = surfaces(await store.readEvents(s.id, 0));
    expect(recorded.length).toBeGreaterThanOrEqual(2);

    const r = await replayWithScript(store, s.id, travelDeskScript());
    // The same surfaces under their new ids: the paths agree (a part's own surface id is not content).
    expect(r.diff.identical).toBe(true);
    const replayed = surfaces(r.events);
    expect(replayed).toHaveLength(recorded.length);
    const processor = new MessageProcessor([basicCatalog]);
    for (const [i, part] of replayed.entries()) {
      // A new script: new call ids, so new surface ids...
      expect(part.metadata.surfaceId).not.toBe(recorded[i]!.metadata.surfaceId);
      // ...which the messages carry, as the recorded part's messages carried the recorded one.
      expect(new Set(idsOf(part))).toEqual(new Set([part.metadata.surfaceId]));
      expect(() => processor.processMessages(structuredClone(part.data.messages) as never)).not.toThrow();
    }
    await rt.close();
  });

  it("a surface part's content is compared without its own surface id: the same messages under another id agree, other content does not", () => {
    const part = (id: string, city: string) => ({
      metadata: { partType: 'a2ui-surface', surfaceId: id },
      data: { messages: [{ version: 'v0.9', createSurface: { surfaceId: id, catalogId: 'c' } }, { version: 'v0.9', updateDataModel: { surfaceId: id, path: '/', value: { city, other: 'flights:toolu_b' } } }] },
    });
    expect(partText(part('flights:toolu_a', 'Corfu'))).toBe(partText(part('flights:toolu_z', 'Corfu')));
    expect(partText(part('flights:toolu_a', 'Corfu'))).not.toBe(partText(part('flights:toolu_z', 'Rome')));
    // Only the part's own id: another surface named in the content still counts.
    expect(partText(part('flights:toolu_a', 'Corfu'))).toContain('flights:toolu_b');
  });
});
