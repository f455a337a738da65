/**
 * The session event stream (DESIGN "Session events", docs/concepts/session-events.md): one
 * ordered stream per session, gapless seq, write-ahead (durable before published), and
 * replay-then-live subscription from any seq — with a synchronous and an asynchronous store.
 */
import { describe, expect, it } from 'vitest';
import { config as rxConfig, firstValueFrom, take, toArray } from 'rxjs';
import type { ModelEvent, ModelPort, SessionStore } from '../../src/machines/ports.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { SessionEvent } from '../../src/types.js';
import { ModelError } from '../../src/errors.js';
import { createRuntime } from '../../src/runtime.js';
import { Recorder, addTool, answer, checkStream, harness, part, respond, sequence, toolUse } from './helpers.js';

/** The memory store behind a macrotask per call: every read and write is really asynchronous. */
function slowStore(): SessionStore & { committedSeqs: number[] } {
  const inner = createMemoryStore();
  const committedSeqs: number[] = [];
  const later = <T>(f: () => T) => new Promise<T>((res, rej) => setTimeout(() => {
    try {
      res(f());
    } catch (e) {
      rej(e);
    }
  }, 0));
  return {
    kind: 'slow-memory',
    committedSeqs,
    createSession: (r) => later(() => inner.createSession(r)),
    getSession: (id) => later(() => inner.getSession(id)),
    listSessions: (f) => later(() => inner.listSessions(f)),
    deleteSession: (id) => later(() => inner.deleteSession(id)),
    commit: (id, step) =>
      later(() => {
        inner.commit(id, step);
        for (const e of step.events ?? []) committedSeqs.push(e.seq);
      }),
    readEvents: (id, after, limit) => later(() => inner.readEvents(id, after, limit)),
    lastSeq: (id) => later(() => inner.lastSeq(id)),
    readMailbox: (id, after) => later(() => inner.readMailbox(id, after)),
    readQueue: (id) => later(() => inner.readQueue(id)),
    readExecutions: (id) => later(() => inner.readExecutions(id)),
    loadSnapshot: (id) => later(() => inner.loadSnapshot(id)),
    getApproval: (id) => later(() => inner.getApproval(id)),
    listApprovals: (f) => later(() => inner.listApprovals(f)),
    resolveApproval: (id, r) => later(() => inner.resolveApproval(id, r)),
    close: () => later(() => inner.close()),
  };
}

const script = {
  rules: [
    { when: { on: 'user' as const }, respond: answer(respond([part('ack', 'Looking.')], 'awaiting'), toolUse('lookup', { q: 'x' })) },
    { when: { on: 'tool_result' as const }, times: 1, respond: { chunkSize: 5, blocks: [respond([part('thinking', 'Almost there.')], 'awaiting'), toolUse('lookup', { q: 'y' })] } },
    { when: { on: 'tool_result' as const }, respond: { chunkSize: 9, blocks: [respond([part('response', 'Here is the answer you asked for.')], 'complete')] } },
  ],
};

