/**
 * docs/concepts/replay.md, tool results: "the model reads exactly the recorded text" — also a
 * result the runtime cut for the model (toolResultMaxChars), which the host would otherwise cut a
 * second time — and "a call whose outcome was reported unknown after a restart or a failed write replays as a failed
 * call with the recorded text", also when its calls are matched by tool and arguments (another model).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RuntimeLimits } from '../../src/api.js';
import type { SessionStore } from '../../src/machines/ports.js';
import type { ModelScript } from '../../src/models/script.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { Registries } from '../../src/registries/types.js';
import { annotate } from '../../src/router/annotated.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import type { MailboxEntry } from '../../src/types.js';
import { replaySession, replayWithScript } from '../../src/replay/index.js';
import { Child } from '../durability/fixtures/child.js';
import { DESK_SCRIPT } from '../durability/fixtures/scenario.js';
import { respond } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-served-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const KINDS = ['memory', 'sqlite'] as const;

/** What the model read of each tool call, by call id. */
const toolTexts = (m: readonly MailboxEntry[]) => Object.fromEntries(m.flatMap((e) => (e.kind === 'tool_result' && e.tool !== 'respond' ? [[e.callId, [e.content, e.isError]]] : [])));

/** A text of `n` characters that says where it is (so a cut in another place shows). */
const long = (n: number, seed: string) => Array.from({ length: Math.ceil(n / 10) }, (_, i) => `${seed}${String(i).padStart(8, '0')};`.slice(0, 10)).join('').slice(0, n);

describe('replay: a tool result cut for the model', () => {
  let handlerRuns = 0;
  const setup = (r: Registries) => {
    r.tools.register({ name: 'export', description: 'e', inputSchema: { type: 'object' }, scope: 'generalist', handler: () => (handlerRuns++, long(150_000, 'e')) });
    r.tools.register({
      name: 'dump', description: 'd', inputSchema: { type: 'object' }, scope: 'generalist',
      handler: () => {
        handlerRuns++;
        throw new Error(long(120_000, 'd'));
      },
    });
    // Its model view holds a field the ui-stream view (the tool.result event) does not: the event cannot
    // say what was cut. A surrogate pair where each limit falls (its JSON starts `{"body":"`, 9
    // characters) makes the host cut one short of it.
    const body = [...long(130_000, 'r')];
    for (const max of [100_000, 40_000]) body.splice(max - 10, 2, '\u{1F600}');
    r.tools.register({
      name: 'report', description: 'r', inputSchema: { type: 'object' }, scope: 'generalist',
      handler: () => (handlerRuns++, annotate({ body: body.join(''), internal: 'model only' }, { fields: { '/internal': ['llm-session'] } })),
    });
    r.actors.register({ name: 'a', tools: ['export', 'dump', 'report'] });
  };
  const script: ModelScript = {
    rules: [
      { when: { on: 'user' }, respond: { blocks: [{ type: 'tool_use', name: 'export', input: {} }, { type: 'tool_use', name: 'dump', input: {} }, { type: 'tool_use', name: 'report', input: {} }] } },
      // Answers only when the last result's note gives the recorded whole length.
      { when: { on: 'tool_result', tool: 'report', text: 'the result is 130\\d{3} characters' }, respond: { blocks: [respond([{ text: 'Read all three.', partType: 'response' }], 'complete')] } },
      { respond: { blocks: [respond([{ text: 'Something else.', partType: 'response' }], 'complete')] } },
    ],
  };

  for (const limits of [undefined, { toolResultMaxChars: 40_000 }] as (Partial<RuntimeLimits> | undefined)[]) {
    it.each(KINDS)(
      `replay:exact:cut-result — "the model reads exactly the recorded text": a result, a failure and an annotated result longer than toolResultMaxChars${limits ? ' (given as the recorded limits)' : ''} are read with the recorded cut and note, played back and against the same script (%s)`,
      async (kind) => {
        const path = join(dir, `${files++}.db`);
        const store: SessionStore = kind === 'memory' ? createMemoryStore() : createSqliteStore({ path });
        const rt = createRuntime({ model: createScriptedModel(script), store, ...(limits ? { limits } : {}) });
        setup(rt.registries);
        const s = await rt.createSession({ id: 'big', actor: 'a' });
        expect((await (await s.send('export it')).settled).finalizedBy).toBe('complete');
        const read = kind === 'memory' ? store : (await rt.close(), createSqliteStore({ path, readonly: true }));
        const recorded = toolTexts(await read.readMailbox('big'));
        const max = limits?.toolResultMaxChars ?? 100_000;
        const [exported, dumped, reported] = Object.values(recorded).map(([text]) => text as string);
        expect(exported!.slice(max)).toBe(`\n[truncated: the result is 150000 characters; the first ${max} are shown]`);
        expect(dumped!.slice(max)).toMatch(new RegExp(`^\\n\\[truncated: the result is 1200\\d\\d characters; the first ${max} are shown\\]$`));
        expect(reported!.slice(max - 1)).toMatch(new RegExp(`^\\n\\[truncated: the result is 130\\d\\d\\d characters; the first ${max - 1} are shown\\]$`));
        handlerRuns = 0;
        for (const options of [{ setup }, {}, { setup, match: 'content' as const }]) {
          const r = await replaySession(read, 'big', { ...options, ...(limits ? { limits } : {}) });
          expect(r.diff.differences).toEqual([]);
          expect(r.unmatchedCalls).toEqual([]);
          expect(toolTexts(r.mailbox)).toEqual(recorded);
        }
        const again = await replayWithScript(read, 'big', script, { setup, ...(limits ? { limits } : {}) });
        expect(again.diff.differences).toEqual([]);
        expect(Object.values(toolTexts(again.mailbox))).toEqual(Object.values(recorded));
        expect(handlerRuns).toBe(0);
        if (kind === 'sqlite') (read as ReturnType<typeof createSqliteStore>).close();
        else await rt.close();
      },
    );
  }
});

describe('replay: an unknown outcome against another model', () => {
  it('replay:script:unknown-outcome — "a call whose outcome was reported unknown after a restart or a failed write replays as a failed call with the recorded text", also matched by tool and arguments (replayWithScript, match: content)', async () => {
    const db = join(dir, 'unknown.db');
    const sideLog = join(dir, 'unknown.log');
    const first = new Child({ db, sideLog, phase: 'start', sessionId: 'rec', message: 'charge the card', killInCharge: true });
    await first.exited;
    const second = new Child({ db, sideLog, phase: 'resume', sessionId: 'rec' });
    await second.until((l) => l.kind === 'idle');
    await second.exited;
    const store = createSqliteStore({ path: db, readonly: true });
    const recorded = toolTexts(store.readMailbox('rec'));
    expect(Object.values(recorded)).toEqual([[expect.stringMatching(/^The outcome of charge is unknown/), true]]);
    for (const r of [await replaySession(store, 'rec', { match: 'content' }), await replayWithScript(store, 'rec', DESK_SCRIPT)]) {
      expect(r.unmatchedCalls).toEqual([]);
      expect(r.servedResults).toBe(1);
      expect(r.diff.differences).toEqual([]);
      expect(Object.values(toolTexts(r.mailbox))).toEqual(Object.values(recorded));
    }
    store.close();
  }, 60_000);
});
