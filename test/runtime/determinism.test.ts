/**
 * `createRuntime({ now, newId })` makes a run reproducible: the same scenario on two fresh
 * runtimes with the same counter clock and id source stores the same records, on every store.
 * What is measured rather than injected (an execution record's `durationMs`) is the one field left out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ArtifactRecord, SessionStore } from '../../src/api.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { ModelScript } from '../../src/models/script.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { ExecutionRecord, MailboxEntry, SessionEvent } from '../../src/types.js';
import { addTool, answer, part, respond, toolUse } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-determinism-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const STORES: [string, () => SessionStore][] = [
  ['memory', () => createMemoryStore()],
  ['sqlite', () => createSqliteStore({ path: join(dir, `run-${++files}.db`) })],
];

/** The counter clock starts here: every injected timestamp is in November 2023, no real one is. */
const T0 = 1_700_000_000_000;
const injected = (iso: string): boolean => Date.parse(iso) > T0 && Date.parse(iso) < T0 + 86_400_000;

const script: ModelScript = {
  rules: [
    // No `id` in any block: the model's ids come from its `newId`.
    { when: { on: 'user', text: 'export' }, respond: answer(toolUse('export', { q: 'fares' })) },
    { when: { on: 'user', text: 'flaky' }, respond: answer(toolUse('flaky', { q: 'x' })) },
    { when: { on: 'user', text: 'plain' }, respond: answer(toolUse('plain', { q: 'y' })) },
    {
      when: { on: 'tool_result', tool: 'export', text: '"artifactId":"(art_[A-Za-z0-9_-]+)"' },
      respond: answer(
        respond(
          [part('response', 'Here are the fares.'), { data: { artifactId: '$1', mimeType: 'text/csv', sizeBytes: 9 }, metadata: { partType: 'artifact' } }],
          'complete',
        ),
      ),
    },
    { when: { on: 'tool_result' }, respond: answer(respond([part('response', 'done')], 'complete')) },
  ],
};

interface Run {
  executions: ExecutionRecord[];
  artifacts: ArtifactRecord[];
  mailbox: MailboxEntry[];
  events: SessionEvent[];
}

/** One run of the scenario on a fresh runtime with a counter `now` and `newId` (the model's ids from the same source). */
async function run(store: SessionStore): Promise<Run> {
  let t = T0;
  const now = () => (t += 1000);
  let n = 0;
  const newId = (prefix: string) => `${prefix}_${String(++n).padStart(6, '0')}`;
  const rt = createRuntime({ model: createScriptedModel(script, { newId }), store, now, newId });
  addTool(rt.registries, 'export', (_a, ctx) => ctx.artifacts!.put({ data: 'a,b\n1,2\nx', mimeType: 'text/csv' }));
  let attempts = 0;
  addTool(
    rt.registries,
    'flaky',
    () => {
      if (++attempts % 2 === 1) throw new Error('boom');
      return { ok: true };
    },
    { idempotent: true, retry: { attempts: 2, backoffMs: 1 } },
  );
  addTool(rt.registries, 'plain');
  rt.registries.actors.register({ name: 'a', tools: ['export', 'flaky', 'plain'] });
  const s = await rt.createSession({ actor: 'a' });
  for (const text of ['export', 'flaky', 'plain']) expect((await (await s.send(text)).settled).finalizedBy).toBe('complete');
  const executions = await s.executions();
  const artifacts = executions.filter((x) => x.tool === 'export').map((x) => rt.artifacts.head((JSON.parse(x.result) as { artifactId: string }).artifactId)!);
  const out = { executions, artifacts, mailbox: await s.mailbox(), events: await rt.history(s.id) };
  await rt.close();
  return out;
}

/** `durationMs` is measured (performance.now), not injected: the one field two runs may differ in. */
const unmeasured = (xs: ExecutionRecord[]) => xs.map(({ durationMs, ...rest }) => (expect(durationMs).toBeGreaterThanOrEqual(0), rest));

for (const [kind, makeStore] of STORES) {
  describe(`determinism: two fresh runtimes, one counter clock and id source: ${kind}`, () => {
    let runs: Promise<[Run, Run]> | undefined;
    const twice = () => (runs ??= (async () => [await run(makeStore()), await run(makeStore())] as [Run, Run])());

    it('router:execution-log:injected-clock — "a runtime passes its own (`RuntimeOptions.now`), so two runs of a scenario with the same `now` (and `newId`) store the same records. `durationMs` is the one field that is measured, not injected": the stored execution records are identical but for durationMs, each `at` from the counter clock', async () => {
      const [a, b] = await twice();
      expect(a.executions.map((x) => `${x.tool}#${x.attempt}:${x.outcome}`)).toEqual(['export#1:ok', 'flaky#1:error', 'flaky#2:ok', 'plain#1:ok']);
      expect(unmeasured(a.executions)).toEqual(unmeasured(b.executions));
      for (const x of a.executions) expect(injected(x.at), x.at).toBe(true);
      expect(a.events).toEqual(b.events);
    });

    it('artifacts:runtime:injected — "`createRuntime({ now, newId })` makes its default (memory) store with its own `now` and `newId`": both runs store the same artifact record (id of the artifact form, `createdAt` from the counter clock)', async () => {
      const [a, b] = await twice();
      expect(a.artifacts).toHaveLength(1);
      expect(a.artifacts).toEqual(b.artifacts);
      expect(a.artifacts[0]!.artifactId).toMatch(/^art_[A-Za-z0-9_-]{22}$/);
      expect(injected(a.artifacts[0]!.createdAt)).toBe(true);
      // The artifact part the model sent names it, in both runs alike.
      const named = a.events.flatMap((e) => (e.type === 'part.received' && e.part.metadata.partType === 'artifact' ? [e.part.data!.artifactId] : []));
      expect(named).toEqual([a.artifacts[0]!.artifactId]);
    });

    it('scripted:ids:injected — "two runs with the same source get the same ids": the tool_use ids of both runs (mailbox, execution records) are identical, drawn from the injected `newId`', async () => {
      const [a, b] = await twice();
      const toolUseIds = (r: Run) => r.mailbox.flatMap((m) => (m.kind === 'assistant' ? m.content.flatMap((c) => (c.type === 'tool_use' ? [c.id] : [])) : []));
      expect(toolUseIds(a)).toHaveLength(6);
      expect(toolUseIds(a)).toEqual(toolUseIds(b));
      for (const id of toolUseIds(a)) expect(id).toMatch(/^toolu_\d{6}$/);
      expect(a.executions.map((x) => x.callId)).toEqual(b.executions.map((x) => x.callId));
      expect(a.mailbox).toEqual(b.mailbox);
    });
  });
}