for (const storeKind of ['memory', 'async', 'sqlite'] as const) {
  describe(`session events (${storeKind} store)`, () => {
    const make = () => {
      const store = storeKind === 'async' ? slowStore() : undefined;
      const h = harness(script, store ? { store } : storeKind === 'sqlite' ? { store: createSqliteStore({ path: ':memory:' }) } : {});
      // Each turn replays the script from the top.
      let n = 0;
      addTool(h.rt.registries, 'lookup', (a) => ({ n: ++n, q: a.q }));
      h.rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
      return { ...h, store };
    };

    it('events:seq:gapless — seq is 1..n in publication order across turns', async () => {
      const { rt, model } = make();
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      const r1 = await s.send('one');
      await r1.settled;
      model.setScript(script);
      const r2 = await s.send('two');
      await r2.settled;
      checkStream(rec.events, rt.registries, { settledTurns: [r1.turnId, r2.turnId] });
      expect(rec.events.at(-1)!.seq).toBe((await s.snapshot()).lastSeq);
    });

    it('events:write-ahead — every event is committed to the store before a subscriber sees it', async () => {
      const { rt, store } = make();
      const s = await rt.createSession({ actor: 'a' });
      const violations: number[] = [];
      const storeSeen = store ?? rt.store;
      s.events().subscribe((e) => {
        // With the async store the committed seqs are recorded; with memory, the log is readable.
        if (store) {
          if (!store.committedSeqs.includes(e.seq)) violations.push(e.seq);
        } else {
          const last = storeSeen.lastSeq(s.id) as number;
          if (last < e.seq) violations.push(e.seq);
        }
      });
      await (await s.send('one')).settled;
      expect(violations).toEqual([]);
    });

    it('events:replay-then-live — a subscriber joining mid-turn from seq 0 or k gets every event once, in order', async () => {
      const { rt } = make();
      const s = await rt.createSession({ actor: 'a' });
      const all = new Recorder(s);
      const late: { from: number; events: SessionEvent[] }[] = [];
      // Subscribe again after every event of the turn, from 0 and from the current seq.
      const sub = s.events().subscribe((e) => {
        if (late.length < 40) {
          for (const from of [0, e.seq, Math.max(0, e.seq - 3)]) {
            const box = { from, events: [] as SessionEvent[] };
            late.push(box);
            s.events(from).subscribe((x) => box.events.push(x));
          }
        }
      });
      const out = await (await s.send('go')).settled;
      await new Promise((r) => setTimeout(r, 20));
      sub.unsubscribe();
      const n = all.events.length;
      expect(all.events.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      expect(late.length).toBeGreaterThan(10);
      for (const box of late) {
        expect(box.events.map((e) => e.seq), `subscribed from ${box.from}`).toEqual(Array.from({ length: n - box.from }, (_, i) => box.from + i + 1));
        expect(box.events).toEqual(all.events.slice(box.from));
      }
      checkStream(all.events, rt.registries, { settledTurns: [out.turnId] });
    });

    it('events:replay:after-settle — a subscriber after the turn gets the whole history, then live events of the next turn', async () => {
      const { rt, model } = make();
      const s = await rt.createSession({ actor: 'a' });
      await (await s.send('one')).settled;
      const before = (await s.snapshot()).lastSeq;
      const got: SessionEvent[] = [];
      s.events().subscribe((e) => got.push(e));
      const replayed = await firstValueFrom(s.events(2).pipe(take(before - 2), toArray()));
      expect(replayed.map((e) => e.seq)).toEqual(Array.from({ length: before - 2 }, (_, i) => i + 3));
      model.setScript(script);
      await (await s.send('two')).settled;
      await new Promise((r) => setTimeout(r, 10));
      expect(got.map((e) => e.seq)).toEqual(Array.from({ length: got.length }, (_, i) => i + 1));
      expect(got.length).toBeGreaterThan(before);
      expect(got.filter((e) => e.type === 'turn.settled')).toHaveLength(2);
    });

    it('events:ordering:per-call — each respond() call publishes its parts, then its turnState.changed; part.delta precede their part.received', async () => {
      const { rt } = make();
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      await (await s.send('go')).settled;
      expect(rec.of('part.received').map((p) => p.part.metadata.partType)).toEqual(['ack', 'thinking', 'response']);
      for (const p of rec.of('part.received')) {
        const next = rec.events[p.seq]!; // the event after p (seq is 1-based)
        expect(['part.received', 'turnState.changed']).toContain(next.type);
        const deltas = rec.of('part.delta').filter((d) => d.callId === p.callId && d.index === p.index);
        for (const d of deltas) expect(d.seq).toBeLessThan(p.seq);
        if (deltas.length && p.part.text !== undefined) expect(deltas.map((d) => d.text).join('')).toBe(p.part.text);
      }
      // Every tool.result follows its tool.called.
      for (const r of rec.of('tool.result')) {
        const called = rec.of('tool.called').find((c) => c.callId === r.callId)!;
        expect(called.seq).toBeLessThan(r.seq);
      }
      // turn.started is first, turn.settled last.
      expect(rec.events[0]!.type).toBe('turn.started');
      expect(rec.events.at(-1)!.type).toBe('turn.settled');
    });

    for (const trigger of ['envelope.settled', 'turn.settled'] as const) {
      it(`events:replay-then-live — "a subscriber from k receives exactly the events k+1 .. n in order, each once": also when a subscriber sends the next message from its ${trigger} callback (the next turn's events are published while the last ones are still being delivered)`, async () => {
        const { rt, model } = make();
        const s = await rt.createSession({ actor: 'a' });
        const sender: SessionEvent[] = [];
        const before: SessionEvent[] = [];
        const after: SessionEvent[] = [];
        let followUp: Promise<unknown> | undefined;
        s.events().subscribe((e) => before.push(e));
        s.events().subscribe((e) => {
          sender.push(e);
          if (e.type === trigger && followUp === undefined) {
            model.setScript(script);
            followUp = s.send('two').then((r) => r.settled);
          }
        });
        s.events().subscribe((e) => after.push(e));
        await (await s.send('one')).settled;
        await followUp;
        await s.idle();
        const stored = (await rt.history(s.id)).map((e) => e.seq);
        expect(stored.filter((q, i) => q !== i + 1)).toEqual([]);
        expect((await rt.history(s.id)).filter((e) => e.type === 'turn.settled')).toHaveLength(2);
        expect({ before: before.map((e) => e.seq), sender: sender.map((e) => e.seq), after: after.map((e) => e.seq) }).toEqual({ before: stored, sender: stored, after: stored });
      });
    }

    it('events:cursor:checked — "a subscriber from k receives exactly the events k+1 .. n": an afterSeq that is no seq (NaN, negative, fractional, a string) is refused by events(afterSeq) itself (cursor.invalid), and one past the session\'s last seq errors the subscription with cursor.ahead naming the last seq, as SSE and WebSocket refuse such a cursor, instead of silently skipping the events up to it', async () => {
      const { rt } = make();
      const s = await rt.createSession({ actor: 'a' });
      await (await s.send('go')).settled;
      const last = (await s.snapshot()).lastSeq;
      for (const [v, shown] of [[Number.NaN, 'NaN'], [-1, '-1'], [1.5, '1.5'], ['3', '"3"'], [Number.POSITIVE_INFINITY, 'Infinity'], [2 ** 53 + 2, '9007199254740994']] as const) {
        expect(() => s.events(v as number), String(v)).toThrow(
          expect.objectContaining({ code: 'cursor.invalid', message: `events(afterSeq): afterSeq must be a non-negative integer seq (0: from the start), got ${shown}` }),
        );
      }
      const err = await new Promise<unknown>((resolve) => s.events(last + 5).subscribe({ next: () => resolve('an event'), error: resolve }));
      expect(err).toMatchObject({
        code: 'cursor.ahead',
        message: `events(afterSeq): afterSeq ${last + 5} is past the end of session "${s.id}" (its last seq is ${last}); resume from a seq this session sent, or from 0`,
        details: { lastSeq: last },
      });
      // From the last seq (or -0, which is 0): the next turn's events, the first of them last + 1.
      const next = firstValueFrom(s.events(last));
      const all = firstValueFrom(s.events(-0));
      await (await s.send('again')).settled;
      expect((await next).seq).toBe(last + 1);
      expect((await all).seq).toBe(1);
    });

    it('events:events-stable — the same events are readable from the store after the turn', async () => {
      const { rt } = make();
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      await (await s.send('go')).settled;
      const stored = await rt.store.readEvents(s.id, 0);
      expect(stored).toEqual(rec.events);
    });
  });
}

describe('part.delta with non-BMP text', () => {
  it('events:delta:well-formed — streamed deltas of text with emoji are each well-formed UTF-16 and concatenate to the part text', async () => {
    const text = 'Flights 🛫 to Corfu 🇬🇷: 2 options 👍🏽 — €94 / €187 𝄞';
    for (const chunkSize of [1, 2, 3, 5, 7]) {
      const { rt } = harness({ rules: [{ respond: { chunkSize, blocks: [respond([part('response', text)], 'complete')] } }] });
      rt.registries.actors.register({ name: 'a' });
      const s = await rt.createSession({ actor: 'a' });
      const rec = new Recorder(s);
      await (await s.send('go')).settled;
      const deltas = rec.of('part.delta');
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.map((d) => d.text).join('')).toBe(text);
      for (const d of deltas) expect((d.text as any).isWellFormed(), `chunkSize ${chunkSize}: delta ${JSON.stringify(d.text)}`).toBe(true);
      // What a UTF-8 transport delivers: each delta encoded on its own.
      const enc = new TextEncoder();
      const dec = new TextDecoder();
      expect(deltas.map((d) => dec.decode(enc.encode(d.text))).join('')).toBe(text);
    }
  });
});

