/**
 * A handler's `args` are its own: a handler that changes them (a default filled in, a field
 * normalised, a list sorted in place) changes neither what the model sent (the assistant message
 * every later request carries), nor the `tool.called` event, the published call, the execution
 * records, nor what a retried attempt receives.
 */
import { describe, expect, it } from 'vitest';
import { MemoryExecutionLog } from '../../src/router/execution-log.js';
import { ownArgs } from '../../src/router/own-args.js';
import { EventRouter, type RoutedCall, type RoutedEvent, type RoutedResult } from '../../src/router/router.js';
import type { ToolContext } from '../../src/registries/types.js';
import { Recorder, addTool, answer, harness, part, respond, toolUse } from '../runtime/helpers.js';
import { ctx, makeTool } from './fixtures.js';

/** What the model sent; every test compares against a fresh one. */
const sent = () => ({ q: 'corfu', filters: { tags: ['beach', 'family'], nights: 7 } });

/** A handler that reports what it was given, then changes it in place (top level and nested), then fails `failures` times. */
function mutating(failures = 0) {
  const seen: string[] = [];
  return {
    seen,
    handler: (a: any, _c?: ToolContext) => {
      seen.push(JSON.stringify(a));
      a.q = 'MUTATED';
      a.filters.tags.push('MUTATED');
      a.filters.nights = 0;
      delete a.filters;
      if (seen.length <= failures) throw new Error(`flake ${seen.length}`);
      return { ok: true };
    },
  };
}

