/**
 * docs/concepts/replay.md: what a recording holds beyond one input and one answer per turn —
 * parallel calls that finished out of order, answers given in another order than asked, tool
 * settings given at send and changed mid-turn, retried and timed-out calls, messages that joined
 * a running turn, calls of another model with other arguments, a recording cut off mid-turn —
 * replays as recorded, and what differs for real still shows. Each case records with the memory
 * store and with the SQLite store (reopened read-only, as the command reads it) where the store
 * plays a part. Gates (promises the test resolves) order what timing ordered: no sleeps.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { ModelEvent, ModelPort, ModelRequest, SessionHandle } from '../../src/api.js';
import { ModelError } from '../../src/errors.js';
import type { SessionStore } from '../../src/machines/ports.js';
import type { ModelScript } from '../../src/models/script.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { Registries } from '../../src/registries/types.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { MailboxEntry, SessionEvent } from '../../src/types.js';
import { diffSessions, extractPath, replaySession, replayWithScript } from '../../src/replay/index.js';
import { respond } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-fidelity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const KINDS = ['memory', 'sqlite'] as const;
type Kind = (typeof KINDS)[number];

/** Records with `model` and `setup` in a store of `kind`; returns the store to replay from (SQLite: the file reopened read-only). */
async function record(kind: Kind, model: ModelPort, setup: (r: Registries) => void, run: (rt: ReturnType<typeof createRuntime>) => Promise<void>): Promise<SessionStore> {
  const path = join(dir, `${files++}.db`);
  const store = kind === 'memory' ? createMemoryStore() : createSqliteStore({ path });
  const rt = createRuntime({ model, store });
  setup(rt.registries);
  await run(rt);
  if (kind === 'memory') return store;
  await rt.close();
  return createSqliteStore({ path, readonly: true });
}

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

/** Resolves with the first event of `s` that `pred` accepts. */
function seen(s: SessionHandle, pred: (e: SessionEvent) => boolean): Promise<SessionEvent> {
  return new Promise((resolve) => {
    const sub = s.events().subscribe((e) => {
      if (!pred(e)) return;
      queueMicrotask(() => sub.unsubscribe());
      resolve(e);
    });
  });
}

/** What the model read of each tool call, by call id (the re-run keeps the recorded tool_use ids). */
const toolTexts = (m: readonly MailboxEntry[]) => Object.fromEntries(m.flatMap((e) => (e.kind === 'tool_result' && e.tool !== 'respond' ? [[e.callId, [e.content, e.isError]]] : [])));
const userTexts = (m: readonly MailboxEntry[]) => m.flatMap((e) => (e.kind === 'user' ? [e.text] : []));

async function exact(store: SessionStore, id: string, options: Parameters<typeof replaySession>[2] = {}) {
  const r = await replaySession(store, id, options);
  expect(r.diff.differences).toEqual([]);
  expect(r.stoppedEarly).toBeUndefined();
  expect(r.unmatchedCalls).toEqual([]);
  expect(r.replayed).toEqual(r.recorded);
  expect(toolTexts(r.mailbox)).toEqual(toolTexts(await store.readMailbox(id)));
  expect(userTexts(r.mailbox)).toEqual(userTexts(await store.readMailbox(id)));
  return r;
}