describe('part.delta is provisional', () => {
  it('events:delta:provisional — a streamed call that is then rejected publishes its deltas, then part.retracted (rejected), never a part.received', async () => {
    const { rt } = harness(
      sequence([
        { chunkSize: 6, blocks: [respond([part('response', 'This answer is rejected later.')], 'no-such-state', { id: 'toolu_rej' })] },
        answer(respond([part('response', 'Fixed answer.')], 'complete')),
      ]),
    );
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('go')).settled;
    const rejected = rec.of('part.delta').filter((d) => d.callId === 'toolu_rej');
    expect(rejected.map((d) => d.text).join('')).toBe('This answer is rejected later.');
    expect(rec.of('part.received').filter((p) => p.callId === 'toolu_rej')).toEqual([]);
    expect(out.parts.map((p) => p.text)).toEqual(['Fixed answer.']);
    // One part.retracted takes the call's text back, after its deltas and with the response's model.usage.
    const retracted = rec.of('part.retracted');
    expect(retracted.map((r) => [r.callId, r.reason])).toEqual([['toolu_rej', 'rejected']]);
    const usage = rec.of('model.usage')[0]!;
    for (const d of rejected) expect(d.seq).toBeLessThan(retracted[0]!.seq);
    expect(retracted[0]!.seq).toBeLessThan(usage.seq);
    // A call that streamed and was accepted is never retracted.
    const fixedCall = rec.of('part.received')[0]!.callId;
    expect(retracted.some((r) => r.callId === fixedCall)).toBe(false);
  });

  it('events:delta:retracted-failed — deltas of a call whose model response fails mid-stream are retracted (failed) before the error settles the turn', async () => {
    const model: ModelPort = {
      name: 'breaks',
      async *stream(): AsyncIterable<ModelEvent> {
        yield { type: 'block.start', index: 0, block: { type: 'tool_use', id: 'toolu_cut', name: 'respond' } };
        yield { type: 'input.delta', index: 0, partialJson: '{"parts":[{"text":"Half an ans' };
        throw new ModelError('model.overloaded', 'the model is overloaded');
      },
    };
    const rt = createRuntime({ model });
    rt.registries.actors.register({ name: 'a' });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    const out = await (await s.send('go')).settled;
    expect(out.finalizedBy).toBe('error');
    expect(rec.of('part.delta').map((d) => d.text).join('')).toBe('Half an ans');
    const retracted = rec.of('part.retracted');
    expect(retracted.map((r) => [r.callId, r.reason])).toEqual([['toolu_cut', 'failed']]);
    expect(retracted[0]!.seq).toBeLessThan(rec.of('turn.settled')[0]!.seq);
    expect(rec.of('part.received').some((p) => p.callId === 'toolu_cut')).toBe(false);
  });
});

