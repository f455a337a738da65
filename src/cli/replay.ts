/**
 * `turnstate replay <db> <session> [--script new.json] [--setup module] [--json]`: replay a
 * session recorded in a SQLite file and print its path and the diff.
 *
 * Without `--script` the recorded model outputs and tool results are played back (nothing is
 * called); with it, the recorded user inputs run against the new ScriptedModel script.
 * `--setup` names a module whose `setup(registries)` export (or default export) registers the
 * application's part types, turn states, tools and actors; without it they are inferred from
 * the recording. Exit code: 0 identical, 1 diverged, 2 bad usage or an unreadable recording.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ModelScript } from '../models/script.js';
import type { Registries } from '../registries/types.js';
import { formatDiff } from '../replay/diff.js';
import { formatPath } from '../replay/path.js';
import { replaySession, replayWithScript, type ReplayOptions, type ReplayResult } from '../replay/replay.js';
import { createSqliteStore } from '../stores/sqlite.js';

export const REPLAY_USAGE = `Usage: turnstate replay <db> <session> [options]

Replays a session recorded in a SQLite file and prints its path (turn states, part types and
tools per model call) and the difference from the recording.

Options:
  --script <file>   Run the recorded user inputs against this ScriptedModel script (JSON)
                    instead of playing back the recorded model outputs
  --setup <module>  Module exporting setup(registries) (or a default export) that registers
                    the application's tools and actors (default: inferred from the recording)
  --json            Print the result as JSON
  -h, --help        Show this help

Exit code: 0 when the paths are identical, 1 when they diverge, 2 on bad usage.`;

interface Parsed {
  db: string;
  session: string;
  script?: string;
  setup?: string;
  json: boolean;
}

class ReplayUsageError extends Error {}

function parse(argv: readonly string[]): Parsed | 'help' {
  const args = argv[0] === 'replay' ? argv.slice(1) : [...argv];
  const positional: string[] = [];
  const opts: { script?: string; setup?: string; json: boolean } = { json: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return 'help';
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (name === 'json') {
      opts.json = true;
      continue;
    }
    if (name !== 'script' && name !== 'setup') throw new ReplayUsageError(`unknown option "--${name}" (options: --script, --setup, --json)`);
    const value = eq !== -1 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === '') throw new ReplayUsageError(`option "--${name}" needs a value`);
    opts[name] = value;
  }
  if (positional.length !== 2) {
    throw new ReplayUsageError(positional.length < 2 ? 'replay needs <db> and <session>' : `unexpected argument "${positional[2]}"`);
  }
  return { db: positional[0]!, session: positional[1]!, ...opts };
}

function readScript(file: string): ModelScript {
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ReplayUsageError(`cannot read the script ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    const script = JSON.parse(raw) as ModelScript;
    if (!script || !Array.isArray(script.rules)) throw new Error('it needs a "rules" array');
    return script;
  } catch (err) {
    throw new ReplayUsageError(`the script ${file} is not a ModelScript: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function loadSetup(spec: string): Promise<NonNullable<ReplayOptions['setup']>> {
  const path = resolve(spec);
  const mod = (await import(existsSync(path) ? pathToFileURL(path).href : spec)) as { setup?: unknown; default?: unknown };
  const fn = mod.setup ?? mod.default;
  if (typeof fn !== 'function') throw new ReplayUsageError(`the setup module ${spec} exports neither setup(registries) nor a default function`);
  return fn as (r: Registries) => void | Promise<void>;
}

/** Runs the command; resolves with the exit code. */
export async function runReplayCommand(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s), err: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  let parsed: Parsed | 'help';
  try {
    parsed = parse(argv);
  } catch (e) {
    err(`turnstate replay: ${(e as Error).message}\n\n${REPLAY_USAGE}\n`);
    return 2;
  }
  if (parsed === 'help') {
    out(`${REPLAY_USAGE}\n`);
    return 0;
  }
  if (!existsSync(parsed.db)) {
    err(`turnstate replay: no database file at ${parsed.db}\n`);
    return 2;
  }
  let result: ReplayResult;
  let store: ReturnType<typeof createSqliteStore>;
  try {
    // Read-only: safe beside a server that is writing the file, and never migrates it under that server.
    store = createSqliteStore({ path: parsed.db, readonly: true });
  } catch (e) {
    err(`turnstate replay: ${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  }
  try {
    const options: ReplayOptions = parsed.setup ? { setup: await loadSetup(parsed.setup) } : {};
    result = parsed.script
      ? await replayWithScript(store, parsed.session, readScript(parsed.script), options)
      : await replaySession(store, parsed.session, options);
  } catch (e) {
    err(`turnstate replay: ${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  } finally {
    store.close();
  }
  if (parsed.json) {
    out(`${JSON.stringify({ sessionId: result.sessionId, identical: result.diff.identical, recorded: result.recorded, replayed: result.replayed, diff: result.diff, stoppedEarly: result.stoppedEarly ?? null, unmatchedCalls: result.unmatchedCalls }, null, 2)}\n`);
  } else {
    out(`recorded ${formatPath(result.recorded)}\n`);
    if (!result.diff.identical) out(`\nreplayed ${formatPath(result.replayed)}\n`);
    out(`\n${formatDiff(result.diff)}\n`);
    if (result.stoppedEarly) out(`stopped early: ${result.stoppedEarly}\n`);
    if (result.unmatchedCalls.length) out(`tool calls with no recorded result: ${result.unmatchedCalls.map((c) => `${c.tool} (${c.turnId})`).join(', ')}\n`);
  }
  return result.diff.identical ? 0 : 1;
}
