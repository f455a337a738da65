/**
 * Session events as the streaming delivery class sees them, and their wire frames.
 *
 * Contract:
 * - `visible()` applies the part type registry's `streaming` rules: a part (or delta) whose rule
 *   is `drop` is not sent, and such parts are removed from a settled envelope. Every other event
 *   passes unchanged.
 * - Frames are encoded once per event object (WeakMap), so fanning one event out to many
 *   subscribers serialises it once per wire format.
 * - `classify()` tells the bounded buffer what compaction may do with an event; only deltas and
 *   streaming-only parts (the registry says `buffered: drop`, not in the envelope) are ever coalescible.
 */
import type { PartTypeRegistryApi } from '../../registries/types.js';
import { assertNever, type Part, type SessionEvent } from '../../types.js';
import { Coalesce } from './subscriber.js';

export interface EventCodec {
  /** The event to send on a streaming transport, or undefined when the delivery rules drop it. */
  visible(event: SessionEvent): SessionEvent | undefined;
  classify(event: SessionEvent): Coalesce;
  /** Whether the streaming rules drop this part type. */
  drops(partType: string): boolean;
  /** Whether any registered part type is dropped on streaming (then untyped deltas wait for their type). */
  dropsAny(): boolean;
  /** `id: <seq>`, `event: <type>`, `data: <json>` and a blank line. */
  sseFrame(sessionId: string, event: SessionEvent): Buffer;
  /** `{"type":"event","sessionId":…,"seq":…,"event":…}`. */
  wsFrame(sessionId: string, event: SessionEvent): Buffer;
}

export function createEventCodec(partTypes: PartTypeRegistryApi): EventCodec {
  const dropCache = new Map<string, boolean>();
  const streamingOnlyCache = new Map<string, boolean>();
  const filtered = new WeakMap<SessionEvent, SessionEvent>();
  const json = new WeakMap<SessionEvent, string>();
  const sse = new WeakMap<SessionEvent, Buffer>();
  const ws = new WeakMap<SessionEvent, Buffer>();

  /** Unknown part types are delivered: the registry rejects them before they are published. */
  const drops = (partType: string): boolean => {
    let d = dropCache.get(partType);
    if (d === undefined) {
      d = partTypes.has(partType) && partTypes.deliveryFor(partType, 'streaming') === 'drop';
      dropCache.set(partType, d);
    }
    return d;
  };

  const streamingOnly = (partType: string): boolean => {
    let s = streamingOnlyCache.get(partType);
    if (s === undefined) {
      const def = partTypes.get(partType);
      s = def !== undefined && !def.meta.inEnvelope && def.meta.delivery.buffered === 'drop' && def.meta.delivery.streaming !== 'drop';
      streamingOnlyCache.set(partType, s);
    }
    return s;
  };

  const jsonOf = (event: SessionEvent): string => {
    let j = json.get(event);
    if (j === undefined) {
      j = JSON.stringify(event);
      json.set(event, j);
    }
    return j;
  };

  let lastSse: SessionEvent | undefined;
  let lastSseFrame: Buffer | undefined;
  let lastWs: SessionEvent | undefined;
  let lastWsFrame: Buffer | undefined;
  let dropsAnyFor = -1;
  let dropsAnyValue = false;

  return {
    drops,
    dropsAny() {
      const ids = partTypes.ids();
      if (ids.length !== dropsAnyFor) {
        dropsAnyFor = ids.length;
        dropsAnyValue = ids.some(drops);
      }
      return dropsAnyValue;
    },

    visible(event) {
      switch (event.type) {
        case 'part.received':
          return drops(event.part.metadata.partType) ? undefined : event;
        case 'part.delta':
          return event.partType !== undefined && drops(event.partType) ? undefined : event;
        case 'part.retracted':
          return event;
        case 'envelope.settled': {
          const parts = event.envelope.parts;
          let any = false;
          for (const p of parts) if (drops(p.metadata.partType)) any = true;
          if (!any) return event;
          let f = filtered.get(event);
          if (f === undefined) {
            const kept: Part[] = parts.filter((p) => !drops(p.metadata.partType));
            f = { ...event, envelope: { ...event.envelope, parts: kept } };
            filtered.set(event, f);
          }
          return f;
        }
        case 'turn.started':
        case 'turnState.changed':
        case 'tool.called':
        case 'tool.result':
        case 'approval.requested':
        case 'approval.resolved':
        case 'actor.passed':
        case 'model.usage':
        case 'turn.settled':
          return event;
        default:
          return assertNever(event, 'session event');
      }
    },

    classify(event) {
      if (event.type === 'part.delta') return Coalesce.Delta;
      if (event.type === 'part.received' && streamingOnly(event.part.metadata.partType)) return Coalesce.Supersede;
      return Coalesce.Keep;
    },

    sseFrame(_sessionId, event) {
      // Fan-out asks for the same event many times in a row: a one-entry cache before the WeakMap.
      if (event === lastSse) return lastSseFrame!;
      let f = sse.get(event);
      if (f === undefined) {
        f = Buffer.from(`id: ${event.seq}\nevent: ${event.type}\ndata: ${jsonOf(event)}\n\n`, 'utf8');
        sse.set(event, f);
      }
      lastSse = event;
      lastSseFrame = f;
      return f;
    },

    wsFrame(sessionId, event) {
      if (event === lastWs) return lastWsFrame!;
      let f = ws.get(event);
      if (f === undefined) {
        f = Buffer.from(
          `{"type":"event","sessionId":${JSON.stringify(sessionId)},"seq":${event.seq},"event":${jsonOf(event)}}`,
          'utf8',
        );
        ws.set(event, f);
      }
      lastWs = event;
      lastWsFrame = f;
      return f;
    },
  };
}