describe('replay: a consumer hold that names approval-response', () => {
  for (const kind of KINDS) {
    it(`replay:exact:consumer-hold — a sign-off state (holdsActor, resumeOn approval-response, no call pending) replays with the injection that resumed it: ${kind}`, async () => {
      const setup = (reg: Registries) => {
        reg.turnStates.register({ id: 'needs-signoff', meta: { description: 'Waits for a manager to sign off.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'approval-response' } });
        reg.actors.register({ name: 'clerk', tools: [] });
      };
      const model = createScriptedModel({
        rules: [
          { when: { on: 'user', text: '^\\[approval-response\\] .*"by":"(\\w+)"' }, respond: { blocks: [respond([{ text: 'Signed off by $1.', partType: 'response' }], 'complete')] } },
          { when: { on: 'user' }, respond: { blocks: [respond([{ text: 'Waiting for sign-off.', partType: 'progress' }], 'needs-signoff')] } },
        ],
      });
      const store = await record(kind, model, setup, async (rt) => {
        const s = await rt.createSession({ id: 'signoff', actor: 'clerk' });
        expect((await (await s.send('sign the contract')).settled).finalizedBy).toBe('needs-signoff');
        const ref = await s.inject({ kind: 'resume', resumeOn: 'approval-response', payload: { by: 'mgr7' } });
        expect((await ref!.settled).finalizedBy).toBe('complete');
      });
      const r = await exact(store, 'signoff', { setup });
      expect(r.recorded.turns[0]!.steps[0]!.states).toEqual(['awaiting->needs-signoff', 'needs-signoff->awaiting']);
    });
  }
});

describe('replay: order that timing and people chose', () => {
  const parallelSetup = (g: { opened: Promise<void> }) => (r: Registries) => {
    r.tools.register({ name: 'slow', description: 's', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => (await g.opened, { a: 1 }) });
    r.tools.register({ name: 'fast', description: 'f', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => ({ b: 2 }) });
    r.actors.register({ name: 'a', tools: ['slow', 'fast'] });
  };
  const parallelScript = (fastArgs: Record<string, unknown>): ModelScript => ({
    rules: [
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'slow', input: {} }, { type: 'tool_use', name: 'fast', input: fastArgs }] } },
      { respond: { blocks: [respond([{ text: 'Both done.', partType: 'response' }], 'complete')] } },
    ],
  });

  it.each(KINDS)('replay:exact:parallel-order — "a step\'s results are compared in the order the calls were made": calls that finished out of order replay identically; a different result still diverges (%s)', async (kind) => {
    const g = gate();
    const store = await record(kind, createScriptedModel(parallelScript({})), parallelSetup(g), async (rt) => {
      const s = await rt.createSession({ id: 'p', actor: 'a' });
      // slow finishes after fast: its gate opens on fast's result.
      void seen(s, (e) => e.type === 'tool.result' && e.tool === 'fast').then(g.open);
      await (await s.send('go')).settled;
    });
    expect((await store.readEvents('p', 0)).flatMap((e) => (e.type === 'tool.result' ? [e.tool] : []))).toEqual(['fast', 'slow']);
    const done = { opened: Promise.resolve() };
    const r = await exact(store, 'p', { setup: parallelSetup(done) });
    expect(r.recorded.turns[0]!.steps[0]!.results).toEqual(['slow:ok', 'fast:ok']);
    await exact(store, 'p');
    // A real difference in a result: fast called with other arguments gets no recorded result.
    const other = await replayWithScript(store, 'p', parallelScript({ x: 1 }), { setup: parallelSetup(done) });
    expect(other.diff.first).toMatchObject({ turn: 0, step: 0, field: 'results', expected: ['slow:ok', 'fast:ok'], actual: ['slow:ok', 'fast:error'] });
    if (kind === 'sqlite') (store as ReturnType<typeof createSqliteStore>).close();
  });

  it('replay:exact:parallel-order — through the command: `turnstate replay` exits 0 on the unchanged session', async () => {
    const path = join(dir, 'parallel-cli.db');
    const g = gate();
    const rt = createRuntime({ model: createScriptedModel(parallelScript({})), store: createSqliteStore({ path }) });
    parallelSetup(g)(rt.registries);
    const s = await rt.createSession({ id: 'p', actor: 'a' });
    void seen(s, (e) => e.type === 'tool.result' && e.tool === 'fast').then(g.open);
    await (await s.send('go')).settled;
    await rt.close();
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'replay', path, 'p'], { timeout: 60_000 });
    expect(stdout).toMatch(/tools \[slow, fast\] results \[slow:ok, fast:ok\]/);
    expect(stdout).toContain('identical');
  }, 60_000);

  const bookSetup = (r: Registries) => {
    r.tools.register({ name: 'book', description: 'b', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: (a: { n?: number }) => ({ booked: a.n ?? 0 }) });
    r.actors.register({ name: 'a', tools: ['book'] });
  };
  const geo = { name: 'geo', description: 'location', parameters: { type: 'object' } };
  const cam = { name: 'cam', description: 'camera', parameters: { type: 'object' } };
  const ANSWER_SCRIPT: ModelScript = {
    rules: [
      { when: { on: 'user', text: 'two' }, respond: { blocks: [{ type: 'tool_use', name: 'book', input: { n: 1 } }, { type: 'tool_use', name: 'book', input: { n: 2 } }] } },
      { when: { on: 'user', text: 'both' }, respond: { blocks: [{ type: 'tool_use', name: 'geo', input: {} }, { type: 'tool_use', name: 'cam', input: {} }] } },
      { when: { on: 'user', text: 'mixed' }, respond: { blocks: [{ type: 'tool_use', name: 'geo', input: {} }, { type: 'tool_use', name: 'book', input: { n: 3 } }] } },
      { respond: { blocks: [respond([{ text: 'Done.', partType: 'response' }], 'complete')] } },
    ],
  };

  it.each(KINDS)('replay:exact:answer-order — "approval decisions and client results are answered in the order the recording answered them": answered against the order asked, they replay identically (%s)', async (kind) => {
    const who = { userId: 'bob' };
    const store = await record(kind, createScriptedModel(ANSWER_SCRIPT), bookSetup, async (rt) => {
      let s = await rt.createSession({ id: 'appr', actor: 'a' });
      await (await s.send('book two')).settled;
      let snap = await s.snapshot();
      await s.answerApproval(snap.pendingApprovals[1]!.approvalId, { approved: false, reason: 'no' }, who, 'web');
      await s.answerApproval(snap.pendingApprovals[0]!.approvalId, { approved: true }, who, 'web');
      await s.idle();
      s = await rt.createSession({ id: 'client', actor: 'a' });
      await (await s.send('both please', { clientTools: [geo, cam] })).settled;
      snap = await s.snapshot();
      await s.inject({ kind: 'client-tool-result', callId: snap.pendingClientCalls[1]!.callId, content: '{"photo":1}' });
      await s.inject({ kind: 'client-tool-result', callId: snap.pendingClientCalls[0]!.callId, content: '{"lat":1}' });
      await s.idle();
      s = await rt.createSession({ id: 'mixed', actor: 'a' });
      await (await s.send('mixed please', { clientTools: [geo] })).settled;
      snap = await s.snapshot();
      await s.inject({ kind: 'client-tool-result', callId: snap.pendingClientCalls[0]!.callId, content: '{"lat":1}' });
      await s.answerApproval(snap.pendingApprovals[0]!.approvalId, { approved: true }, who, 'web');
      await s.idle();
    });
    const appr = await exact(store, 'appr', { setup: bookSetup });
    expect(appr.replayed.turns[0]!.steps[0]!.approvals).toEqual(['book:requested', 'book:requested', 'book:denied', 'book:approved']);
    await exact(store, 'appr');
    // The model read the client results in the order they came.
    const client = await exact(store, 'client', { setup: bookSetup });
    expect(client.mailbox.flatMap((m) => (m.kind === 'tool_result' ? [m.tool] : []))).toEqual(['cam', 'geo', 'respond']);
    await exact(store, 'mixed', { setup: bookSetup });
    expect((await replayWithScript(store, 'mixed', ANSWER_SCRIPT, { setup: bookSetup })).diff.differences).toEqual([]);
    // A true divergence stays visible: a tool that no longer asks loses its approvals at its step.
    const changed = await replaySession(store, 'appr', {
      setup: (r) => {
        r.tools.register({ name: 'book', description: 'b', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => ({}) });
        r.actors.register({ name: 'a', tools: ['book'] });
      },
    });
    expect(changed.diff.first).toMatchObject({ turn: 0, step: 0, field: 'parts', expected: ['approval-request', 'approval-request'], actual: [] });
    if (kind === 'sqlite') (store as ReturnType<typeof createSqliteStore>).close();
  });
});