describe('router:handler:own-args', () => {
  it('router:handler:own-args — "Each handler attempt MUST get its own copy of the call\'s args": a handler that changes them changes neither the caller\'s object, the routed events, calls$ / results$, the execution records, nor what a retried attempt receives', async () => {
    const log = new MemoryExecutionLog();
    const router = new EventRouter({ executionLog: log });
    const events: RoutedEvent[] = [];
    const calls: RoutedCall[] = [];
    const results: RoutedResult[] = [];
    router.observe({}, (e) => void events.push(e));
    router.calls$.subscribe((c) => void calls.push(c));
    router.results$.subscribe((r) => void results.push(r));
    const once = mutating();
    const retried = mutating(2);
    const tools = [
      // The one-attempt path (a handler that answers at once), the attempts path (retries), a bypass call, an async handler.
      makeTool({ name: 'own_once', scope: 'generalist', handler: once.handler }),
      makeTool({ name: 'own_retried', scope: 'generalist', handler: retried.handler, extra: { idempotent: true, retry: { attempts: 3 } } }),
      makeTool({ name: 'own_bypass', scope: 'specialist', routing: 'bypass', handler: mutating().handler }),
      makeTool({ name: 'own_async', scope: 'generalist', handler: async (a: any) => mutating().handler(a) }),
    ];
    for (const tool of tools) {
      const args = sent();
      const out = await router.dispatchTool(tool, args, ctx());
      expect(out.isError, tool.name).toBe(false);
      expect(args, tool.name).toEqual(sent());
      for (const x of out.executions) expect(x.args, tool.name).toEqual(sent());
    }
    // Every attempt was given the call's args as sent, not what the attempt before left of them.
    expect(once.seen).toEqual([JSON.stringify(sent())]);
    expect(retried.seen).toEqual([1, 2, 3].map(() => JSON.stringify(sent())));
    expect(log.list().map((x) => x.args)).toEqual(Array.from({ length: 6 }, sent));
    expect(events.filter((e) => e.type.startsWith('tool_call:')).map((e) => e.payload)).toEqual([sent(), sent(), sent()]);
    expect(calls.map((c) => c.args)).toEqual([sent(), sent(), sent()]);
    expect(results.map((r) => r.call.args)).toEqual([sent(), sent(), sent()]);

    // A handler registered with handle() gets its own copy too.
    const override = mutating();
    router.handle('tool_call:own_once', override.handler);
    const args = sent();
    await router.dispatchTool(tools[0]!, args, ctx());
    expect(override.seen).toEqual([JSON.stringify(sent())]);
    expect(args).toEqual(sent());
  });

  it('router:handler:own-args — "the copy is of JSON data": objects and arrays are copied (an own `__proto__` key as data, a null prototype kept); other values are handed over as they are', () => {
    for (const v of [undefined, null, 3, 'text', true, 5n]) expect(ownArgs(v)).toBe(v);
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"list":[{"a":1}],"deep":{"x":{"y":[1,[2]]}}}');
    const c = ownArgs(parsed) as any;
    expect(c).toEqual(parsed);
    expect(c).not.toBe(parsed);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c)).toEqual(['__proto__', 'list', 'deep']);
    expect(c.polluted).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(c, '__proto__')!.value).not.toBe(parsed['__proto__']);
    expect(c.list[0]).not.toBe(parsed.list[0]);
    expect(c.deep.x.y[1]).not.toBe(parsed.deep.x.y[1]);
    const bare = Object.assign(Object.create(null), { k: { v: 1 } });
    const cb = ownArgs(bare) as any;
    expect(Object.getPrototypeOf(cb)).toBeNull();
    expect(cb.k).toEqual({ v: 1 });
    expect(cb.k).not.toBe(bare.k);
    // Not JSON data: only a direct dispatchTool caller can pass it, and it is theirs as it is.
    const when = new Date(0);
    const instance = new (class Query { q = 'x'; })();
    const held = ownArgs({ when, instance, fn: Math.max }) as any;
    expect(held.when).toBe(when);
    expect(held.instance).toBe(instance);
    // A cycle (JSON has none) does not send the copy round for ever.
    const loop: any = { name: 'loop' };
    loop.self = loop;
    const cl = ownArgs(loop) as any;
    expect(cl).not.toBe(loop);
    let p = cl;
    for (let i = 0; i < 100; i++) p = p.self;
    expect(p.name).toBe('loop');
    // Arguments that cannot be read are passed on as they are (the handler fails on them).
    const r = Proxy.revocable({}, {});
    r.revoke();
    expect(ownArgs(r.proxy)).toBe(r.proxy);
  });

  it('router:handler:own-args — through a runtime: a handler that changes its args rewrites neither the model\'s history (the assistant tool_use input), the tool.called event, the execution log, nor what its retries receive', async () => {
    const { rt, model } = harness({
      rules: [
        { when: { on: 'user', call: 0 }, times: 1, respond: answer(toolUse('lookup', { q: 'corfu' }, 'toolu_1')) },
        { respond: answer(respond([part('response', 'done')], 'complete')) },
      ],
    });
    const seen: string[] = [];
    addTool(
      rt.registries,
      'lookup',
      (a) => {
        seen.push(JSON.stringify(a));
        a.q = 'MUTATED-BY-HANDLER';
        if (seen.length < 3) throw new Error('transient');
        return { ok: true };
      },
      { idempotent: true, retry: { attempts: 3 } },
    );
    rt.registries.actors.register({ name: 'a', tools: ['lookup'] });
    const s = await rt.createSession({ actor: 'a' });
    const rec = new Recorder(s);
    await (await s.send('go')).settled;
    expect(seen).toEqual(['{"q":"corfu"}', '{"q":"corfu"}', '{"q":"corfu"}']);
    const last = model.requests[model.requests.length - 1]!;
    const toolUseBlock = last.messages.flatMap((m: any) => m.content).find((b: any) => b.type === 'tool_use');
    expect(toolUseBlock.input).toEqual({ q: 'corfu' });
    expect((rec.of('tool.called')[0] as any).args).toEqual({ q: 'corfu' });
    const execs = await s.executions();
    expect(execs.map((e) => [e.attempt, e.outcome, e.args])).toEqual([
      [1, 'error', { q: 'corfu' }],
      [2, 'error', { q: 'corfu' }],
      [3, 'ok', { q: 'corfu' }],
    ]);
    await rt.close();
  });
});
