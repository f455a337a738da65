/**
 * `turnstate replay <db> <session> [--script new.json] [--setup module] [--json]`: prints the
 * path and the diff; exit code 0 identical, 1 diverged, 2 bad usage.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplayCommand } from '../../src/cli/replay.js';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { recordBudget, recordThinking, respond, THINKING, TRAVEL_SCRIPT, travelRuntime } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-replay-cli-'));
const db = join(dir, 'app.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const rt = travelRuntime(createSqliteStore({ path: db }));
  const s = await rt.createSession({ id: 'trip', actor: 'front' });
  await (await s.send('hello')).settled;
  await (await s.send('flights to Corfu')).settled;
  await rt.close();
});

/** The travel app's registrations as a setup module. */
const TRAVEL_SETUP_MODULE = `export function setup(r) {
  const handler = () => { throw new Error('never called in replay'); };
  r.tools.register({ name: 'search', description: 'Search', inputSchema: { type: 'object' }, scope: 'generalist', handler });
  r.tools.register({ name: 'fare_rules', description: 'Rules', inputSchema: { type: 'object' }, scope: 'specialist', routing: 'bypass', bypassRouting: { reason: 'inline lookup in the actor' }, justification: 'fare rules are private to flights', handler });
  r.actors.register({ name: 'front', handoffs: ['flights'] });
  r.actors.register({ name: 'flights', tools: ['search', 'fare_rules'] });
}\n`;

async function run(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runReplayCommand(argv, (s) => (stdout += s), (s) => (stderr += s));
  return { code, stdout, stderr };
}

