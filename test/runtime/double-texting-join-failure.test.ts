/**
 * Double-texting `interrupt`: a joining message whose write fails is not accepted, so nothing it
 * asked for may govern the running turn (double-texting.ts: "Not written, so not accepted").
 * Here the refused message asked for llm-context; the turn's envelope must not carry the actor's
 * own llm-context part, which only reaches the envelope when an originator consumes it.
 */
import { describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/api.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { addGatedTool, answer, harness, part, respond, toolUse } from '../runtime/helpers.js';

describe('double-texting interrupt: a join whose write fails', () => {
  it('double-texting:interrupt:join-write-fails — "not written, so not accepted": a joining message whose write fails changes nothing of the running turn; the refused sender\'s llm-context is not delivered', async () => {
    const store = createMemoryStore();
    const { rt } = harness(
      {
        rules: [
          { when: { on: 'user', call: 0 }, respond: answer(toolUse('slow', { q: 'x' })) },
          { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'done'), part('llm-context', 'analysis for a peer')], 'complete')) },
        ],
      },
      { store },
    );
    const release = addGatedTool(rt.registries, 'slow');
    rt.registries.actors.register({ name: 'a', tools: ['slow'] });
    const s = await rt.createSession({ actor: 'a', doubleTexting: 'interrupt' });
    const r1 = await s.send('first');
    // Wait until the tool runs.
    for (let i = 0; i < 200 && !(await rt.history(s.id)).some((e) => e.type === 'tool.called'); i++) await new Promise((r) => setTimeout(r, 5));
    // The joining message's commit (no events, a snapshot) fails once.
    const commit = store.commit.bind(store);
    let armed = true;
    (store as { commit: SessionStore['commit'] }).commit = (id, step) => {
      if (armed && step.events === undefined && step.snapshot !== undefined) {
        armed = false;
        throw new Error('disk I/O error (injected)');
      }
      return commit(id, step);
    };
    await expect(s.send('second', { consumes: ['llm-context'] })).rejects.toThrow('disk I/O error (injected)');
    expect(armed).toBe(false);
    release();
    const out = await r1.settled;
    expect(out.finalizedBy).toBe('complete');
    expect(out.envelope!.parts.map((p) => p.metadata.partType)).not.toContain('llm-context');
    await rt.close();
  });
});
