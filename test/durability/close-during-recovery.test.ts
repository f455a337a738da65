/**
 * docs/concepts/session-events.md api:closed, "also when the call was under way as the runtime
 * closed", for a session woken from the store whose recovery is cut by close(): the stopped
 * session refuses its recovery's writes, and the caller hears the runtime closed, never that the
 * stored session is damaged (session.unrestorable).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime } from '../../src/runtime.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-close-recovery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const R = (text: string, turnState: string) => ({ type: 'tool_use' as const, name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState } });
const SCRIPT: ModelScript = {
  rules: [
    { when: { on: 'user', text: '^book' }, respond: { blocks: [{ type: 'tool_use', name: 'book', input: { what: 'x' } }] } },
    { when: { on: 'tool_result', tool: 'book' }, respond: { blocks: [R('Booked.', 'complete')] } },
    { when: { on: 'user' }, respond: { blocks: [R('Hello.', 'complete')] } },
  ],
};
function make(path: string, onList?: () => void) {
  const store = createSqliteStore({ path });
  if (onList) {
    const list = store.listApprovals.bind(store);
    (store as any).listApprovals = (q: any) => {
      const r = list(q);
      onList();
      return r;
    };
  }
  const rt = createRuntime({ model: createScriptedModel(SCRIPT), store });
  rt.registries.tools.register({ name: 'book', description: 'Book.', inputSchema: { type: 'object', properties: { what: { type: 'string' } } }, scope: 'generalist', requiresApproval: true, handler: () => ({ ok: true }) });
  rt.registries.actors.register({ name: 'a', tools: ['book'] });
  return { rt, store };
}

describe('close during recovery', () => {
  it('api:closed:during-recovery — "also when the call was under way as the runtime closed": a session(id) whose recovery (an approval answered while the runtime was down) meets close() is runtime.closed, not session.unrestorable', async () => {
    const path = join(dir, 'r.db');
    const a = make(path);
    const s = await a.rt.createSession({ actor: 'a', id: 'sess_r' });
    const out = await (await s.send('book it')).settled;
    expect(out.held).toBeDefined();
    const [pending] = (await s.snapshot()).pendingApprovals;
    await a.rt.close();
    // The answer was recorded by the store but its approval.resolved never written (as after a crash).
    const st = createSqliteStore({ path });
    await st.resolveApproval(pending!.approvalId, { decision: 'approved', by: { userId: 'u' }, via: 'test', at: new Date().toISOString() } as any);
    await st.close();
    let closing: Promise<void> | undefined;
    const b = make(path, () => {
      if (!closing) closing = b.rt.close();
    });
    const err = await b.rt.session('sess_r').then((h) => (h === undefined ? 'undefined' : 'handle'), (e: unknown) => e);
    await closing;
    expect((err as any)?.code ?? err).toBe('runtime.closed');
  });
});