describe('turnstate replay', () => {
  it('replay:cli:identical — replays a recorded session, prints its path, exits 0', async () => {
    const r = await run(['replay', db, 'trip']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('session trip: 2 turn(s)');
    expect(r.stdout).toMatch(/step 0 front: parts \[ack\] states \[awaiting->passed, passed->awaiting\] handoffs \[front->flights\]/);
    expect(r.stdout).toMatch(/step 1 flights: parts \[ack\] states \[awaiting->awaiting\] tools \[search\] results \[search:ok\]/);
    expect(r.stdout).toContain('identical');
  });

  it('replay:cli:script-diverges — with --script the recorded inputs run against the new script; the first divergence is printed, exit 1', async () => {
    const file = join(dir, 'new.json');
    writeFileSync(
      file,
      JSON.stringify({ rules: TRAVEL_SCRIPT.rules.map((r) => (r.id === 'handoff' ? { ...r, respond: { blocks: [respond([{ text: 'We do not do flights.', partType: 'response' }], 'complete')] } } : r)) }),
    );
    const r = await run([db, 'trip', '--script', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/diverged \(\d+ difference\(s\)\); first: turn 1 \(turn_[^)]+\), step 0: parts differ — expected \["ack"\] but got \["response"\]/);
    expect(r.stdout).toContain('replayed session trip');
  });

  it('replay:cli:setup-json — --setup loads the application registrations; --json prints the result as data', async () => {
    const setup = join(dir, 'setup.mjs');
    writeFileSync(setup, TRAVEL_SETUP_MODULE);
    const r = await run([db, 'trip', '--setup', setup, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { identical: boolean; recorded: { turns: unknown[] }; diff: { differences: unknown[] } };
    expect(out.identical).toBe(true);
    expect(out.recorded.turns).toHaveLength(2);
    expect(out.diff.differences).toEqual([]);
  });

  it('replay:cli:live-file — replays from a file a running store is writing (read-only: it writes and migrates nothing)', async () => {
    const file = join(dir, 'live.db');
    copyFileSync(db, file);
    const live = createSqliteStore({ path: file });
    try {
      const before = live.lastSeq('trip');
      const r = await run([file, 'trip']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('identical');
      // The writer goes on committing while and after the replay read the file.
      live.commit('trip', { events: [{ seq: before + 1, sessionId: 'trip', turnId: 'turn_x', at: new Date(0).toISOString(), type: 'turn.started', actor: 'front', input: { text: 'later' } } as never] });
      expect(live.lastSeq('trip')).toBe(before + 1);
    } finally {
      live.close();
    }
  });

  it('replay:cli:usage — bad usage, a missing file and an unknown session exit 2 with a clear message', async () => {
    expect((await run(['replay', db])).stderr).toMatch(/needs <db> and <session>/);
    expect((await run([db, 'trip', '--bogus'])).code).toBe(2);
    expect((await run([db, 'trip', '--bogus'])).stderr).toMatch(/unknown option "--bogus"/);
    const missing = await run([join(dir, 'nope.db'), 'trip']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no database file/);
    const unknown = await run([db, 'nobody']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no session "nobody".*trip/);
    const badScript = join(dir, 'bad.json');
    writeFileSync(badScript, '{"rules": 3}');
    const bad = await run([db, 'trip', '--script', badScript]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/is not a ModelScript/);
    expect((await run(['--help'])).stdout).toContain('Usage: turnstate replay');
  });

  it('replay:cli:usage — "2 bad usage": an option followed by another option has no value (named as `turnstate serve` names it), and --json takes none', async () => {
    const cases: [string[], string][] = [
      [['--setup', '--json'], 'option "--setup" needs a value (got the option "--json")'],
      [['--script', '--json'], 'option "--script" needs a value (got the option "--json")'],
      [['--limits', '--reasoning-traces', 'keep'], 'option "--limits" needs a value (got the option "--reasoning-traces")'],
      [['--reasoning-traces'], 'option "--reasoning-traces" needs a value'],
      [['--json=no'], 'option "--json" takes no value (got "no")'],
      [['--json='], 'option "--json" takes no value (got "")'],
    ];
    for (const [argv, message] of cases) {
      const r = await run([db, 'trip', ...argv]);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stdout, argv.join(' ')).toBe('');
      expect(r.stderr, argv.join(' ')).toMatch(new RegExp(`^turnstate replay: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
    }
    // A value that starts with "--" can still be given after "=".
    const odd = await run([db, 'trip', '--script=--odd.json']);
    expect(odd.code).toBe(2);
    expect(odd.stderr).toMatch(/^turnstate replay: cannot read the script .*--odd\.json/);
    expect((await run([db, 'trip', '--json'])).code).toBe(0);
  });
});

describe('turnstate replay: runtime options and paths', () => {
  it('replay:cli:runtime-options — --reasoning-traces and --limits give the recorded runtime options; bad values exit 2 naming them; withheld thinking is never printed', async () => {
    const redacted = join(dir, 'redact.db');
    (await recordThinking('r1', 'redact', redacted)).close();
    expect((await run([redacted, 'r1', '--reasoning-traces', 'redact'])).code).toBe(0);
    expect((await run([redacted, 'r1'])).code).toBe(0);
    for (const argv of [[redacted, 'r1', '--reasoning-traces=keep'], [redacted, 'r1', '--reasoning-traces', 'keep', '--json']]) {
      const r = await run(argv);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('[thinking the recording withheld]');
      expect(r.stdout).not.toContain(THINKING);
    }
    const dropped = join(dir, 'drop.db');
    (await recordThinking('r1', 'drop', dropped)).close();
    const keep = await run([dropped, 'r1', '--reasoning-traces', 'keep']);
    expect(keep.code).toBe(1);
    expect(keep.stdout).not.toContain(THINKING);
    expect((await run([dropped, 'r1'])).code).toBe(0);

    const budget = join(dir, 'budget.db');
    (await recordBudget('b1', budget)).close();
    const blind = await run([budget, 'b1']);
    expect(blind.code).toBe(1);
    expect(blind.stdout).toMatch(/note: turn 0 \(turn_[^)]+\) settled on "turn\.model_call_budget".*--limits/);
    expect((await run([budget, 'b1', '--limits', '{"maxModelCallsPerTurn": 3}'])).code).toBe(0);

    const bad = async (argv: string[], message: RegExp) => {
      const r = await run([budget, 'b1', ...argv]);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    };
    await bad(['--reasoning-traces', 'hide'], /--reasoning-traces must be "keep", "redact" or "drop", not "hide"/);
    await bad(['--limits', 'maxModelCallsPerTurn=3'], /--limits must be a JSON object of runtime limits, such as '\{"maxModelCallsPerTurn": 3\}' \(Unexpected token/);
    await bad(['--limits', '[3]'], /limits must be an object of runtime limits/);
    await bad(['--limits', '{"maxCalls": 3}'], /limits\.maxCalls is not a runtime limit \(limits: maxModelCallsPerTurn, /);
    await bad(['--limits', '{"maxModelCallsPerTurn": 2.5}'], /--limits: limits\.maxModelCallsPerTurn must be an integer of at least 1, got 2\.5/);
  });

  it('replay:cli:paths — a directory is named as one (with its turnstate.db when it holds one); a relative --setup is read from the working directory, and a missing one is named by its absolute path', async () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    const empty = await run([data, 'trip']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toBe(`turnstate replay: ${data} is a directory, not a SQLite file\n`);
    copyFileSync(db, join(data, 'turnstate.db'));
    const served = await run([data, 'trip']);
    expect(served.code).toBe(2);
    expect(served.stderr).toBe(`turnstate replay: ${data} is a directory, not a SQLite file; \`turnstate serve --data-dir\` writes ${join(data, 'turnstate.db')}: replay ${join(data, 'turnstate.db')}\n`);
    expect((await run([join(data, 'turnstate.db'), 'trip'])).code).toBe(0);

    // --setup relative to the working directory (not to the package).
    const setup = join(dir, 'rel-setup.mjs');
    writeFileSync(setup, TRAVEL_SETUP_MODULE);
    const rel = relative(process.cwd(), setup);
    expect(rel.startsWith('..') || rel.startsWith('/')).toBe(true);
    const ok = await run([db, 'trip', '--setup', rel]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const dotted = await run([db, 'trip', '--setup', './nope.mjs']);
    expect(dotted.code).toBe(2);
    expect(dotted.stderr).toBe(`turnstate replay: no setup module at ${join(process.cwd(), 'nope.mjs')}\n`);
    const noModule = await run([db, 'trip', '--setup', 'no-such-package-xyz']);
    expect(noModule.code).toBe(2);
    expect(noModule.stderr).toMatch(/^turnstate replay: cannot load the setup module "no-such-package-xyz" \(resolved from /);
  });
});

describe('turnstate replay through the command', () => {
  it('replay:cli:command — `turnstate replay <db> <session>` runs from the turnstate command and exits 0 on an identical replay', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'replay', db, 'trip'], { timeout: 60_000 });
    expect(stdout).toContain('session trip: 2 turn(s)');
    expect(stdout).toContain('identical');
  });
});
