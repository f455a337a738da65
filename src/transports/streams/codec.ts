/**
 * Session events as the streaming delivery class sees them, and their wire frames.
 *
 * Contract:
 * - What is sent is decided by the envelope's delivery view (`Delivery.streaming`): the codec
 *   keeps no rules of its own.
 * - Frames are encoded once per event object while it is recent (the last RECENT events of each
 *   wire format), so fanning one event out to many subscribers, or to followers a little behind,
 *   serialises it once per format. The cache is bounded: a store that keeps its event objects
 *   (the in-memory one) does not keep their frames with them.
 * - `classify()` tells the bounded buffer what compaction may do with an event; only deltas and
 *   parts the delivery view marks `supersedable` (streaming-only parts) are ever coalescible.
 */
import type { Delivery } from '../../envelope/delivery.js';
import type { SessionEvent } from '../../types.js';
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

/** How many recent events' encodings are kept per wire format. */
const RECENT = 256;

/** The encodings of the last RECENT events (insertion order: the oldest goes first). */
class Recent<V> {
  private readonly map = new Map<SessionEvent, V>();
  get(event: SessionEvent): V | undefined {
    return this.map.get(event);
  }
  set(event: SessionEvent, value: V): void {
    this.map.set(event, value);
    if (this.map.size > RECENT) this.map.delete(this.map.keys().next().value!);
  }
}

export function createEventCodec(delivery: Delivery): EventCodec {
  const json = new Recent<string>();
  const sse = new Recent<Buffer>();
  const ws = new Recent<Buffer>();

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

  return {
    drops: delivery.streamingDrops,
    dropsAny: delivery.streamingDropsAny,
    visible: delivery.streaming,

    classify(event) {
      if (event.type === 'part.delta') return Coalesce.Delta;
      if (event.type === 'part.received' && delivery.of(event.part.metadata.partType)?.supersedable === true) return Coalesce.Supersede;
      return Coalesce.Keep;
    },

    sseFrame(_sessionId, event) {
      // Fan-out asks for the same event many times in a row: a one-entry cache before the map.
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
