import { describe, expect, it } from 'vitest';
import { annotate } from '../../src/router/annotated.js';
import { FilterAndDistribute, type DistributionMeta } from '../../src/router/filter-distribute.js';
import { TurnstateError } from '../../src/errors.js';
import { EventRouter } from '../../src/router/router.js';
import { ctx, makeTool } from './fixtures.js';

const meta: DistributionMeta = { sessionId: 's1', turnId: 't1', actor: 'travel', tool: 'flight_search', callId: 'c1', scope: 'generalist' };

function offerRecord() {
  return annotate(
    {
      route: { origin: 'LGW', destination: 'CFU' },
      flights: [
        { id: 'F1', supplierRef: 'S-991', price: 120 },
        { id: 'F2', supplierRef: 'S-992', price: 140 },
      ],
      internalCost: 412.5,
      pricePerPerson: 129,
      summary: 'Two direct flights on the 14th',
    },
    {
      kind: 'flights',
      fields: {
        '/internalCost': ['audit'],
        '/pricePerPerson': ['llm-session', 'ui-stream', 'audit'],
        '/flights/*/supplierRef': ['audit', 'cache'],
        '/summary': ['llm-session', 'formatter:*'],
      },
      default: ['llm-session', 'ui-stream', 'cache', 'audit'],
    },
  );
}

