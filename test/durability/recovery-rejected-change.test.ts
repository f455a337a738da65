/**
 * Recovery (recovery.ts, unappliedChange): only a state-changing respond() the runtime accepted
 * can be "committed but never applied". One it rejected (here: a state change in the same
 * response as a tool use, respond:state-change:last-call) must stay rejected after a restart:
 * the turn goes on with the tool's result and the model's next response.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/api.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { StepCommit } from '../../src/types.js';
import { addTool, answer, part, respond, toolUse } from '../runtime/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-review-recovery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SCRIPT = {
  rules: [
    { when: { on: 'user' as const }, respond: answer(respond([part('response', 'premature answer')], 'complete'), toolUse('look', { q: 'x' })) },
    { when: { on: 'tool_result' as const }, respond: answer(respond([part('response', 'answer after the look')], 'complete')) },
  ],
};

function open(store: SessionStore) {
  const rt = createRuntime({ model: createScriptedModel(SCRIPT), store });
  addTool(rt.registries, 'look', () => ({ seen: true }));
  rt.registries.actors.register({ name: 'a', tools: ['look'] });
  return rt;
}

describe('recovery after a response whose state change was rejected', () => {
  it('durability:recover:rejected-change — "only a state change the runtime accepted can be committed but never applied": after a crash, a rejected state change stays rejected and the turn completes with the answer given after the tool ran', async () => {
    const path = join(dir, 'c.db');
    const inner = createSqliteStore({ path });
    let dead = false;
    // The process dies just before the tool's dispatch is written (after the response was).
    const crashing = new Proxy(inner, {
      get(target, prop) {
        if (prop === 'groupCommit') return undefined;
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== 'function') return v;
        if (prop !== 'commit') return (v as (...a: unknown[]) => unknown).bind(target);
        return (id: string, step: StepCommit) => {
          if (dead || step.events?.some((e) => e.type === 'tool.called')) {
            dead = true;
            throw new Error('simulated crash');
          }
          return (v as (...a: unknown[]) => unknown).call(target, id, step);
        };
      },
    }) as SessionStore;
    const rt1 = open(crashing);
    const s1 = await rt1.createSession({ id: 'c', actor: 'a' });
    const r = await s1.send('go');
    await Promise.race([r.settled.catch(() => undefined), new Promise((res) => setTimeout(res, 1000))]);
    expect(dead).toBe(true);
    await rt1.close().catch(() => undefined);

    const rt2 = open(createSqliteStore({ path }));
    await rt2.recover();
    const s = (await rt2.session('c'))!;
    await s.idle();
    const events = await rt2.history('c');
    const received = events.flatMap((e) => (e.type === 'part.received' ? [e.part.text] : []));
    expect(received).not.toContain('premature answer');
    expect(received).toContain('answer after the look');
    expect(events.filter((e) => e.type === 'turn.settled')).toHaveLength(1);
    await rt2.close();
  });
});
