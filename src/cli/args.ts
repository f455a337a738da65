/**
 * Command-line parsing for `turnstate`: `--name value`, `--name=value` and boolean flags.
 * Unknown options are errors naming the option (never silently ignored).
 */
import { parseOrigin } from '../transports/http.js';

export interface ServeArgs {
  port: number;
  host: string;
  dataDir: string;
  script?: string;
  /** Browser origins besides the server's own whose pages may open the WebSocket. */
  allowedOrigins?: string[];
  /** Host names requests may carry besides the loopback ones (a name that reaches this machine). */
  allowedHosts?: string[];
  /** Passivate sessions idle this long (ms; 0 keeps every session in memory). Default 300000. */
  passivateAfterMs?: number;
}

export type Command = { kind: 'serve'; args: ServeArgs } | { kind: 'help'; text: string } | { kind: 'version' };

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const USAGE = `Usage: turnstate <command> [options]

Commands:
  serve     Run the AAP + SSE/WebSocket server with the travel-desk demo app
  replay    Re-run a recorded session from a SQLite file and diff its path
            (turnstate replay <db> <session> [--script new.json]; see turnstate replay --help)

Options for serve:
  --port <n>        Port to listen on (default 8787, 0 picks a free port; env PORT)
  --host <addr>     Address to bind (default 127.0.0.1; env HOST)
  --data-dir <dir>  Directory of the SQLite store (default .data; env TURNSTATE_DATA_DIR)
  --script <file>   Play this ScriptedModel script (JSON) instead of the travel desk's
  --allow-origin <origins>
                    Comma-separated browser origins (https://app.example.com) whose pages may
                    open the WebSocket besides the server's own (env TURNSTATE_ALLOWED_ORIGINS)
  --passivate-after <ms>
                    Drop sessions idle this long from memory; they wake from the store on their
                    next message or read (default 300000 = 5 min; 0 never; env
                    TURNSTATE_PASSIVATE_AFTER_MS)
  --allow-host <names>
                    Comma-separated host names (agents.internal) requests may be addressed to
                    besides localhost, *.localhost, 127.0.0.1 and [::1]; other Hosts are refused
                    with 403, against DNS rebinding ("*": any; env TURNSTATE_ALLOWED_HOSTS). Bound
                    to a non-loopback --host, any Host is answered unless this is given
  -h, --help        Show this help
  -v, --version     Show the version

Environment (an empty variable, HOST=, counts as unset):
  TURNSTATE_PUBLIC_URL
                    The base of signed artifact links (https://agents.example.com; default:
                    the listening URL)
  TURNSTATE_API_KEYS
                    JSON mapping API keys to principals ({"<key>": {"userId": "ana"}}); a key
                    is then required. Unset: every request is the local user

The model: Claude when ANTHROPIC_API_KEY is set, else the travel desk's ScriptedModel
(or the --script file).`;

/**
 * An environment variable's value, or undefined when it is unset or empty (blank): `HOST=` in an
 * env file or a compose file means "not set", never "bind every interface" or "the current
 * directory". Every variable the command reads goes through this.
 */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** The name of an option word: `--data-dir=x` and `--data-dir` are both "data-dir". */
export function optionName(arg: string): string {
  const eq = arg.indexOf('=');
  return arg.slice(2, eq === -1 ? undefined : eq);
}

/**
 * The value of the option `argv[i]` (named `name`): after its "=", else the next word, which is
 * never another option (`--data-dir --port 0`: a value that starts with "--" can still be given
 * as `--data-dir=--odd`). `last` is the index of the last word it took. A usage error names a
 * missing value, and the option it got instead.
 */
export function optionValue(argv: readonly string[], i: number, name: string): { value: string; last: number } {
  const arg = argv[i]!;
  const eq = arg.indexOf('=');
  let value: string | undefined;
  let last = i;
  if (eq !== -1) value = arg.slice(eq + 1);
  else {
    value = argv[i + 1];
    last = i + 1;
    if (value?.startsWith('--')) throw new UsageError(`option "--${name}" needs a value (got the option "${value}")`);
  }
  if (value === undefined || value === '') throw new UsageError(`option "--${name}" needs a value`);
  return { value, last };
}