describe('FilterAndDistribute', () => {
  it('router:annotated:filtered-per-destination — each registered destination gets its own view', () => {
    const got = new Map<string, unknown>();
    const fad = new FilterAndDistribute();
    for (const id of ['audit', 'cache', 'formatter:email']) fad.register({ id, deliver: (view) => void got.set(id, view) });
    const { views } = fad.distribute(offerRecord(), meta);

    expect([...views.keys()]).toEqual(['llm-session', 'ui-stream', 'audit', 'cache', 'formatter:email']);
    expect(views.get('llm-session')).toEqual({
      route: { origin: 'LGW', destination: 'CFU' },
      flights: [
        { id: 'F1', price: 120 },
        { id: 'F2', price: 140 },
      ],
      pricePerPerson: 129,
      summary: 'Two direct flights on the 14th',
    });
    expect(views.get('ui-stream')).toEqual({
      route: { origin: 'LGW', destination: 'CFU' },
      flights: [
        { id: 'F1', price: 120 },
        { id: 'F2', price: 140 },
      ],
      pricePerPerson: 129,
    });
    expect(views.get('audit')).toEqual({
      route: { origin: 'LGW', destination: 'CFU' },
      flights: [
        { id: 'F1', supplierRef: 'S-991', price: 120 },
        { id: 'F2', supplierRef: 'S-992', price: 140 },
      ],
      internalCost: 412.5,
      pricePerPerson: 129,
    });
    expect(views.get('cache')).toEqual({
      route: { origin: 'LGW', destination: 'CFU' },
      flights: [
        { id: 'F1', supplierRef: 'S-991', price: 120 },
        { id: 'F2', supplierRef: 'S-992', price: 140 },
      ],
    });
    expect(views.get('formatter:email')).toEqual({ summary: 'Two direct flights on the 14th' });
    // deliver received exactly the view distribute() reports.
    for (const id of ['audit', 'cache', 'formatter:email']) expect(got.get(id)).toBe(views.get(id));
    // Unannotated subtrees are shared, not copied.
    const rec = offerRecord();
    expect((fad.distribute(rec, meta).views.get('llm-session') as { route: unknown }).route).toBe(rec.data.route);
  });

  it('router:distribute:hidden-not-delivered — a destination that may see nothing gets no deliver call', () => {
    const calls: string[] = [];
    const fad = new FilterAndDistribute({
      destinations: [
        { id: 'peer-response', deliver: () => void calls.push('peer-response') },
        { id: 'audit', deliver: () => void calls.push('audit') },
      ],
    });
    const rec = annotate({ a: 1, b: 2 }, { fields: { '/a': ['audit'] }, default: ['audit', 'llm-session'] });
    const { views } = fad.distribute(rec, meta);
    expect(views.has('peer-response')).toBe(true);
    expect(views.get('peer-response')).toBeUndefined();
    expect(calls).toEqual(['audit']);
  });

  it('router:distribute:isolated-errors — a failing deliver (sync or async) affects no other destination', async () => {
    const errors: { dest: string; msg: string; callId: string }[] = [];
    const delivered: string[] = [];
    const fad = new FilterAndDistribute({
      onError: (e, dest, m) => void errors.push({ dest, msg: (e as Error).message, callId: m.callId }),
    });
    fad.register({ id: 'cache', deliver: () => { throw new Error('cache down'); } });
    fad.register({ id: 'audit', deliver: async () => { throw new Error('audit rejected'); } });
    fad.register({ id: 'formatter:email', deliver: (v) => void delivered.push(JSON.stringify(v)) });
    const { views } = fad.distribute(annotate({ x: 1 }), meta);
    expect(views.get('llm-session')).toEqual({ x: 1 });
    expect(delivered).toEqual(['{"x":1}']);
    await new Promise((r) => setImmediate(r));
    expect(errors).toEqual([
      { dest: 'cache', msg: 'cache down', callId: 'c1' },
      { dest: 'audit', msg: 'audit rejected', callId: 'c1' },
    ]);
  });

  it('router:distribute:isolated-errors — A deliver whose thenable throws from then() (or from its then getter) MUST NOT affect the others or the call; the error goes to onError and the destination keeps receiving views', async () => {
    const errors: string[] = [];
    const fad = new FilterAndDistribute({ onError: (e, dest, m) => void errors.push(`${dest}:${m.callId}:${(e as Error).message}`) });
    let audit = 0;
    let sms = 0;
    // Lazy thenables (query builders) throw from then() when they fail to start.
    fad.register({
      id: 'audit',
      deliver: () => {
        audit++;
        return { then() { throw new Error('pool closed'); } } as never;
      },
    });
    fad.register({
      id: 'formatter:sms',
      deliver: () => {
        sms++;
        return { get then() { throw new Error('then getter'); } } as never;
      },
    });
    const cache: unknown[] = [];
    fad.register({ id: 'cache', deliver: (v) => void cache.push(v) });
    const router = new EventRouter({ filterAndDistribute: fad });
    const tool = makeTool({ name: 'quote_n', scope: 'generalist', handler: (a: { n: number }) => annotate({ n: a.n }) });
    for (let n = 1; n <= 2; n++) {
      const out = await router.dispatchTool(tool, { n }, ctx({ callId: `t${n}` }));
      expect(out).toMatchObject({ isError: false, llmContent: JSON.stringify({ n }) });
    }
    expect(cache).toEqual([{ n: 1 }, { n: 2 }]);
    expect([audit, sms]).toEqual([2, 2]);
    expect(errors).toEqual(['audit:t1:pool closed', 'formatter:sms:t1:then getter', 'audit:t2:pool closed', 'formatter:sms:t2:then getter']);
    expect(fad.stats('audit')).toEqual({ delivered: 0, failed: 2, dropped: 0, pending: 0 });
    expect(fad.stats('formatter:sms')).toEqual({ delivered: 0, failed: 2, dropped: 0, pending: 0 });
  });

  it('router:distribute:isolated-errors — A thenable that calls back and then throws, or calls back twice, has one outcome (the first)', async () => {
    const errors: string[] = [];
    const fad = new FilterAndDistribute({ onError: (e, dest) => void errors.push(`${dest}:${(e as Error).message}`) });
    fad.register({ id: 'audit', deliver: () => ({ then(ok: () => void) { ok(); throw new Error('late throw'); } }) as never });
    fad.register({ id: 'cache', deliver: () => ({ then(ok: () => void, bad: (e: unknown) => void) { ok(); ok(); bad(new Error('late reject')); } }) as never });
    fad.distribute(annotate({ x: 1 }), meta);
    fad.distribute(annotate({ x: 2 }), meta);
    expect(errors).toEqual([]);
    expect(fad.stats('audit')).toEqual({ delivered: 2, failed: 0, dropped: 0, pending: 0 });
    expect(fad.stats('cache')).toEqual({ delivered: 2, failed: 0, dropped: 0, pending: 0 });
  });

  it('router:distribute:built-ins — llm-session and ui-stream exist; duplicates and bad ids are errors', () => {
    const fad = new FilterAndDistribute();
    expect(fad.ids()).toEqual(['llm-session', 'ui-stream']);
    expect(() => fad.register({ id: 'llm-session' })).toThrow(/"llm-session" is built in/);
    const off = fad.register({ id: 'audit' });
    expect(() => fad.register({ id: 'audit' })).toThrow(/"audit" is already registered/);
    for (const id of ['', 'formatter:', 'formatter:*', '*']) {
      expect(() => fad.register({ id })).toThrow(TurnstateError);
    }
    expect(() => fad.register({ id: 'x', deliver: 'no' as never })).toThrow(/deliver must be a function/);
    off();
    expect(fad.has('audit')).toBe(false);
    fad.register({ id: 'audit' });
    expect(fad.has('audit')).toBe(true);
  });

  it('router:distribute:built-ins — distribute() refuses something that is not an AnnotatedRecord', () => {
    expect(() => new FilterAndDistribute().distribute({ data: 1 } as never, meta)).toThrow(/expected an AnnotatedRecord/);
  });
});
