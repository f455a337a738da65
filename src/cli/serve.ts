/**
 * `turnstate serve`: the embedded default. A SQLite store and the artifacts in a data directory, the travel
 * desk app, the model (Claude when ANTHROPIC_API_KEY is set, else the ScriptedModel playing the
 * travel desk script or `--script`), AAP plus the SSE/WebSocket streams and the demo page on
 * one node:http server. Unfinished turns resume on start (`runtime.recover()`).
 *
 * Contract: `close()` stops accepting, lets the transports finish what they accepted, then
 * closes the runtime (its store included); nothing accepted is lost.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ModelPort, Runtime } from '../api.js';
import type { ModelScript } from '../models/script.js';
import { createScriptedModel } from '../models/scripted.js';
import { createRuntime } from '../runtime.js';
import { createSqliteStore } from '../stores/sqlite.js';
import { createArtifactLinks, type ArtifactLinks } from '../envelope/artifact-links.js';
import { createFileArtifactStore } from '../stores/artifacts-fs.js';
import { createArtifactsTransport } from '../transports/artifacts.js';
import { createAapTransport } from '../transports/aap/index.js';
import { healthTransport, startServer, type RunningServer } from '../transports/server.js';
import { createStreamsTransport } from '../transports/streams/index.js';
import type { Authenticate, HttpTransport } from '../transports/types.js';
import { envValue, type ServeArgs } from './args.js';
import { authFromEnv } from './auth.js';
import { lockDataDir, unusableDataDir } from './data-lock.js';
import { createOpLog, loggingModel, logServerError, secretsOf } from './oplog.js';

/** How long `serve` keeps an idle session in memory by default (5 minutes). */
export const DEFAULT_PASSIVATE_AFTER_MS = 300_000;

export interface ServeOptions extends ServeArgs {
  env?: NodeJS.ProcessEnv;
  /** Progress lines (default: stdout). */
  log?: (line: string) => void;
  /** Operational lines, one per failure: each 5xx answered, each failed model call (default: stderr; oplog.ts). */
  errorLog?: (line: string) => void;
  /** Override the authentication hook (default: from TURNSTATE_API_KEYS). */
  authenticate?: Authenticate;
  /** Where clients reach this server, for signed artifact links (default: env TURNSTATE_PUBLIC_URL, else the listening URL). */
  publicUrl?: string;
}

export interface ServeHandle {
  readonly url: string;
  readonly port: number;
  readonly runtime: Runtime;
  readonly dataDir: string;
  readonly modelName: string;
  /** Signs artifact links the artifacts route accepts (for channel senders: `renderForChannel(…, { artifactLinks })`). */
  readonly artifactLinks: ArtifactLinks;
  close(): Promise<void>;
}

const HERE = dirname(fileURLToPath(import.meta.url));
/** The package root: two levels above src/cli (or dist/cli). */
export const PACKAGE_ROOT = resolve(HERE, '..', '..');

interface TravelDeskModule {
  createTravelDesk(runtime: Runtime): { agents: { name: string; title: string; description: string }[] };
  travelDeskScript(): ModelScript;
}

/**
 * Loads the travel desk. The built command (dist/cli) loads its compiled copy,
 * dist/examples/travel-desk/app.js (`npm run build` makes it; the package ships it, and it needs
 * neither tsx nor src/). From source (src/cli, under tsx or vitest: `npm start`) it loads
 * examples/travel-desk/app.ts, which that loader compiles.
 */
async function loadTravelDesk(): Promise<TravelDeskModule> {
  const compiled = join(HERE, '..', 'examples', 'travel-desk', 'app.js');
  if (existsSync(compiled)) return (await import(pathToFileURL(compiled).href)) as TravelDeskModule;
  const source = join(PACKAGE_ROOT, 'examples', 'travel-desk', 'app.ts');
  if (!import.meta.url.endsWith('.ts')) {
    throw new Error(`the travel desk demo is not built (${compiled} is missing): run \`npm run build\``);
  }
  return (await import(pathToFileURL(source).href)) as TravelDeskModule;
}

