import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRegistries } from '../../../src/create-registries.js';
import { createDelivery } from '../../../src/envelope/delivery.js';
import { createEventCodec } from '../../../src/transports/streams/codec.js';
import { BoundedSubscriber, FRAME_OVERHEAD, type Sink } from '../../../src/transports/streams/subscriber.js';
import type { SessionEvent } from '../../../src/types.js';
import { approvalRequested, delta, ev, mustArrive, received, settled, stateChange } from './events.js';

/** A sink whose "socket" holds up to `hwm` bytes until the test flushes it. */
class ManualSink implements Sink {
  frames: Buffer[] = [];
  pending = 0;
  /** Exact for this sink: while write() returns true, pending < hwm. */
  readonly highWaterMark: number;
  constructor(
    public hwm: number,
    readonly slack = 0,
  ) {
    this.highWaterMark = hwm;
  }
  write(frame: Buffer): boolean {
    this.frames.push(frame);
    this.pending += frame.byteLength + 8;
    return this.pending < this.hwm;
  }
  buffered(): number {
    return this.pending;
  }
  events(): SessionEvent[] {
    return this.frames.map((f) => JSON.parse(f.toString('utf8')) as SessionEvent);
  }
}

const codec = createEventCodec(createDelivery(createRegistries().partTypes));
const encode = (_sid: string, e: SessionEvent): Buffer => Buffer.from(JSON.stringify(e));

function make(max: number, hwm: number, slack = 0) {
  const sink = new ManualSink(hwm, slack);
  let overflows = 0;
  const sub = new BoundedSubscriber({
    sink,
    encode,
    classify: codec.classify,
    maxBufferedBytes: max,
    onOverflow: () => overflows++,
  });
  const flush = (): void => {
    sink.pending = 0;
    sub.drain();
  };
  return { sink, sub, flush, overflows: () => overflows };
}

