/**
 * `turnstate replay <db> <session> [--script new.json] [--setup module] [--reasoning-traces mode]
 * [--limits json] [--json]`: replay a session recorded in a SQLite file and print its path and the diff.
 *
 * Without `--script` the recorded model outputs and tool results are played back (nothing is
 * called); with it, the recorded user inputs run against the new ScriptedModel script.
 * `--setup` names a module whose `setup(registries)` export (or default export) registers the
 * application's part types, turn states, tools and actors; without it they are inferred from
 * the recording. `--reasoning-traces` and `--limits` give the runtime options the session was
 * recorded with (the recording does not hold them). Exit code: 0 identical, 1 diverged, 2 bad
 * usage or an unreadable recording.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ModelPort } from '../api.js';
import { flagWithoutValue, optionName, optionValue } from './args.js';
import type { ModelScript } from '../models/script.js';
import { createScriptedModel } from '../models/scripted.js';
import type { Registries } from '../registries/types.js';
import { formatDiff } from '../replay/diff.js';
import { formatPath } from '../replay/path.js';
import { checkLimits, checkReasoningTraces } from '../replay/options.js';
import { replaySession, type ReplayOptions, type ReplayResult } from '../replay/replay.js';
import { createSqliteStore } from '../stores/sqlite.js';

export const REPLAY_USAGE = `Usage: turnstate replay <db> <session> [options]

Replays a session recorded in a SQLite file and prints its path (turn states, part types and
tools per model call) and the difference from the recording.

Options:
  --script <file>   Run the recorded user inputs against this ScriptedModel script (JSON)
                    instead of playing back the recorded model outputs
  --setup <module>  Module exporting setup(registries) (or a default export) that registers
                    the application's tools and actors (default: inferred from the recording);
                    a path is read from the working directory
  --reasoning-traces <keep|redact|drop>
                    The runtime's reasoningTraces when the session was recorded (default:
                    inferred from the recording where it can say, else keep)
  --limits <json>   The runtime's limits when the session was recorded, as JSON, such as
                    '{"maxModelCallsPerTurn": 8}' (default: the runtime's defaults)
  --json            Print the result as JSON
  -h, --help        Show this help

Exit code: 0 when the paths are identical, 1 when they diverge, 2 on bad usage.`;

interface Parsed {
  db: string;
  session: string;
  script?: string;
  setup?: string;
  reasoningTraces?: string;
  limits?: string;
  json: boolean;
}

const VALUED = { script: 'script', setup: 'setup', 'reasoning-traces': 'reasoningTraces', limits: 'limits' } as const;

class ReplayUsageError extends Error {}

function parse(argv: readonly string[]): Parsed | 'help' {
  const args = argv[0] === 'replay' ? argv.slice(1) : [...argv];
  const positional: string[] = [];
  const opts: { script?: string; setup?: string; reasoningTraces?: string; limits?: string; json: boolean } = { json: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return 'help';
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const name = optionName(arg);
    if (name === 'json') {
      flagWithoutValue(arg, name);
      opts.json = true;
      continue;
    }
    if (!Object.hasOwn(VALUED, name)) throw new ReplayUsageError(`unknown option "--${name}" (options: --script, --setup, --reasoning-traces, --limits, --json)`);
    // As `turnstate serve` reads its options: the next word is never another option.
    const { value, last } = optionValue(args, i, name);
    i = last;
    opts[VALUED[name as keyof typeof VALUED]] = value;
  }
  if (positional.length !== 2) {
    throw new ReplayUsageError(positional.length < 2 ? 'replay needs <db> and <session>' : `unexpected argument "${positional[2]}"`);
  }
  return { db: positional[0]!, session: positional[1]!, ...opts };
}

/** The model that plays `--script`: every fault of the file (unreadable, not JSON, a rule that cannot work) names it. */
function scriptModel(file: string): ModelPort {
  const path = resolve(process.cwd(), file);
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ReplayUsageError(`cannot read the script ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let script: ModelScript;
  try {
    script = JSON.parse(raw) as ModelScript;
    if (!script || !Array.isArray(script.rules)) throw new Error('it needs a "rules" array');
  } catch (err) {
    throw new ReplayUsageError(`the script ${path} is not a ModelScript: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return createScriptedModel(script, { name: 'replay-script' });
  } catch (err) {
    // A rule that cannot work (a bad regex, no blocks), as `turnstate serve --script` names it.
    throw new ReplayUsageError(`--script ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The runtime options given on the command line, checked (a bad one is a usage error naming it). */
function runtimeOptions(parsed: Parsed): Pick<ReplayOptions, 'reasoningTraces' | 'limits'> {
  const out: Pick<ReplayOptions, 'reasoningTraces' | 'limits'> = {};
  try {
    if (parsed.reasoningTraces !== undefined) out.reasoningTraces = checkReasoningTraces(parsed.reasoningTraces);
  } catch (e) {
    throw new ReplayUsageError(`--reasoning-traces must be ${(e as Error).message.replace(/^reasoningTraces must be /, '')}`);
  }
  if (parsed.limits !== undefined) {
    let limits: unknown;
    try {
      limits = JSON.parse(parsed.limits);
    } catch (e) {
      throw new ReplayUsageError(`--limits must be a JSON object of runtime limits, such as '{"maxModelCallsPerTurn": 3}' (${(e as Error).message})`);
    }
    try {
      out.limits = checkLimits(limits);
    } catch (e) {
      throw new ReplayUsageError(`--limits: ${(e as Error).message}`);
    }
  }
  return out;
}

/**
 * The setup module's URL: a file (a relative path is read from the working directory), else a
 * package resolved from the working directory (or, failing that, from turnstate's own place).
 */
async function setupUrl(spec: string): Promise<string> {
  const path = resolve(process.cwd(), spec);
  if (existsSync(path)) return pathToFileURL(path).href;
  const looksLikeFile = isAbsolute(spec) || /^\.\.?([\\/]|$)/.test(spec) || spec.includes('\\') || /\.[cm]?[jt]s$/.test(spec);
  if (looksLikeFile) throw new ReplayUsageError(`no setup module at ${path}`);
  try {
    return pathToFileURL(createRequire(join(process.cwd(), 'package.json')).resolve(spec)).href;
  } catch {
    try {
      return import.meta.resolve(spec);
    } catch (e) {
      throw new ReplayUsageError(
        `cannot load the setup module "${spec}" (resolved from ${process.cwd()}): no file at ${path} and no package of that name (${e instanceof Error ? e.message.split('\n')[0] : String(e)})`,
      );
    }
  }
}

/**
 * The setup module's function. Every fault of the module names its file: one that does not load
 * (a syntax error, a throw at import), exports no function, or whose setup(registries) throws (a
 * registration the registries refuse).
 */
async function loadSetup(spec: string): Promise<NonNullable<ReplayOptions['setup']>> {
  const url = await setupUrl(spec);
  const file = url.startsWith('file:') ? fileURLToPath(url) : url;
  const why = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0] : String(e));
  let mod: { setup?: unknown; default?: unknown };
  try {
    mod = (await import(url)) as { setup?: unknown; default?: unknown };
  } catch (e) {
    throw new ReplayUsageError(`--setup ${file}: the module does not load (${why(e)})`);
  }
  const fn = mod.setup ?? mod.default;
  if (typeof fn !== 'function') throw new ReplayUsageError(`--setup ${file}: the module exports neither setup(registries) nor a default function`);
  return async (r: Registries) => {
    try {
      await (fn as (r: Registries) => void | Promise<void>)(r);
    } catch (e) {
      throw new ReplayUsageError(`--setup ${file}: setup(registries) failed: ${why(e)}`);
    }
  };
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
  let runtime: Pick<ReplayOptions, 'reasoningTraces' | 'limits'>;
  try {
    runtime = runtimeOptions(parsed);
  } catch (e) {
    err(`turnstate replay: ${(e as Error).message}\n`);
    return 2;
  }
  if (!existsSync(parsed.db)) {
    err(`turnstate replay: no database file at ${parsed.db}\n`);
    return 2;
  }
  if (statSync(parsed.db).isDirectory()) {
    // `turnstate serve --data-dir <dir>` keeps its sessions in <dir>/turnstate.db.
    const served = join(parsed.db, 'turnstate.db');
    const hint = existsSync(served) && statSync(served).isFile() ? `; \`turnstate serve --data-dir\` writes ${served}: replay ${served}` : '';
    err(`turnstate replay: ${parsed.db} is a directory, not a SQLite file${hint}\n`);
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
    const options: ReplayOptions = {
      ...runtime,
      ...(parsed.setup ? { setup: await loadSetup(parsed.setup) } : {}),
      ...(parsed.script ? { model: scriptModel(parsed.script) } : {}),
    };
    result = await replaySession(store, parsed.session, options);
  } catch (e) {
    err(`turnstate replay: ${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  } finally {
    store.close();
  }
  if (parsed.json) {
    out(
      `${JSON.stringify(
        {
          sessionId: result.sessionId,
          identical: result.diff.identical,
          recorded: result.recorded,
          replayed: result.replayed,
          diff: result.diff,
          stoppedEarly: result.stoppedEarly ?? null,
          unmatchedCalls: result.unmatchedCalls,
          reasoningTraces: result.reasoningTraces,
          notes: result.notes,
        },
        null,
        2,
      )}\n`,
    );
  } else {
    out(`recorded ${formatPath(result.recorded)}\n`);
    if (!result.diff.identical) out(`\nreplayed ${formatPath(result.replayed)}\n`);
    out(`\n${formatDiff(result.diff)}\n`);
    if (result.stoppedEarly) out(`stopped early: ${result.stoppedEarly}\n`);
    if (result.unmatchedCalls.length) out(`tool calls with no recorded result: ${result.unmatchedCalls.map((c) => `${c.tool} (${c.turnId})`).join(', ')}\n`);
    // What the replay could not know from the recording: it may explain the divergence.
    if (!result.diff.identical) for (const n of result.notes) out(`note: ${n}\n`);
  }
  return result.diff.identical ? 0 : 1;
}