function readScript(path: string): ModelScript {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`--script ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return JSON.parse(text) as ModelScript;
  } catch (e) {
    throw new Error(`--script ${path}: not valid JSON (${(e as Error).message})`);
  }
}

/** Creates the data directory when missing; a path that is (or lies under) a file is refused naming it. */
function makeDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST' && code !== 'ENOTDIR') throw unusableDataDir(dataDir, e) ?? e;
    // The nearest existing path: the file in the way.
    let at = dataDir;
    while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
    const inTheWay = at !== dataDir && !statSync(at).isDirectory() ? ` (${at} is a file)` : '';
    throw new Error(`--data-dir ${dataDir} is not a directory${inTheWay}`);
  }
}

/**
 * The data directory's artifact-link key (`artifact-links.key`: 32 random bytes, base64url), made
 * once, owner-only. It is written whole or not at all (a temporary file, synced, then linked into
 * place), so a crash never leaves an empty key; a key file others may read, or that is not
 * exactly such a key, stops serve with what to do.
 */
function linkSecret(dataDir: string): Buffer {
  const path = join(dataDir, 'artifact-links.key');
  let text: string;
  try {
    if (!existsSync(path)) {
      const tmp = `${path}.${process.pid}.tmp`;
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, randomBytes(32).toString('base64url'));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      try {
        linkSync(tmp, path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      } finally {
        unlinkSync(tmp);
      }
    }
    const st = statSync(path);
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
      throw new Error(`${path} may be read by other users (mode ${(st.mode & 0o777).toString(8)}): whoever reads it can make artifact links; chmod 600 it`);
    }
    if (process.getuid !== undefined && st.uid !== process.getuid()) {
      throw new Error(`${path} belongs to another user (uid ${st.uid}), who can make artifact links with it; delete it to make a new one (links already sent stop working), or run serve as its owner`);
    }
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(code === undefined ? (e as Error).message : `cannot read or create the artifact link key ${path}: ${code}`);
  }
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64url');
  if (key.byteLength !== 32 || key.toString('base64url') !== trimmed) {
    throw new Error(`${path}: not an artifact link key (32 bytes, base64url); delete it to make a new one (links already sent stop working)`);
  }
  return key;
}

/** Host errors: the name does not resolve, or is not an address of this machine. */
const HOST_ERRORS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EADDRNOTAVAIL', 'EAFNOSUPPORT']);

/** A failure to listen, naming the option (and its variable) it comes from: not a bare `getaddrinfo ENOTFOUND x`. */
function listenError(e: unknown, opts: ServeArgs): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  const message = (e as Error).message;
  if (code !== undefined && HOST_ERRORS.has(code)) {
    return new Error(`--host ${opts.host} (env HOST): cannot listen on it, it is not an address of this machine (${message})`);
  }
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    return new Error(`--port ${opts.port} (env PORT): cannot listen on it${code === 'EADDRINUSE' ? ', another process uses it' : ''} (${message})`);
  }
  return e;
}

/** How many session ids the `resumed:` line names (the count says how many there are). */
const RESUMED_SHOWN = 5;

/** `3 unfinished turn(s): a, b, c`, or with more than RESUMED_SHOWN ids, the first ones `and N more`. */
export function resumedLine(ids: readonly string[]): string {
  const more = ids.length - RESUMED_SHOWN;
  return `${ids.length} unfinished turn(s): ${ids.slice(0, RESUMED_SHOWN).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** A store file that is not a database says what to do about it. */
function storeOpenError(e: unknown): unknown {
  const details = (e as { details?: { sqliteCode?: unknown } }).details;
  if (details?.sqliteCode === 'SQLITE_NOTADB' || (e instanceof Error && /: file is not a database$/.test(e.message))) {
    return new Error(`${(e as Error).message} (restore a backup, or move the file aside to start empty)`, { cause: e });
  }
  return e;
}

export async function serve(opts: ServeOptions): Promise<ServeHandle> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const opLog = createOpLog(secretsOf(env), opts.errorLog);
  const dataDir = resolve(opts.dataDir);
  makeDataDir(dataDir);

  const desk = await loadTravelDesk();
  let model: ModelPort;
  let modelName: string;
  if (opts.script !== undefined) {
    const path = resolve(opts.script);
    const script = readScript(path);
    try {
      // No request log: a server keeps no copy of each conversation's history in the model.
      model = createScriptedModel(script, { record: false });
    } catch (e) {
      // The script's own faults (a rule without blocks, a bad regex) name the file too.
      throw new Error(`--script ${path}: ${(e as Error).message}`);
    }
    modelName = `scripted (${path})`;
  } else if (envValue(env, 'ANTHROPIC_API_KEY') !== undefined) {
    const { createAnthropicModel } = await import('../models/anthropic.js');
    model = createAnthropicModel({ apiKey: envValue(env, 'ANTHROPIC_API_KEY') });
    modelName = 'anthropic (ANTHROPIC_API_KEY is set)';
  } else {
    model = createScriptedModel(desk.travelDeskScript(), { record: false });
    modelName = 'scripted (travel desk demo script; set ANTHROPIC_API_KEY to use Claude)';
  }

  // Each failed model call is logged as it fails (a wrong key fails every turn, and says so).
  model = loggingModel(model, opLog);
  const authenticate = opts.authenticate ?? authFromEnv(envValue(env, 'TURNSTATE_API_KEYS'));
  const dbPath = join(dataDir, 'turnstate.db');
  // One server per data directory (data-lock.ts); released when it closes or fails to start.
  const unlock = lockDataDir(dataDir);
  let runtime: Runtime | undefined;
  let server: RunningServer;
  let agentNames: string[];
  let recovered: Awaited<ReturnType<Runtime['recover']>>;
  const webRoot = join(PACKAGE_ROOT, 'web');
  let artifactLinks: ArtifactLinks;
  const publicUrl = opts.publicUrl ?? envValue(env, 'TURNSTATE_PUBLIC_URL');
  try {
    let store;
    try {
      store = createSqliteStore({ path: dbPath });
    } catch (e) {
      throw storeOpenError(e);
    }
    const artifacts = createFileArtifactStore({ dir: join(dataDir, 'artifacts') });
    // A long-running server: idle sessions leave memory (they wake from the store when used).
    runtime = createRuntime({ model, store, artifacts, passivateAfterMs: opts.passivateAfterMs ?? DEFAULT_PASSIVATE_AFTER_MS });
    // After the store (whose failure to open is the one to report first). The listening URL is
    // known once the server listens; links are made after that.
    const secret = linkSecret(dataDir);
    try {
      artifactLinks = createArtifactLinks({ baseUrl: publicUrl ?? (() => server.url), secret });
    } catch (e) {
      const from = opts.publicUrl !== undefined ? 'the publicUrl option' : 'TURNSTATE_PUBLIC_URL';
      throw new Error(`${from} ${JSON.stringify(publicUrl)}: ${(e as Error).message.replace(/^createArtifactLinks\(\): /, '')}`);
    }
    const app = desk.createTravelDesk(runtime);
    agentNames = app.agents.map((a) => a.name);
    recovered = await runtime.recover();
    const transports: HttpTransport[] = [
      healthTransport(),
      createAapTransport({ runtime, authenticate, agents: app.agents }),
      createArtifactsTransport({ runtime, artifacts, authenticate, artifactLinks }),
      createStreamsTransport({
        runtime,
        authenticate,
        ...(existsSync(webRoot) ? { webRoot } : {}),
        ...(opts.allowedOrigins ? { allowedOrigins: opts.allowedOrigins } : {}),
      }),
    ];
    const allowedHosts = opts.allowedHosts?.includes('*') ? '*' : opts.allowedHosts;
    try {
      server = await startServer({
        runtime,
        transports,
        port: opts.port,
        host: opts.host,
        ...(allowedHosts ? { allowedHosts } : {}),
        onError: logServerError(opLog),
      });
    } catch (e) {
      throw listenError(e, opts);
    }
  } catch (err) {
    await runtime?.close();
    unlock();
    throw err;
  }
  const { resumed, failed } = recovered;
  log(`turnstate serve`);
  log(`  model:          ${modelName}`);
  log(`  data directory: ${dataDir} (SQLite ${dbPath}, artifacts in ${join(dataDir, 'artifacts')})`);
  log(`  agents:         ${agentNames.join(', ')}`);
  log(`  artifact links: ${(publicUrl ?? server.url).replace(/\/+$/, '')}/artifacts/{id}?exp=…&sig=… (key ${join(dataDir, 'artifact-links.key')})`);
  if (resumed.length > 0) log(`  resumed:        ${resumedLine(resumed)}`);
  // Loud, but not fatal: one damaged session must not keep the others (and the server) down.
  for (const f of failed) log(`  NOT RESUMED:    ${f.message} (${f.code})`);
  log(`  AAP:            ${server.url}/meta`);
  if (existsSync(webRoot)) log(`  demo page:      ${server.url}/`);
  log(`  pid:            ${process.pid} (SIGINT, SIGTERM or SIGHUP stops it gracefully)`);
  log(`listening on ${server.url}`);

  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    port: server.port,
    runtime,
    dataDir,
    modelName,
    artifactLinks,
    close() {
      closing ??= server.close().finally(unlock);
      return closing;
    },
  };
}