describe('streams: bounded subscriber buffer', () => {
  it('streams:buffer:direct — frames go straight to a sink that accepts them, in order', () => {
    const { sink, sub } = make(100_000, 100_000);
    const evs = [ev(1, stateChange('idle', 'awaiting')), ev(2, received('c1', 0, 'ack', 'On it')), ev(3, settled())];
    for (const e of evs) sub.push('s1', e);
    expect(sink.events().map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(sub.queuedCount).toBe(0);
  });

  it('streams:buffer:backpressure — a sink that asks to wait gets nothing until drain, then everything in order', () => {
    const { sink, sub, flush } = make(100_000, 1);
    sub.push('s1', ev(1, stateChange('idle', 'awaiting')));
    expect(sub.isBlocked).toBe(true);
    sub.push('s1', ev(2, received('c1', 0, 'response', 'Hi')));
    sub.push('s1', ev(3, settled()));
    expect(sink.frames).toHaveLength(1);
    expect(sub.queuedCount).toBe(2);
    flush();
    expect(sink.events().map((e) => e.seq)).toEqual([1, 2]);
    flush();
    flush();
    expect(sink.events().map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('streams:buffer:coalesce-deltas — under pressure consecutive deltas of one part merge, text concatenated, last seq kept', () => {
    const one = Buffer.byteLength(JSON.stringify(ev(1, delta('c1', 0, 'x'))));
    const { sink, sub, flush, overflows } = make(4 * (one + FRAME_OVERHEAD) + 40, 1);
    sub.push('s1', ev(1, stateChange('idle', 'awaiting')));
    for (let i = 2; i <= 9; i++) sub.push('s1', ev(i, delta('c1', 0, String(i))));
    expect(overflows()).toBe(0);
    expect(sub.coalesced).toBeGreaterThan(0);
    for (let i = 0; i < 20; i++) flush();
    const deltas = sink.events().filter((e) => e.type === 'part.delta');
    expect(deltas.map((d) => (d.type === 'part.delta' ? d.text : '')).join('')).toBe('23456789');
    expect(deltas.at(-1)?.seq).toBe(9);
    expect(deltas.length).toBeLessThan(8);
  });

  it('streams:buffer:delta-before-final — a queued delta whose part.received is also queued is dropped, the part arrives whole', () => {
    const big = 'y'.repeat(200);
    const { sink, sub, flush, overflows } = make(900, 1);
    sub.push('s1', ev(1, stateChange('idle', 'awaiting')));
    sub.push('s1', ev(2, delta('c1', 0, big)));
    sub.push('s1', ev(3, delta('c1', 0, big)));
    sub.push('s1', ev(4, received('c1', 0, 'response', big + big)));
    expect(overflows()).toBe(0);
    for (let i = 0; i < 10; i++) flush();
    const types = sink.events().map((e) => e.type);
    expect(types).toEqual(['turnState.changed', 'part.received']);
  });

  it('streams:buffer:never-drop — envelope parts, state changes, approvals and settlement survive pressure; overflow instead', () => {
    const { sink, sub, overflows } = make(600, 1);
    sub.push('s1', ev(1, stateChange('idle', 'awaiting')));
    let seq = 2;
    while (overflows() === 0 && seq < 100) {
      sub.push('s1', ev(seq, seq % 3 === 0 ? approvalRequested('a' + seq) : received('c' + seq, 0, 'domain-data', 'd'.repeat(50))));
      expect(sub.heldBytes()).toBeLessThanOrEqual(600);
      seq++;
    }
    expect(overflows()).toBe(1);
    expect(sub.isOverflowed).toBe(true);
    expect(sub.push('s1', ev(seq, settled()))).toBe(false);
    expect(sub.heldBytes()).toBe(sink.pending);
  });

  it('streams:buffer:supersede — a streaming-only thinking part is dropped only for a later one of the same type', () => {
    const evs = [
      ev(1, stateChange('idle', 'awaiting')),
      ev(2, received('c1', 0, 'thinking', 'Searching flights '.repeat(5))),
      ev(3, { type: 'tool.called', callId: 't1', tool: 'search_flights', args: {}, actor: 'flights', side: 'server' }),
      ev(4, received('c2', 0, 'thinking', 'Comparing fares '.repeat(5))),
      ev(5, received('c3', 0, 'response', 'Here you go '.repeat(5))),
    ];
    const all = evs.reduce((n, e) => n + encode('s1', e).byteLength + FRAME_OVERHEAD, 0);
    const { sink, sub, flush, overflows } = make(all - 9, 1);
    for (const e of evs) sub.push('s1', e);
    expect(sub.coalesced).toBe(1);
    expect(overflows()).toBe(0);
    for (let i = 0; i < 10; i++) flush();
    const seqs = sink.events().map((e) => e.seq);
    expect(seqs).toEqual([1, 3, 4, 5]);
  });

  it('streams:buffer:oversized — a single frame larger than the bound is written when nothing else is held', () => {
    const { sink, sub, overflows } = make(100, 100_000);
    sub.push('s1', ev(1, received('c1', 0, 'response', 'z'.repeat(500))));
    expect(overflows()).toBe(0);
    expect(sink.frames).toHaveLength(1);
  });

  it('streams:buffer:oversized-flush — "a single frame larger than the bound is written when nothing else is held": bytes the sink only holds until the end of the tick are flushed, not counted', () => {
    // Like an HTTP response: what is written stays in buffered() until the tick ends (or flush()).
    const frames: Buffer[] = [];
    let tick = 0;
    const sink: Sink = {
      write: (f) => {
        frames.push(f);
        tick += f.byteLength;
        return tick < 1000;
      },
      buffered: () => tick,
      highWaterMark: 1000,
      flush: () => {
        tick = 0;
      },
    };
    let overflows = 0;
    const sub = new BoundedSubscriber({ sink, encode, classify: codec.classify, maxBufferedBytes: 2000, onOverflow: () => overflows++ });
    sub.push('s1', ev(1, stateChange('idle', 'awaiting')));
    sub.push('s1', ev(2, received('c1', 0, 'response', 'z'.repeat(5000))));
    sub.push('s1', ev(3, settled()));
    expect(overflows).toBe(0);
    expect(frames.map((f) => (JSON.parse(f.toString('utf8')) as SessionEvent).seq)).toEqual([1, 2, 3]);
  });

  it('streams:buffer:near-bound-flush — "a reader that keeps up gets large events live and on resume": a frame a little under the bound is not refused for bytes the sink only holds until the end of the tick; bytes the socket refused still count', () => {
    const MAX = 4000;
    // Like an HTTP response: writes stay in buffered() until the tick ends (or flush()); a socket
    // whose reader stopped takes nothing, so what is flushed stays buffered.
    const run = (reading: boolean) => {
      const frames: Buffer[] = [];
      let tick = 0;
      let refused = 0;
      const sink: Sink = {
        write: (f) => {
          frames.push(f);
          tick += f.byteLength;
          return tick + refused < 1000;
        },
        buffered: () => tick + refused,
        highWaterMark: 1000,
        flush: () => {
          if (!reading) refused += tick;
          tick = 0;
        },
      };
      let overflows = 0;
      const sub = new BoundedSubscriber({ sink, encode, classify: codec.classify, maxBufferedBytes: MAX, onOverflow: () => overflows++ });
      const small = ev(1, stateChange('idle', 'awaiting'));
      const probe = ev(2, received('c1', 0, 'response', ''));
      // Under the bound, by less than the small frame written just before it.
      const near = ev(2, received('c1', 0, 'response', 'z'.repeat(MAX - FRAME_OVERHEAD - encode('s1', probe).byteLength - 40)));
      const nearSize = encode('s1', near).byteLength + FRAME_OVERHEAD;
      expect(nearSize).toBeLessThan(MAX);
      expect(nearSize + encode('s1', small).byteLength).toBeGreaterThan(MAX);
      sub.push('s1', small);
      sub.push('s1', near);
      sub.push('s1', ev(3, settled()));
      return { seqs: frames.map((f) => (JSON.parse(f.toString('utf8')) as SessionEvent).seq), overflows };
    };
    expect(run(true)).toEqual({ seqs: [1, 2, 3], overflows: 0 });
    // A reader that stopped reading: the small frame is really held, so the near-bound one crosses the bound.
    expect(run(false)).toEqual({ seqs: [1], overflows: 1 });
  });

  it('streams:buffer:purge — unsubscribing removes only that session\'s queued events', () => {
    const { sink, sub, flush } = make(100_000, 1);
    sub.push('s1', ev(1, stateChange('idle', 'awaiting')));
    sub.push('s1', ev(2, settled()));
    sub.push('s2', ev(1, stateChange('idle', 'awaiting'), 's2'));
    sub.pushFrame(Buffer.from('{"type":"unsubscribed","sessionId":"s1"}'), 's1');
    sub.purge('s1');
    for (let i = 0; i < 5; i++) flush();
    expect(sink.frames.map((f) => f.toString())).toEqual([
      JSON.stringify(ev(1, stateChange('idle', 'awaiting'))),
      JSON.stringify(ev(1, stateChange('idle', 'awaiting'), 's2')),
      '{"type":"unsubscribed","sessionId":"s1"}',
    ]);
  });

  /** A random turn: deltas of several parts, thinking, tool calls, approvals, envelope parts. */
  const turnArb = fc.array(
    fc.oneof(
      { weight: 6, arbitrary: fc.record({ k: fc.constant('delta' as const), part: fc.integer({ min: 0, max: 2 }), text: fc.string({ maxLength: 30 }) }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('final' as const), part: fc.integer({ min: 0, max: 2 }) }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('thinking' as const), text: fc.string({ maxLength: 40 }) }) },
      { weight: 1, arbitrary: fc.record({ k: fc.constant('state' as const) }) },
      { weight: 1, arbitrary: fc.record({ k: fc.constant('approval' as const) }) },
    ),
    { minLength: 1, maxLength: 120 },
  );
  const actionsArb = fc.array(fc.oneof(fc.constant('push' as const), fc.constant('flush' as const), fc.constant('push' as const)), {
    minLength: 1,
    maxLength: 200,
  });

  it('streams:buffer:property — held bytes never exceed the bound; no kept event is lost, reordered or duplicated; delta text stays exact', () => {
    fc.assert(
      fc.property(turnArb, actionsArb, fc.integer({ min: 900, max: 6000 }), fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 0, max: 3000 }), (turn, actions, max, hwm, slack) => {
        let callGen = 0;
        const events: SessionEvent[] = turn.map((t, i) => {
          const seq = i + 1;
          switch (t.k) {
            case 'delta':
              return ev(seq, delta('c' + callGen, t.part, t.text));
            case 'final':
              return ev(seq, received('c' + callGen++, t.part, 'response', 'final'));
            case 'thinking':
              return ev(seq, received('th' + seq, 0, 'thinking', t.text));
            case 'state':
              return ev(seq, stateChange('awaiting', 'suspended'));
            case 'approval':
              return ev(seq, approvalRequested('a' + seq));
          }
        });
        const { sink, sub, flush, overflows } = make(max, hwm, slack);
        let next = 0;
        const step = (a: 'push' | 'flush'): void => {
          if (a === 'push' && next < events.length) sub.push('s1', events[next++]!);
          else flush();
          expect(sub.heldBytes()).toBeLessThanOrEqual(max);
        };
        for (const a of actions) step(a);
        while (next < events.length && !sub.isOverflowed) step('push');
        for (let i = 0; i < events.length + 2; i++) flush();

        const got = sink.events();
        const lastSeq = got.at(-1)?.seq ?? 0;
        for (let i = 1; i < got.length; i++) expect(got[i]!.seq).toBeGreaterThan(got[i - 1]!.seq);
        const gotSeqs = new Set(got.map((e) => e.seq));
        for (const e of events) if (e.seq <= lastSeq && mustArrive(e)) expect(gotSeqs.has(e.seq)).toBe(true);
        if (overflows() === 0) expect(lastSeq).toBe(events.length);
        // Deltas a client received for a part spell the original text exactly, up to the last one received.
        const key = (e: SessionEvent): string => (e.type === 'part.delta' ? `${e.callId}/${e.index}` : '');
        const lastDeltaSeq = new Map<string, number>();
        const gotText = new Map<string, string>();
        for (const e of got) {
          if (e.type !== 'part.delta') continue;
          lastDeltaSeq.set(key(e), e.seq);
          gotText.set(key(e), (gotText.get(key(e)) ?? '') + e.text);
        }
        for (const [k, upTo] of lastDeltaSeq) {
          const original = events.filter((e) => e.type === 'part.delta' && key(e) === k && e.seq <= upTo);
          const full = original.map((e) => (e.type === 'part.delta' ? e.text : '')).join('');
          expect(gotText.get(k)).toBe(full);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('codec: frames are not kept with their events', () => {
  it('streams:codec:bounded — "the cache is bounded: a store that keeps its event objects does not keep their frames with them": a frame of an event still held (as the in-memory store holds them) is freed once newer events were encoded', async () => {
    const { setFlagsFromString } = await import('node:v8');
    const { runInNewContext } = await import('node:vm');
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const c = createEventCodec(createDelivery(createRegistries().partTypes));
    const held: SessionEvent[] = [];
    const ev = (seq: number): SessionEvent => ({ seq, sessionId: 's', turnId: 't', at: '2026-01-01T00:00:00Z', type: 'part.delta', callId: 'c', index: 0, text: 'x'.repeat(1000) });
    held.push(ev(1));
    const refs = [new WeakRef(c.wsFrame('s', held[0]!)), new WeakRef(c.sseFrame('s', held[0]!))];
    // Fan-out of one event is served from the cache.
    expect(c.wsFrame('s', held[0]!)).toBe(refs[0]!.deref());
    for (let i = 2; i < 600; i++) {
      held.push(ev(i));
      c.wsFrame('s', held.at(-1)!);
      c.sseFrame('s', held.at(-1)!);
    }
    await new Promise((r) => setImmediate(r));
    gc();
    expect(refs.map((r) => r.deref())).toEqual([undefined, undefined]);
    expect(held).toHaveLength(599);
  });
});