/** A flag (`--json`) takes no value: `--json=no` is a usage error, never read as the flag. */
export function flagWithoutValue(arg: string, name: string): void {
  const eq = arg.indexOf('=');
  if (eq !== -1) throw new UsageError(`option "--${name}" takes no value (got "${arg.slice(eq + 1)}")`);
}

const SERVE_OPTIONS = new Set(['port', 'host', 'data-dir', 'script', 'allow-origin', 'allow-host', 'passivate-after']);

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Command {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '-h' || command === '--help') return { kind: 'help', text: USAGE };
  if (command === '-v' || command === '--version' || command === 'version') return { kind: 'version' };
  if (command !== 'serve') throw new UsageError(`unknown command "${command}" (commands: serve, replay)`);

  const values = new Map<string, string>();
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '-h' || arg === '--help') return { kind: 'help', text: USAGE };
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`);
    const name = optionName(arg);
    if (!SERVE_OPTIONS.has(name)) throw new UsageError(`unknown option "--${name}" (options: ${[...SERVE_OPTIONS].map((o) => `--${o}`).join(', ')})`);
    const { value, last } = optionValue(rest, i, name);
    i = last;
    values.set(name, value);
  }

  /** The option's value, else its environment variable's (unset or empty: none), with the name to report. */
  const option = (name: string, variable: string): { value: string; from: string } | undefined => {
    const flag = values.get(name);
    if (flag !== undefined) return { value: flag, from: `--${name}` };
    const fromEnv = envValue(env, variable);
    return fromEnv === undefined ? undefined : { value: fromEnv, from: variable };
  };

  const portOpt = option('port', 'PORT') ?? { value: '8787', from: '--port' };
  const port = Number(portOpt.value);
  if (!/^\d+$/.test(portOpt.value) || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`${portOpt.from} must be an integer from 0 to 65535, got "${portOpt.value}"`);
  }
  const args: ServeArgs = {
    port,
    host: option('host', 'HOST')?.value ?? '127.0.0.1',
    dataDir: option('data-dir', 'TURNSTATE_DATA_DIR')?.value ?? '.data',
  };
  const script = values.get('script');
  if (script !== undefined) args.script = script;
  const origins = option('allow-origin', 'TURNSTATE_ALLOWED_ORIGINS');
  if (origins !== undefined) {
    // Each as the origin a browser sends (`https://App.Example.com:443` is https://app.example.com).
    const list = origins.value
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o !== '')
      .map((o) => {
        const origin = parseOrigin(o);
        if (origin === undefined) throw new UsageError(`${origins.from}: "${o}" is not an origin (scheme://host[:port], no path, query or user), e.g. https://app.example.com`);
        return origin;
      });
    if (list.length > 0) args.allowedOrigins = list;
  }
  const passivate = option('passivate-after', 'TURNSTATE_PASSIVATE_AFTER_MS');
  if (passivate !== undefined) {
    // As createRuntime's passivateAfterMs: a whole number of milliseconds (not a timer: no timer bound).
    if (!/^\d+$/.test(passivate.value) || !Number.isSafeInteger(Number(passivate.value))) {
      throw new UsageError(`${passivate.from} must be a whole number of milliseconds (0: never), got "${passivate.value}"`);
    }
    args.passivateAfterMs = Number(passivate.value);
  }
  const hosts = option('allow-host', 'TURNSTATE_ALLOWED_HOSTS');
  if (hosts !== undefined) {
    const list = hosts.value.split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
    for (const h of list) {
      if (h !== '*' && !/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$/.test(h)) throw new UsageError(`${hosts.from}: "${h}" is not a host name (no scheme, port or path), e.g. agents.internal`);
    }
    if (list.length > 0) args.allowedHosts = list;
  }
  return { kind: 'serve', args };
}
