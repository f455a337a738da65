/**
 * docs/concepts/replay.md: "A tool_use id is looked up within its turn: ids are unique within a
 * turn's conversation, not across turns". A script block's fixed `id` fires in every turn; the
 * path and the served results must not mix those turns up.
 */
import { describe, expect, it } from 'vitest';
import type { ModelScript } from '../../src/models/script.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { Registries } from '../../src/registries/types.js';
import { extractPath, replaySession } from '../../src/replay/index.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { respond } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tu = (name: string, id: string, input: Record<string, unknown> = {}) => ({ type: 'tool_use' as const, name, input, id });

describe('replay: tool_use ids used again in later turns', () => {
  it('replay:exact:ids-per-turn — "results are put in call order, and served, per turn": parallel calls with fixed ids that finish in another order than they were made, over three turns, are listed in call order and replay identically', async () => {
    // Finishing order b, c, a in every turn; made a, b, c, with the same three ids each turn.
    const delays: Record<string, number> = { par_a: 30, par_b: 5, par_c: 15 };
    const setup = (r: Registries, live: boolean) => {
      for (const name of Object.keys(delays)) {
        r.tools.register({ name, description: name, inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => (live && (await sleep(delays[name]!)), { name }) });
      }
      r.actors.register({ name: 'desk', tools: Object.keys(delays) });
    };
    const script: ModelScript = {
      rules: [
        { when: { on: 'user' }, respond: { blocks: [tu('par_a', 'toolu_fixed_a'), tu('par_b', 'toolu_fixed_b'), tu('par_c', 'toolu_fixed_c')] } },
        { when: { on: 'tool_result' }, respond: { blocks: [{ ...respond([{ text: 'done', partType: 'response' }], 'complete'), id: 'toolu_fixed_r' }] } },
      ],
    };
    const store = createMemoryStore();
    const rt = createRuntime({ model: createScriptedModel(script), store });
    setup(rt.registries, true);
    const s = await rt.createSession({ id: 'par', actor: 'desk' });
    for (let i = 0; i < 3; i++) expect((await (await s.send(`go ${i}`)).settled).finalizedBy).toBe('complete');
    const finished = (await rt.history('par')).filter((e) => e.type === 'tool.result').map((e) => (e.type === 'tool.result' ? e.tool : ''));
    expect(finished).toEqual(Array(3).fill(['par_b', 'par_c', 'par_a']).flat());

    const path = extractPath('par', await rt.history('par'), await s.mailbox());
    expect(path.turns.map((t) => t.steps[0]!.results)).toEqual(Array(3).fill(['par_a:ok', 'par_b:ok', 'par_c:ok']));
    const r = await replaySession(store, 'par', { setup: (reg) => setup(reg, false) });
    expect(r.diff.differences).toEqual([]);
    await rt.close();
  });

  it('replay:exact:ids-per-turn — "served, per turn": a call with a fixed id that failed in one turn and succeeded in later ones is served each turn\'s own outcome', async () => {
    let runs = 0;
    const setup = (r: Registries) => {
      r.tools.register({
        name: 'count',
        description: 'counts',
        inputSchema: { type: 'object' },
        scope: 'generalist',
        handler: () => {
          if (++runs === 1) throw new Error('boom');
          return { n: runs };
        },
      });
      r.actors.register({ name: 'a', tools: ['count'] });
    };
    const script: ModelScript = {
      rules: [
        { when: { on: 'user' }, respond: { blocks: [tu('count', 'toolu_fixed')] } },
        { when: { on: 'rejection' }, respond: { blocks: [respond([{ text: 'failed', partType: 'response' }], 'complete')] } },
        { when: { on: 'tool_result', text: '"n":(\\d+)' }, respond: { blocks: [respond([{ text: 'n=$1', partType: 'response' }], 'complete')] } },
      ],
    };
    const store = createMemoryStore();
    const rt = createRuntime({ model: createScriptedModel(script), store });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'cnt', actor: 'a' });
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) texts.push(...(await (await s.send('go')).settled).parts.map((p) => p.text ?? ''));
    expect(texts).toEqual(['failed', 'n=2', 'n=3']);
    const r = await replaySession(store, 'cnt', { setup });
    expect(r.diff.differences).toEqual([]);
    // Each turn's model read its own turn's result.
    const read = r.mailbox.flatMap((m) => (m.kind === 'tool_result' && m.tool === 'count' ? [`${m.isError ? 'error' : 'ok'}:${m.content}`] : []));
    expect(read).toEqual(['error:tool "count" failed: boom', 'ok:{"n":2}', 'ok:{"n":3}']);
    await rt.close();
  });

  it('replay:exact:ids-per-turn — "answered in the recorded order, per turn": approvals of calls whose fixed ids come in another order in a later turn get their own approval ids and are answered in each turn\'s recorded order', async () => {
    const setup = (r: Registries) => {
      for (const name of ['ap_x', 'ap_y']) r.tools.register({ name, description: name, inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: () => ({ name }) });
      r.actors.register({ name: 'desk', tools: ['ap_x', 'ap_y'] });
    };
    const script: ModelScript = {
      rules: [
        { when: { on: 'user', text: '^one' }, respond: { blocks: [tu('ap_x', 'toolu_x'), tu('ap_y', 'toolu_y')] } },
        { when: { on: 'user', text: '^two' }, respond: { blocks: [tu('ap_y', 'toolu_y'), tu('ap_x', 'toolu_x')] } },
        { when: { on: 'tool_result' }, respond: { blocks: [respond([{ text: 'done', partType: 'response' }], 'complete')] } },
      ],
    };
    const store = createMemoryStore();
    const rt = createRuntime({ model: createScriptedModel(script), store });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'ap', actor: 'desk' });
    for (const text of ['one', 'two']) {
      expect((await (await s.send(text)).settled).held).toBeDefined();
      const snap = await s.snapshot();
      expect(snap.pendingApprovals).toHaveLength(2);
      for (const p of snap.pendingApprovals) expect(await s.answerApproval(p.approvalId, { approved: true }, { userId: 'u' }, 'test')).toMatchObject({ ok: true });
      await s.idle();
      expect((await rt.history('ap')).at(-1)).toMatchObject({ type: 'turn.settled', finalizedBy: 'complete' });
    }
    const r = await replaySession(store, 'ap', { setup });
    expect(r.diff.differences).toEqual([]);
    await rt.close();
  });
});