describe('replay: tool settings, retries, joined messages', () => {
  const toolsSetup = (g: { opened: Promise<void> }) => (r: Registries) => {
    r.tools.register({ name: 'search', description: 's', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => (await g.opened, { hits: 2 }) });
    r.tools.register({ name: 'book', description: 'b', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: () => ({ booked: true }) });
    r.actors.register({ name: 'a', tools: ['search', 'book'] });
  };
  const TOOLS_SCRIPT: ModelScript = {
    rules: [
      { when: { on: 'user', text: '^A' }, respond: { blocks: [{ type: 'tool_use', name: 'search', input: { q: 'x' } }] } },
      { when: { on: 'user', text: '^B' }, respond: { blocks: [{ type: 'tool_use', name: 'book', input: { n: 1 } }] } },
      { when: { on: 'tool_result', tool: 'book', call: 1 }, respond: { blocks: [{ type: 'tool_use', name: 'book', input: { n: 2 } }] } },
      { when: { on: 'user', text: '^C' }, respond: { blocks: [{ type: 'tool_use', name: 'search', input: { q: 'first' } }] } },
      { when: { on: 'tool_result', tool: 'search', call: 1 }, respond: { blocks: [{ type: 'tool_use', name: 'search', input: { q: 'second' } }] } },
      { when: { on: 'rejection' }, respond: { blocks: [respond([{ text: 'Not enabled, sorry.', partType: 'response' }], 'complete')] } },
      { respond: { blocks: [respond([{ text: 'ok', partType: 'response' }], 'complete')] } },
    ],
  };

  it.each(KINDS)('replay:exact:turn-tools — "the re-run gets the tool settings the recorded turn had, at the same points": enabledTools and howToEnableTools at send, standing approvals and enabledTools changed mid-turn (%s)', async (kind) => {
    const g = gate();
    const who = { userId: 'u1' };
    const store = await record(kind, createScriptedModel(TOOLS_SCRIPT), toolsSetup(g), async (rt) => {
      g.open();
      let s = await rt.createSession({ id: 'A', actor: 'a' });
      await (await s.send('A: find', { enabledTools: ['book'], howToEnableTools: 'Ask an admin to enable {tool}.' })).settled;
      // B: the standing approval for book is given while the first book call waits for its approval.
      s = await rt.createSession({ id: 'B', actor: 'a' });
      const b = await s.send('B: book two', { principal: who });
      expect((await b.settled).finalizedBy).toBe('suspended');
      expect(await s.updateTurnTools(b.turnId, { standingApprovals: ['book'] })).toBe(true);
      await s.answerApproval((await s.snapshot()).pendingApprovals[0]!.approvalId, { approved: true }, who, 'test');
      await s.idle();
    });
    // C: search is disabled while its first call runs.
    const held = gate();
    const cStore = await record(kind, createScriptedModel(TOOLS_SCRIPT), toolsSetup(held), async (rt) => {
      const s = await rt.createSession({ id: 'C', actor: 'a' });
      const running = seen(s, (e) => e.type === 'tool.called');
      const c = await s.send('C: search twice');
      await running;
      expect(await s.updateTurnTools(c.turnId, { enabledTools: ['book'] })).toBe(true);
      held.open();
      await c.settled;
    });
    const open = { opened: Promise.resolve() };
    for (const setup of [toolsSetup(open), undefined]) {
      const opts = setup ? { setup } : {};
      const a = await exact(store, 'A', opts);
      expect(Object.values(toolTexts(a.mailbox))).toEqual([['Tool "search" is not enabled for this session. Ask an admin to enable search. Tell the user this; do not call search again in this turn.', true]]);
      const b = await exact(store, 'B', opts);
      expect(b.replayed.turns[0]!.steps.map((st) => st.approvals)).toEqual([['book:requested', 'book:approved'], [], []]);
      expect(b.events.find((e) => e.type === 'turnTools.changed')).toMatchObject({ tools: { standingApprovals: ['book'] } });
      const c = await exact(cStore, 'C', opts);
      expect(c.replayed.turns[0]!.steps[1]!.tools).toEqual([]);
    }
    // A point the re-run never reaches is named: this script never calls search, so nothing ran while the change came.
    const never = await replayWithScript(cStore, 'C', { rules: [{ respond: { blocks: [respond([{ text: 'ok', partType: 'response' }], 'complete')] } }] }, { setup: toolsSetup(open) });
    expect(never.notes.join('\n')).toMatch(/turn 0 \(turn_[^)]+\): the tool settings changed at seq \d+ of the recording \(\{"enabledTools":\["book"\]\}\) were not applied/);
    for (const x of [store, cStore]) if (kind === 'sqlite') (x as ReturnType<typeof createSqliteStore>).close();
  });

  let runs = { flaky: 0, hang: 0, fails: 0 };
  const retrySetup = (r: Registries) => {
    r.tools.register({
      name: 'flaky', description: 'f', inputSchema: { type: 'object' }, scope: 'generalist', idempotent: true, retry: { attempts: 3, backoffMs: 1 },
      handler: () => {
        runs.flaky++;
        if (runs.flaky % 3 !== 0) throw new Error(`flaky failure ${runs.flaky}`);
        return { ok: runs.flaky };
      },
    });
    r.tools.register({
      name: 'hang', description: 'h', inputSchema: { type: 'object' }, scope: 'generalist', timeoutMs: 20, idempotent: true, retry: { attempts: 2, backoffMs: 1 },
      handler: () => {
        runs.hang++;
        return new Promise(() => {});
      },
    });
    r.tools.register({
      name: 'fails', description: 'x', inputSchema: { type: 'object' }, scope: 'generalist', idempotent: true, retry: { attempts: 3, backoffMs: 1 },
      handler: () => {
        runs.fails++;
        throw new Error('backend down');
      },
    });
    r.actors.register({ name: 'a', tools: ['flaky', 'hang', 'fails'] });
  };
  const RETRY_SCRIPT: ModelScript = {
    rules: [
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'flaky', input: {} }, { type: 'tool_use', name: 'hang', input: {} }, { type: 'tool_use', name: 'fails', input: { q: 1 } }] } },
      { respond: { blocks: [respond([{ text: 'Recorded outcomes.', partType: 'response' }], 'complete')] } },
    ],
  };

  it.each(KINDS)('replay:exact:retry-timeout — "the model reads exactly the recorded tool result; a served result is final": retried and timed-out calls are served once each, no retry around them (%s)', async (kind) => {
    const store = await record(kind, createScriptedModel(RETRY_SCRIPT), retrySetup, async (rt) => {
      const s = await rt.createSession({ id: 'r', actor: 'a' });
      expect((await (await s.send('go')).settled).finalizedBy).toBe('complete');
    });
    const recorded = Object.values(toolTexts(await store.readMailbox('r')));
    expect(recorded).toContainEqual(['tool "hang" timed out after 20 ms (attempt 2 of 2)', true]);
    expect(recorded).toContainEqual(['tool "fails" failed: backend down (attempt 3 of 3)', true]);
    runs = { flaky: 0, hang: 0, fails: 0 };
    for (const opts of [{ setup: retrySetup }, {}, { setup: retrySetup, match: 'content' as const }]) {
      const r = await exact(store, 'r', opts);
      expect(r.servedResults).toBe(3);
    }
    expect(runs).toEqual({ flaky: 0, hang: 0, fails: 0 });
    if (kind === 'sqlite') (store as ReturnType<typeof createSqliteStore>).close();
  });

  it('replay:script:retried-tool — "tool results are matched to the new calls by tool and arguments": the same script matches a retried call once, and reports no unmatched call', async () => {
    const store = await record('memory', createScriptedModel(RETRY_SCRIPT), retrySetup, async (rt) => {
      const s = await rt.createSession({ id: 'r', actor: 'a' });
      await (await s.send('go')).settled;
    });
    const r = await replayWithScript(store, 'r', RETRY_SCRIPT, { setup: retrySetup });
    expect(r.unmatchedCalls).toEqual([]);
    expect(r.servedResults).toBe(3);
    expect(r.diff.differences).toEqual([]);
    expect(Object.values(toolTexts(r.mailbox)).sort()).toEqual(Object.values(toolTexts(await store.readMailbox('r'))).sort());
  });

  const slowSetup = (g: { opened: Promise<void> }) => (r: Registries) => {
    r.tools.register({ name: 'slow', description: 'slow', inputSchema: { type: 'object' }, scope: 'generalist', handler: async () => (await g.opened, { ok: 1 }) });
    r.actors.register({ name: 'a', tools: ['slow'] });
  };
  const JOIN_SCRIPT: ModelScript = {
    rules: [
      { when: { on: 'user', text: 'also' }, respond: { blocks: [respond([{ text: 'Got your addition too.', partType: 'response' }], 'complete')] } },
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'slow', input: {} }] } },
      { when: { on: 'tool_result' }, respond: { blocks: [respond([{ text: 'Done.', partType: 'response' }], 'complete')] } },
    ],
  };

  it.each(KINDS)('replay:exact:joined — "a message that joined a running turn is sent again as the model call that took it in starts": it is in the path, and the re-run answers it (%s)', async (kind) => {
    const g = gate();
    const store = await record(kind, createScriptedModel(JOIN_SCRIPT), slowSetup(g), async (rt) => {
      const s = await rt.createSession({ id: 'j', actor: 'a', doubleTexting: 'interrupt' });
      const running = seen(s, (e) => e.type === 'tool.called');
      const first = await s.send('start work');
      await running;
      expect((await s.send('also do X')).queued).toBe(false);
      g.open();
      await first.settled;
      await s.idle();
    });
    const open = { opened: Promise.resolve() };
    const r = await exact(store, 'j', { setup: slowSetup(open) });
    expect(r.recorded.turns[0]!.steps[1]!.joined).toEqual(['also do X']);
    expect(r.events.filter((e) => e.type === 'message.joined')).toHaveLength(1);
    await exact(store, 'j');
    expect((await replayWithScript(store, 'j', JOIN_SCRIPT, { setup: slowSetup(open) })).diff.differences).toEqual([]);
    // A run without the message diverges at the step that took it in.
    const events = (await store.readEvents('j', 0)).filter((e) => e.type !== 'message.joined');
    const without = extractPath('j', events, await store.readMailbox('j'));
    expect(diffSessions(r.recorded, without).first).toMatchObject({ turn: 0, step: 1, field: 'joined', expected: ['also do X'], actual: [] });
    // A re-run that never makes the call that took it in does not send it, and says so.
    const short = await replayWithScript(store, 'j', { rules: [{ respond: { blocks: [respond([{ text: 'Done.', partType: 'response' }], 'complete')] } }] }, { setup: slowSetup(open) });
    expect(short.diff.identical).toBe(false);
    expect(short.notes.join('\n')).toMatch(/the message "also do X" joined the running turn before its model call 2 in the recording; the replay did not send it/);
    if (kind === 'sqlite') (store as ReturnType<typeof createSqliteStore>).close();
  });

  it('replay:exact:joined — a message that cut a streaming model call joins the re-run\'s first call the same way', async () => {
    const streaming = gate();
    let call = 0;
    const answer = respond([{ text: 'Both handled.', partType: 'response' }], 'complete');
    // The first call streams its respond() and waits (until the joined message cuts it); the second answers.
    const model: ModelPort = {
      name: 'gated',
      async *stream(_req: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
        const n = call++;
        const block = { ...answer, id: `toolu_${n}` };
        yield { type: 'block.start', index: 0, block: { type: 'tool_use', id: block.id, name: 'respond' } };
        if (n === 0) {
          yield { type: 'input.delta', index: 0, partialJson: '{"parts":[{"text":"On it' };
          streaming.open();
          await new Promise((_r, reject) => signal.addEventListener('abort', () => reject(new ModelError('model.aborted', 'cut'))));
        }
        yield { type: 'input.delta', index: 0, partialJson: JSON.stringify(block.input) };
        yield { type: 'block.stop', index: 0, block };
        yield { type: 'message.stop', stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1 }, content: [block] };
      },
    };
    const store = await record('sqlite', model, (r) => r.actors.register({ name: 'a', tools: [] }), async (rt) => {
      const s = await rt.createSession({ id: 'cut', actor: 'a', doubleTexting: 'interrupt' });
      const first = await s.send('start work');
      await streaming.opened;
      expect((await s.send('also do X')).queued).toBe(false);
      await first.settled;
      await s.idle();
    });
    expect((await store.readEvents('cut', 0)).map((e) => e.type)).toContain('part.retracted');
    const r = await exact(store, 'cut');
    expect(r.recorded.turns[0]!.steps[0]!.joined).toEqual(['also do X']);
    (store as ReturnType<typeof createSqliteStore>).close();
  });
});
