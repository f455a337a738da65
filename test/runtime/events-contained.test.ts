/**
 * "events:subscriber:errors-contained" (docs/concepts/session-events.md): a session.events()
 * subscriber that throws is reported, as the router's stream subscribers are
 * (router:streams:errors-contained), and affects neither the session, the other subscribers nor
 * the process.
 */
import { config as rxConfig, filter, tap } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import type { SessionEvent } from '../../src/types.js';

const respond = { type: 'tool_use' as const, name: 'respond', input: { parts: [{ text: 'Hello.', metadata: { partType: 'response' } }], turnState: 'complete' } };

let unhandled: unknown[];
let warnings: (Error & { code?: string })[];
let prevUnhandled: typeof rxConfig.onUnhandledError;
const onWarning = (w: Error & { code?: string }): void => void warnings.push(w);
beforeEach(() => {
  unhandled = [];
  warnings = [];
  prevUnhandled = rxConfig.onUnhandledError;
  // What RxJS would otherwise rethrow in a timer (an uncaught exception: the process ends).
  rxConfig.onUnhandledError = (e) => void unhandled.push(e);
  process.on('warning', onWarning);
});
afterEach(() => {
  rxConfig.onUnhandledError = prevUnhandled;
  process.off('warning', onWarning);
});

describe('session.events() subscribers are contained', () => {
  it('events:subscriber:errors-contained — "A subscriber ... that throws MUST NOT affect the call, other subscribers or the process; the error goes to onError": a throwing channel hub (function, observer object, piped) is reported as TURNSTATE_OBSERVER_ERROR, the other subscriber gets every event, two turns settle', async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: { blocks: [respond] } }] }) });
    rt.registries.actors.register({ name: 'a', system: 'x' });
    const s = await rt.createSession({ actor: 'a' });
    const seenByThrower: number[] = [];
    s.events().subscribe((e) => {
      seenByThrower.push(e.seq);
      if (e.type === 'turn.settled') throw new Error('SMTP 554 rejected');
    });
    const observer = {
      name: 'whatsapp',
      next(this: { name: string }, e: SessionEvent) {
        if (e.type === 'turn.settled') throw new Error(`${this.name} down`);
      },
    };
    s.events().subscribe(observer);
    s.events()
      .pipe(filter((e) => e.type === 'part.received'))
      .subscribe(() => {
        throw new Error('piped subscriber failed');
      });
    const got: SessionEvent[] = [];
    s.events().subscribe((e) => got.push(e));
    for (const m of ['one', 'two']) expect((await (await s.send(m)).settled).finalizedBy).toBe('complete');
    await new Promise<void>((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
    const log = await rt.store.readEvents(s.id, 0);
    expect(got).toEqual(log);
    // The thrower keeps receiving events after its throw.
    expect(seenByThrower).toEqual(log.map((e) => e.seq));
    const reported = warnings.filter((w) => w.code === 'TURNSTATE_OBSERVER_ERROR').map((w) => w.message);
    expect(reported.filter((m) => m.includes('SMTP 554 rejected'))).toHaveLength(2);
    expect(reported.filter((m) => m.includes('whatsapp down'))).toHaveLength(2);
    expect(reported.filter((m) => m.includes('piped subscriber failed'))).toHaveLength(2);
    expect(reported.every((m) => m.includes(s.id))).toBe(true);
    await rt.close();
  });

  it('events:subscriber:errors-contained — "an operator that throws ends its subscription … reported the same way (the warning says the subscription ended)": a throwing tap is reported once as ended, the others go on', async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: { blocks: [respond] } }] }) });
    rt.registries.actors.register({ name: 'a', system: 'x' });
    const s = await rt.createSession({ actor: 'a' });
    let afterTap = 0;
    s.events()
      .pipe(
        tap((e) => {
          if (e.type === 'turn.started') throw new Error('tap failed');
        }),
      )
      .subscribe(() => afterTap++);
    const got: SessionEvent[] = [];
    s.events().subscribe((e) => got.push(e));
    for (const m of ['one', 'two']) expect((await (await s.send(m)).settled).finalizedBy).toBe('complete');
    await new Promise<void>((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
    expect(afterTap).toBe(0);
    expect(got).toEqual(await rt.store.readEvents(s.id, 0));
    const reported = warnings.filter((w) => w.code === 'TURNSTATE_OBSERVER_ERROR').map((w) => w.message);
    expect(reported).toEqual([expect.stringMatching(new RegExp(`subscription of session ${s.id} ended with an error nothing handled: tap failed`))]);
    await rt.close();
  });
});
