/**
 * SessionHandle.updateTurnTools: the running turn's tool settings replaced while it waits, used
 * from its next tool call on, and written with the turn (a restarted turn keeps them).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';

const script = {
  rules: [
    { when: { on: 'user' as const }, respond: { blocks: [{ type: 'tool_use' as const, name: 'gated', input: {} }] } },
    { when: { on: 'tool_result' as const, tool: 'gated' }, respond: { blocks: [{ type: 'tool_use' as const, name: 'wire_money', input: { amount: 5 } }] } },
    { respond: { blocks: [{ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text: 'Done.', metadata: { partType: 'response' } }], turnState: 'complete' } }] } },
  ],
};

function build(path: string, ran: string[]) {
  const rt = createRuntime({ model: createScriptedModel(script), store: createSqliteStore({ path }) });
  for (const name of ['gated', 'wire_money']) {
    rt.registries.tools.register({ name, description: name, inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: async () => { ran.push(name); return 'ok'; } });
  }
  rt.registries.actors.register({ name: 'desk', tools: ['gated', 'wire_money'] });
  return rt;
}

describe('updateTurnTools', () => {
  it('session:updateTurnTools:durable — trust taken away from a waiting turn holds after a restart: the next call of that tool waits for approval; the change is published as turnTools.changed with the caller\'s metadata', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnstate-turn-tools-'));
    try {
      const path = join(dir, 's.db');
      const ran: string[] = [];
      const first = build(path, ran);
      const s = await first.createSession({ actor: 'desk' });
      const ref = await s.send('pay', { standingApprovals: ['wire_money'] });
      for (let i = 0; i < 100 && (await s.snapshot()).pendingApprovals.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect((await s.snapshot()).pendingApprovals.map((a) => a.tool)).toEqual(['gated']);
      expect(await s.updateTurnTools('turn_not_this_one', { standingApprovals: [] })).toBe(false);
      await expect(s.updateTurnTools(ref.turnId, { standingApprovals: 'wire_money' as never })).rejects.toMatchObject({ code: 'message.invalid' });
      await expect(s.updateTurnTools(ref.turnId, { standingApprovals: [] }, { at: new Date() } as never)).rejects.toMatchObject({ code: 'message.invalid' });
      expect(await s.updateTurnTools(ref.turnId, { standingApprovals: [] }, { by: 'ops' })).toBe(true);
      // Published with what it changed and the caller's metadata.
      const changed = (await first.store.readEvents(s.id, 0)).filter((e) => e.type === 'turnTools.changed');
      expect(changed).toMatchObject([{ type: 'turnTools.changed', turnId: ref.turnId, tools: { standingApprovals: [] }, metadata: { by: 'ops' } }]);
      await first.close();

      const second = build(path, ran);
      await second.recover();
      const [approval] = await second.approvals({ sessionId: s.id, status: 'pending' });
      expect((await second.answerApproval(approval!.approvalId, { approved: true }, { userId: 'ana' }, 'test')).ok).toBe(true);
      const again = (await second.session(s.id))!;
      for (let i = 0; i < 200 && (await again.snapshot()).pendingApprovals.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect((await again.snapshot()).pendingApprovals.map((a) => a.tool)).toEqual(['wire_money']);
      expect(ran).toEqual(['gated']);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
