/**
 * docs/concepts/replay.md at its edges: another model's calls with other arguments, runtime limits
 * the runtime would refuse, a broken --setup module or --script rule, a recording cut off mid-turn.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplayCommand } from '../../src/cli/replay.js';
import type { ModelScript } from '../../src/models/script.js';
import { createScriptedModel } from '../../src/models/scripted.js';
import type { Registries } from '../../src/registries/types.js';
import { createRuntime } from '../../src/runtime.js';
import { createMemoryStore } from '../../src/stores/memory.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { formatPath, replaySession, replayWithScript, ReplayError } from '../../src/replay/index.js';
import { Child } from '../durability/fixtures/child.js';
import { respond } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-edges-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runReplayCommand(argv, (s) => (stdout += s), (s) => (stderr += s));
  return { code, stdout, stderr };
}

describe('replay: another model with other arguments', () => {
  const setup = (r: Registries) => {
    r.tools.register({ name: 'search', description: 's', inputSchema: { type: 'object' }, scope: 'generalist', handler: (a: { to: string }) => ({ flights: [`${a.to}-1`] }) });
    r.tools.register({ name: 'book', description: 'b', inputSchema: { type: 'object' }, scope: 'generalist', requiresApproval: true, handler: (a: { flight: string }) => ({ booked: a.flight }) });
    r.actors.register({ name: 'a', tools: ['search', 'book'] });
  };
  const script = (search: Record<string, unknown>, flight: string): ModelScript => ({
    rules: [
      { when: { on: 'user', text: 'flights' }, respond: { blocks: [{ type: 'tool_use', name: 'search', input: search }] } },
      { when: { on: 'user', text: 'book' }, respond: { blocks: [{ type: 'tool_use', name: 'book', input: { flight } }] } },
      { respond: { blocks: [respond([{ text: 'Done.', partType: 'response' }], 'complete')] } },
    ],
  });

  it.each(['memory', 'sqlite'] as const)('replay:script:arguments — "matched to the new calls by tool and arguments": a call with other arguments gets no recorded result or decision, and is named (%s)', async (kind) => {
    const path = join(dir, `args-${kind}.db`);
    const store = kind === 'memory' ? createMemoryStore() : createSqliteStore({ path });
    const rt = createRuntime({ model: createScriptedModel(script({ to: 'Corfu', day: 3 }, 'BA2043')), store });
    setup(rt.registries);
    const s = await rt.createSession({ id: 'q', actor: 'a' });
    await (await s.send('flights')).settled;
    await (await s.send('book it')).settled;
    await s.answerApproval((await s.snapshot()).pendingApprovals[0]!.approvalId, { approved: true }, { userId: 'u' }, 'web');
    await s.idle();
    const read = kind === 'memory' ? store : (await rt.close(), createSqliteStore({ path, readonly: true }));

    // The same arguments in another key order are the same arguments.
    const same = await replayWithScript(read, 'q', script({ day: 3, to: 'Corfu' }, 'BA2043'), { setup });
    expect(same.diff.differences).toEqual([]);
    expect(same.unmatchedCalls).toEqual([]);
    expect(same.servedResults).toBe(2);

    const other = await replayWithScript(read, 'q', script({ to: 'Tokyo', day: 3 }, 'LH9999'), { setup });
    expect(other.unmatchedCalls).toEqual([{ turnId: other.recorded.turns[0]!.turnId, tool: 'search', callId: expect.any(String) }]);
    expect(other.diff.first).toMatchObject({ turn: 0, step: 0, field: 'results', expected: ['search:ok'], actual: ['search:error'] });
    const shown = other.mailbox.find((m) => m.kind === 'tool_result' && m.tool === 'search');
    expect(shown).toMatchObject({ isError: true, content: `replay: the recording holds no result for this call of search with these arguments in turn ${other.recorded.turns[0]!.turnId}` });
    // No recorded decision for booking another flight: the turn waits, and the stop names the call.
    expect(other.stoppedEarly).toMatch(/^turn 1 \(turn_[^)]+\) stopped in "suspended" and the recording holds no answer for the approval of book \{"flight":"LH9999"\}/);
    expect(other.events.some((e) => e.type === 'approval.resolved')).toBe(false);
    if (kind === 'sqlite') (read as ReturnType<typeof createSqliteStore>).close();
    else await rt.close();
  });
});

describe('replay: runtime limits the runtime refuses', () => {
  it('replay:options:invalid — "a limit the runtime would refuse (below its minimum) is a ReplayError (replay.options) naming it", also through --limits', async () => {
    const path = join(dir, 'limits.db');
    const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: { blocks: [respond([{ text: 'hi', partType: 'response' }], 'complete')] } }] }), store: createSqliteStore({ path }) });
    rt.registries.actors.register({ name: 'a', tools: [] });
    await (await (await rt.createSession({ id: 'z', actor: 'a' })).send('hi')).settled;
    await rt.close();
    const store = createSqliteStore({ path, readonly: true });
    for (const [limits, message] of [
      [{ maxModelCallsPerTurn: 0 }, /^limits\.maxModelCallsPerTurn must be an integer of at least 1, got 0$/],
      [{ executionResultMaxChars: 0 }, /^limits\.executionResultMaxChars must be an integer of at least 1, got 0$/],
      [{ toolResultMaxChars: 0 }, /^limits\.toolResultMaxChars must be an integer of at least 1, got 0$/],
    ] as const) {
      const e = await replaySession(store, 'z', { limits }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ReplayError);
      expect(e).toMatchObject({ code: 'replay.options', message: expect.stringMatching(message) });
    }
    // 0 is a limit where the runtime takes it.
    expect((await replaySession(store, 'z', { limits: { maxRespondRetries: 0 } })).diff.identical).toBe(true);
    store.close();
    const cli = await run([path, 'z', '--limits', '{"maxModelCallsPerTurn": 0}']);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toBe('turnstate replay: --limits: limits.maxModelCallsPerTurn must be an integer of at least 1, got 0\n');
  });
});

describe('replay: files that do not work', () => {
  const db = join(dir, 'app.db');
  beforeAll(async () => {
    const rt = createRuntime({ model: createScriptedModel({ rules: [{ respond: { blocks: [respond([{ text: 'hi', partType: 'response' }], 'complete')] } }] }), store: createSqliteStore({ path: db }) });
    rt.registries.actors.register({ name: 'a', tools: [] });
    await (await (await rt.createSession({ id: 's', actor: 'a' })).send('hi')).settled;
    await rt.close();
  });

  it('replay:cli:setup-errors — "a --setup module or --script file that does not work is named": a syntax error, a throwing setup, a refused registration, a rule that cannot work', async () => {
    const module = (name: string, text: string) => {
      const file = join(dir, name);
      writeFileSync(file, text);
      return file;
    };
    const cases: [string, RegExp][] = [
      [module('syntax.mjs', 'export function setup( {\n'), /^turnstate replay: --setup (\S+syntax\.mjs): the module does not load \(/],
      [module('throws.mjs', 'export function setup() { throw new Error("boom in setup"); }\n'), /^turnstate replay: --setup (\S+throws\.mjs): setup\(registries\) failed: boom in setup\n$/],
      [
        module('badreg.mjs', 'export function setup(r) { r.tools.register({ name: "bad name!", description: "x", inputSchema: { type: "object" }, scope: "generalist", handler() {} }); }\n'),
        /^turnstate replay: --setup (\S+badreg\.mjs): setup\(registries\) failed: tool name "bad name!" is invalid/,
      ],
      [module('nofn.mjs', 'export const x = 1;\n'), /^turnstate replay: --setup (\S+nofn\.mjs): the module exports neither setup\(registries\) nor a default function\n$/],
    ];
    for (const [file, message] of cases) {
      const r = await run([db, 's', '--setup', file]);
      expect(r.code, file).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(message.exec(r.stderr)![1]).toBe(file);
    }
    const rule = module('rule.json', JSON.stringify({ rules: [{ when: { text: '(' }, respond: { blocks: [] } }] }));
    const bad = await run([db, 's', '--script', rule]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`turnstate replay: --script ${rule}: ModelScript: rules[0]: when.text is not a regular expression (Invalid regular expression: /(/i: Unterminated group)\n`);
    // Through the command itself.
    const failed = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'replay', db, 's', '--setup', cases[1]![0]], { timeout: 60_000 }).catch((e: { code: number; stderr: string }) => e);
    expect(failed).toMatchObject({ code: 2, stderr: `turnstate replay: --setup ${cases[1]![0]}: setup(registries) failed: boom in setup\n` });
  }, 60_000);
});

describe('replay: a recording cut off mid-turn', () => {
  it('replay:exact:ended-mid-turn — "a recording that ends mid-turn, never recovered, is named as such": a note, and the diff says the recording ends there rather than blaming the model', async () => {
    const db = join(dir, 'killed.db');
    const child = new Child({ db, sideLog: join(dir, 'killed.log'), phase: 'start', sessionId: 'k', message: 'charge the card', killInCharge: true });
    await child.exited;
    const store = createSqliteStore({ path: db, readonly: true });
    for (const r of [await replaySession(store, 'k'), await replaySession(store, 'k', { match: 'content' })]) {
      expect(r.recorded.turns[0]!.endsMidTurn).toBe(true);
      expect(r.diff.identical).toBe(false);
      expect(r.diff.first).toMatchObject({ turn: 0, step: null, field: 'ended', expected: null, actual: 'error' });
      expect(r.diff.first!.message).toMatch(/^turn 0 \(turn_[^)]+\): the recording ends mid-turn \(not settled and waiting for nothing: its process stopped and the session was never recovered, or the turn was still running\); the re-run went on from there and settled in "error"$/);
      expect(r.diff.differences).toHaveLength(1);
      expect(r.notes.join('\n')).toMatch(/turn 0 \(turn_[^)]+\): the recording ends mid-turn, in "awaiting"/);
      expect(formatPath(r.recorded)).toMatch(/-> not settled \(the recording ends mid-turn\)/);
    }
    store.close();
    const cli = await run([db, 'k']);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toMatch(/first: turn 0 \(turn_[^)]+\): the recording ends mid-turn/);
    expect(cli.stdout).toMatch(/note: turn 0 \(turn_[^)]+\): the recording ends mid-turn/);
  }, 60_000);
});