describe('subscriber isolation', () => {
  it('events:subscriber-throws — a subscriber that throws affects neither the turn nor other subscribers; its error is reported (a process warning), not rethrown by RxJS', async () => {
    const captured: unknown[] = [];
    const warned: string[] = [];
    const onWarning = (w: Error & { code?: string }): void => void (w.code === 'TURNSTATE_OBSERVER_ERROR' && warned.push(w.message));
    process.on('warning', onWarning);
    const prev = rxConfig.onUnhandledError;
    rxConfig.onUnhandledError = (e) => void captured.push(e);
    try {
      const { rt } = harness(script);
      addTool(rt.registries, 'lookup');
      rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
      const s = await rt.createSession({ actor: 'a' });
      s.events().subscribe(() => {
        throw new Error('bad subscriber');
      });
      const rec = new Recorder(s);
      const out = await (await s.send('go')).settled;
      expect(out.finalizedBy).toBe('complete');
      checkStream(rec.events, rt.registries, { settledTurns: [out.turnId] });
      await new Promise((r) => setTimeout(r, 5));
      // Contained (router:streams:errors-contained): reported, never RxJS's unhandled error (which ends the process).
      expect(captured).toEqual([]);
      expect(warned.length).toBeGreaterThan(0);
      expect(warned[0]).toContain('bad subscriber');
    } finally {
      rxConfig.onUnhandledError = prev;
      process.off('warning', onWarning);
    }
  });
});

