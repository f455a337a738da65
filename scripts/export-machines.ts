/**
 * Exports turnstate's machines as Stately-importable JSON (`machine.config`, canonicalised) and
 * fills the generated tables of docs/machines/README.md.
 *
 *   tsx scripts/export-machines.ts           write docs/machines/*.json and the README tables
 *   tsx scripts/export-machines.ts --check   exit 1 if any committed file differs from a fresh export
 *
 * The export fails loudly (a TurnstateError `machines.not_json_safe`) on anything JSON cannot
 * carry: a function (inline guard, action or context factory), a symbol, a bigint, a non-finite
 * number, a class instance, a cycle, or a guard/action name with no implementation. The session
 * machine's `context` is a function of its input; the export replaces it with the context a
 * default runtime gives a session (`REPRESENTATIVE_SESSION_INPUT`), computed by the machine itself.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { createActor, type AnyStateMachine } from 'xstate';
import { TurnstateError } from '../src/errors.js';
import { createActorMachine } from '../src/machines/actor.machine.js';
import { createSessionMachine, type SessionMachineInput } from '../src/machines/session.machine.js';
import { createRegistries } from '../src/create-registries.js';
import { CANONICAL_TURN_STATES } from '../src/registries/index.js';
import type { TurnStateRegistryApi } from '../src/registries/types.js';
import { DEFAULT_LIMITS, sessionMachineLimits } from '../src/limits.js';

/** The repository root. */
export const ROOT_URL = new URL('..', import.meta.url);

/** The input a default runtime gives a session's machine (see SessionHost), for an actor named `assistant`. */
export const REPRESENTATIVE_SESSION_INPUT: SessionMachineInput = { entryActor: 'assistant', ...sessionMachineLimits(DEFAULT_LIMITS) };

/** The consumer states of the example export: one terminal, one holding the actor. */
export const EXAMPLE_CONSUMER_STATES = [
  {
    id: 'escalated',
    meta: {
      description: 'A human agent takes over; the turn ends here without an envelope.',
      isTerminal: true,
      emitsEnvelope: false,
      holdsActor: false,
    },
  },
  {
    id: 'awaiting-review',
    meta: {
      description: 'The draft waits for a reviewer; the turn resumes on a review injection.',
      isTerminal: false,
      emitsEnvelope: false,
      holdsActor: true,
      resumeOn: 'review',
    },
  },
] as const;

export function registerExampleConsumerStates(turnStates: TurnStateRegistryApi): void {
  for (const s of EXAMPLE_CONSUMER_STATES) turnStates.register({ id: s.id, meta: { ...s.meta } });
}

/* ------------------------------------------------------------------ canonical, JSON-safe config */

export interface ToStatelyConfigOptions {
  /** Replaces a context factory (a function of input) with this static context. */
  context?: Record<string, unknown>;
}

/** Keys of state nodes, transitions and implementation references, in the order they are written. */
const KEY_ORDER = [
  'id', 'type', 'description', 'tags', 'initial', 'context', 'entry', 'exit', 'on', 'always', 'after', 'invoke',
  'states', 'guard', 'target', 'actions', 'reenter', 'params', 'output', 'meta',
];
const KEY_RANK = new Map(KEY_ORDER.map((k, i) => [k, i]));
/** Maps whose key order is the machine's definition order (document order of nodes, event order). */
const ORDERED_MAPS = new Set(['states', 'on', 'after']);
/** Free-form data: every key sorted. */
const DATA_KEYS = new Set(['context', 'params', 'meta', 'output']);

function compareKeys(a: string, b: string): number {
  const ra = KEY_RANK.get(a) ?? KEY_ORDER.length;
  const rb = KEY_RANK.get(b) ?? KEY_ORDER.length;
  return ra !== rb ? ra - rb : a < b ? -1 : a > b ? 1 : 0;
}

type Mode = 'structure' | 'ordered-map' | 'data';

function notSafe(machineId: string, path: string, what: string, fix: string): never {
  throw new TurnstateError(
    'machines.not_json_safe',
    `machine "${machineId}": ${path} is ${what}; Stately imports JSON only. ${fix}`,
    { details: { machine: machineId, path } },
  );
}

function canonical(machineId: string, value: unknown, path: string, mode: Mode, ancestors: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) notSafe(machineId, path, `the number ${value}`, 'Use a finite number or null.');
      return value;
    case 'function':
      notSafe(
        machineId,
        path,
        `a function (${(value as { name?: string }).name || 'anonymous'})`,
        'Name the implementation in setup() and reference it as { type, params }; use params for per-state variants instead of inline functions or and()/not().',
      );
    // falls through (notSafe never returns)
    case 'symbol':
    case 'bigint':
      notSafe(machineId, path, `a ${typeof value}`, 'Use a string or a number.');
    // falls through
    case 'undefined':
      return undefined;
    default:
      break;
  }
  if (value === null) return null;
  const obj = value as object;
  if (ancestors.has(obj)) notSafe(machineId, path, 'a reference to one of its own ancestors (a cycle)', 'Build the config as a tree.');
  ancestors.add(obj);
  try {
    if (Array.isArray(obj)) {
      return obj.map((item, i) => {
        const out = canonical(machineId, item, `${path}[${i}]`, mode === 'data' ? 'data' : 'structure', ancestors);
        if (out === undefined) notSafe(machineId, `${path}[${i}]`, 'undefined inside an array', 'Remove the hole or use null.');
        return out;
      });
    }
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      notSafe(machineId, path, `an instance of ${proto?.constructor?.name ?? 'a class'}`, 'Use plain objects, arrays, strings, numbers, booleans and null.');
    }
    const keys = Object.keys(obj);
    if (mode !== 'ordered-map') keys.sort(mode === 'data' ? undefined : compareKeys);
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      const childMode: Mode =
        mode === 'data' ? 'data' : mode === 'structure' && ORDERED_MAPS.has(key) ? 'ordered-map' : mode === 'structure' && DATA_KEYS.has(key) ? 'data' : 'structure';
      const v = canonical(machineId, (obj as Record<string, unknown>)[key], `${path}.${key}`, childMode, ancestors);
      // An undefined property is absent to XState as well: omitting it loses nothing.
      if (v !== undefined) out[key] = v;
    }
    return out;
  } finally {
    ancestors.delete(obj);
  }
}

/** Every guard and action named in a state node (recursively), with where it is named. */
function collectReferences(node: Record<string, any>, path: string, out: { kind: 'guard' | 'action'; name: string; path: string }[]): void {
  const actionsOf = (a: unknown, p: string) => {
    for (const [i, x] of (Array.isArray(a) ? a : a === undefined ? [] : [a]).entries()) {
      const name = typeof x === 'string' ? x : x && typeof x === 'object' ? (x as { type?: unknown }).type : undefined;
      if (typeof name === 'string') out.push({ kind: 'action', name, path: `${p}[${i}]` });
    }
  };
  const transitionsOf = (t: unknown, p: string) => {
    for (const [i, x] of (Array.isArray(t) ? t : t === undefined ? [] : [t]).entries()) {
      if (!x || typeof x !== 'object') continue;
      const g = (x as { guard?: unknown }).guard;
      const gname = typeof g === 'string' ? g : g && typeof g === 'object' ? (g as { type?: unknown }).type : undefined;
      if (typeof gname === 'string') out.push({ kind: 'guard', name: gname, path: `${p}[${i}].guard` });
      actionsOf((x as { actions?: unknown }).actions, `${p}[${i}].actions`);
    }
  };
  actionsOf(node.entry, `${path}.entry`);
  actionsOf(node.exit, `${path}.exit`);
  for (const [ev, t] of Object.entries(node.on ?? {})) transitionsOf(t, `${path}.on.${ev}`);
  for (const [d, t] of Object.entries(node.after ?? {})) transitionsOf(t, `${path}.after.${d}`);
  transitionsOf(node.always, `${path}.always`);
  for (const [k, child] of Object.entries(node.states ?? {})) collectReferences(child as Record<string, any>, `${path}.states.${k}`, out);
}

/**
 * `machine.config` as canonical JSON-safe data: stable key order, nothing JSON would drop or
 * change. Throws `machines.not_json_safe` naming the path of the first offending value.
 */
export function toStatelyConfig(machine: AnyStateMachine, options: ToStatelyConfigOptions = {}): Record<string, unknown> {
  const id = machine.id;
  const config: Record<string, unknown> = { ...(machine.config as Record<string, unknown>) };
  if (typeof config.context === 'function') {
    if (!options.context) {
      notSafe(id, 'config.context', 'a function of input', 'Pass a representative static context (toStatelyConfig(machine, { context })).');
    }
    config.context = options.context;
  } else if (options.context) {
    config.context = options.context;
  }
  const out = canonical(id, config, 'config', 'structure', new Set()) as Record<string, unknown>;
  const impl = machine.implementations as { guards: Record<string, unknown>; actions: Record<string, unknown> };
  const refs: { kind: 'guard' | 'action'; name: string; path: string }[] = [];
  collectReferences(out, 'config', refs);
  for (const r of refs) {
    const known = r.kind === 'guard' ? impl.guards : impl.actions;
    if (!(r.name in known)) {
      notSafe(id, r.path, `the ${r.kind} "${r.name}" with no implementation in setup()`, `Add "${r.name}" to setup({ ${r.kind}s }).`);
    }
  }
  return out;
}

/** The context `machine` starts with for `input` (the machine's own context factory computes it). */
export function initialContext(machine: AnyStateMachine, input: unknown): Record<string, unknown> {
  return createActor(machine, { input }).getSnapshot().context as Record<string, unknown>;
}

export const toJson = (config: unknown): string => `${JSON.stringify(config, null, 2)}\n`;

/* ------------------------------------------------------------------ the exported machines */

export interface ExportedMachine {
  /** Path relative to the repository root. */
  file: string;
  machine: AnyStateMachine;
  config: Record<string, unknown>;
  json: string;
}

export function sessionMachineFor(withConsumerStates: boolean): AnyStateMachine {
  const registries = createRegistries();
  if (withConsumerStates) registerExampleConsumerStates(registries.turnStates);
  return createSessionMachine(registries.turnStates);
}

export function exportMachines(): ExportedMachine[] {
  const entries: { file: string; machine: AnyStateMachine; input?: unknown }[] = [
    { file: 'docs/machines/session.machine.json', machine: sessionMachineFor(false), input: REPRESENTATIVE_SESSION_INPUT },
    { file: 'docs/machines/session.consumer-example.machine.json', machine: sessionMachineFor(true), input: REPRESENTATIVE_SESSION_INPUT },
    { file: 'docs/machines/actor.machine.json', machine: createActorMachine(REPRESENTATIVE_SESSION_INPUT.loop) },
  ];
  return entries.map(({ file, machine, input }) => {
    const config = toStatelyConfig(machine, input === undefined ? {} : { context: initialContext(machine, input) });
    return { file, machine, config, json: toJson(config) };
  });
}

/* ------------------------------------------------------------------ README tables */

/** What each event means; the events table of the README is built from the config plus these lines. */
export const EVENT_DOCS: Record<string, { payload: string; meaning: string }> = {
  START: { payload: '`turnId`', meaning: 'The host starts a turn for an inbound message (one turn at a time per session).' },
  CALL: {
    payload: '',
    meaning: 'The host calls the model (from `dispatching`: the tool results are in); counted against the model-call budget.',
  },
  MODEL_DONE: {
    payload: 'the response\'s summary: `change?`, `toolUses`, `rejected`, `applied`, `freeText`, `stopReason` (or `next`: `dispatch` \\| `call` \\| `rejected` \\| `free-text`, the decision taken by hand)',
    meaning: 'The model response is complete; the guards decide what follows: a state change it asks for (the session machine sends it on as its own `RESPOND`), tools to run, a retry after rejected respond() calls or free text, or a failure.',
  },
  INTERRUPTED: { payload: '', meaning: 'The model call was aborted by an interrupting message (double-texting `interrupt`).' },
  TOOLS_DONE: { payload: '', meaning: 'Every tool call of the response has its result; the loop is ready for its next model call. For driving the machine by hand (Stately, tests): the host says the same with `CALL{pending}`.' },
  RESPOND: {
    payload: '`to`, `passTo?`, `limits?`',
    meaning: 'A respond() call declared the turn state `to` (and the actor to hand off to): sent by the machine to itself from `MODEL_DONE`, or by recovery replaying a change the log holds.',
  },
  HOLD: { payload: '`to`', meaning: 'Puts the turn in the holding state `to`. For driving the machine by hand (Stately, tests): the host never sends it; a turn with calls pending is held by `CALL{pending}` (into `suspended`), a holding state the model asks for by its `RESPOND`.' },
  RESUME: { payload: '`resumeOn`', meaning: 'An injection of kind `resumeOn` resumes a held turn.' },
  ANSWERED: { payload: '', meaning: 'Every call the held turn waited for (an approval, a client tool) is answered: the state pending calls hold the turn in (`suspended`) goes back to `awaiting`. A consumer\'s holding state, whatever its `resumeOn`, waits for its own `RESUME`.' },
  FAIL: { payload: '`code`, `message`', meaning: 'An unrecoverable failure (model error, tool infrastructure): the turn goes to `error`.' },
  SETTLE: { payload: '', meaning: 'The host has published the settlement of a terminal turn state; the session is idle again.' },
  RECOVER: {
    payload: '`pending?`',
    meaning: 'After a restart: the turn goes on from the restored phase (`pending` calls still wait); where the turn rests, the session machine emits its hold or settle again.',
  },
  JOIN: { payload: '`pending?`', meaning: 'A double-texted message asks to join the running turn; with no call pending the machine emits `join`.' },
};

type Row = string[];

const refName = (r: unknown): string => {
  if (typeof r === 'string') return r;
  if (r && typeof r === 'object') {
    const { type, params } = r as { type?: string; params?: Record<string, unknown> };
    if (!params) return String(type);
    const ps = Object.entries(params)
      .filter(([k]) => k !== 'message')
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
      .join(', ');
    return `${type}(${ps})`;
  }
  return '';
};
const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string): string => (s ? `\`${s}\`` : '');

function table(header: Row, rows: Row[]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

function walk(node: Record<string, any>, path: string, visit: (node: Record<string, any>, path: string) => void): void {
  visit(node, path);
  for (const [k, child] of Object.entries(node.states ?? {})) walk(child as Record<string, any>, path ? `${path}.${k}` : k, visit);
}

/** States table: every node, its kind (tags / type), and its description. */
export function statesTable(config: Record<string, unknown>): string {
  const rows: Row[] = [];
  walk(config as Record<string, any>, '', (node, path) => {
    if (!path) return;
    const kind = [...(node.tags ?? []), ...(node.type ? [node.type] : []), ...(node.initial ? [`initial: ${node.initial}`] : [])];
    rows.push([code(path), cell(kind.join(', ')), cell(node.description ?? '')]);
  });
  return table(['state', 'kind', 'description'], rows);
}

/** Transitions table: one row per transition, in the order XState tries them. */
export function transitionsTable(config: Record<string, unknown>): string {
  const rows: Row[] = [];
  walk(config as Record<string, any>, '', (node, path) => {
    const add = (event: string, t: unknown) => {
      for (const x of Array.isArray(t) ? t : [t]) {
        const tr = (typeof x === 'string' ? { target: x } : x) as { target?: string | string[]; guard?: unknown; actions?: unknown };
        const actions = tr.actions === undefined ? [] : Array.isArray(tr.actions) ? tr.actions : [tr.actions];
        const target = tr.target === undefined ? '(no change)' : code([tr.target].flat().join(', '));
        rows.push([code(path || '(root)'), code(event), cell(tr.guard ? refName(tr.guard) : ''), target, cell(actions.map(refName).join(', '))]);
      }
    };
    for (const [ev, t] of Object.entries(node.on ?? {})) add(ev, t);
    if (node.always) add('(always)', node.always);
  });
  return table(['from', 'event', 'guard', 'target', 'actions'], rows);
}

/** Turn-state table: each node under `turn`, who registered it, its kind and what resumes it. */
export function turnStatesTable(config: Record<string, unknown>): string {
  const turn = ((config.states as Record<string, any> | undefined)?.turn ?? {}) as Record<string, any>;
  const rows = Object.entries((turn.states ?? {}) as Record<string, any>).map(([id, node]) => {
    const resume = [node.on?.RESUME ?? []].flat().map((t: any) => t?.guard?.params?.resumeOn).filter(Boolean);
    return [
      code(id),
      id in CANONICAL_TURN_STATES ? 'canonical' : 'consumer',
      cell((node.tags ?? []).join(', ')),
      resume.map(code).join(', '),
      cell(node.description ?? ''),
    ];
  });
  return table(['turn state', 'registered', 'kind', 'resumes on', 'description'], rows);
}

/** Events table: every event the config handles, with its payload and meaning. */
export function eventsTable(config: Record<string, unknown>, warn: (msg: string) => void = () => {}): string {
  const events: string[] = [];
  walk(config as Record<string, any>, '', (node) => {
    for (const ev of Object.keys(node.on ?? {})) if (!events.includes(ev)) events.push(ev);
  });
  const rows = events.map((ev) => {
    const doc = EVENT_DOCS[ev];
    if (!doc) warn(`event ${ev} has no entry in EVENT_DOCS (scripts/export-machines.ts)`);
    return [code(ev), doc?.payload ?? '', cell(doc?.meaning ?? '')];
  });
  return table(['event', 'payload', 'meaning'], rows);
}

export const README_FILE = 'docs/machines/README.md';

/** The generated blocks of the README, by marker name. */
export function readmeBlocks(machines: ExportedMachine[], warn?: (msg: string) => void): Record<string, string> {
  const byFile = (f: string) => {
    const m = machines.find((x) => x.file === f);
    if (!m) throw new Error(`no exported machine ${f}`);
    return m.config;
  };
  const session = byFile('docs/machines/session.machine.json');
  const example = byFile('docs/machines/session.consumer-example.machine.json');
  const actor = byFile('docs/machines/actor.machine.json');
  const files = machines.map((m) => [code(m.file.replace('docs/machines/', '')), String(Buffer.byteLength(m.json)), code(String(m.config.id))]);
  return {
    'files': table(['file', 'bytes', 'machine id'], files),
    'session-states': statesTable(session),
    'session-events': eventsTable(session, warn),
    'session-transitions': transitionsTable(session),
    'session-context': `\`\`\`json\n${JSON.stringify(session.context, null, 2)}\n\`\`\``,
    'consumer-states': turnStatesTable(example),
    'actor-states': statesTable(actor),
    'actor-events': eventsTable(actor, warn),
    'actor-transitions': transitionsTable(actor),
  };
}

/** Replaces each `<!-- BEGIN GENERATED: name -->...<!-- END GENERATED: name -->` block; every block must exist. */
export function fillReadme(readme: string, blocks: Record<string, string>): string {
  let out = readme;
  for (const [name, body] of Object.entries(blocks)) {
    const begin = `<!-- BEGIN GENERATED: ${name} -->`;
    const end = `<!-- END GENERATED: ${name} -->`;
    const i = out.indexOf(begin);
    const j = out.indexOf(end);
    if (i < 0 || j < i) {
      throw new TurnstateError('machines.readme_markers', `${README_FILE} lacks the generated block "${name}" (${begin} ... ${end})`);
    }
    out = `${out.slice(0, i + begin.length)}\n${body}\n${out.slice(j)}`;
  }
  return out;
}

/** Every file the export writes, with its fresh content. */
export async function generateFiles(warn?: (msg: string) => void): Promise<{ file: string; content: string }[]> {
  const machines = exportMachines();
  const readme = await readFile(new URL(README_FILE, ROOT_URL), 'utf8');
  return [
    ...machines.map((m) => ({ file: m.file, content: m.json })),
    { file: README_FILE, content: fillReadme(readme, readmeBlocks(machines, warn)) },
  ];
}

async function readOrNull(file: string): Promise<string | null> {
  try {
    return await readFile(new URL(file, ROOT_URL), 'utf8');
  } catch {
    return null;
  }
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check');
  const unknown = argv.filter((a) => a !== '--check');
  if (unknown.length) {
    console.error(`unknown argument(s): ${unknown.join(' ')}; usage: tsx scripts/export-machines.ts [--check]`);
    return 2;
  }
  const files = await generateFiles((msg) => console.warn(`warning: ${msg}`));
  if (check) {
    const stale: string[] = [];
    for (const f of files) if ((await readOrNull(f.file)) !== f.content) stale.push(f.file);
    if (stale.length) {
      console.error(`out of date: ${stale.join(', ')}\nrun \`npm run machines:export\` and commit the result`);
      return 1;
    }
    console.log(`up to date: ${files.map((f) => f.file).join(', ')}`);
    return 0;
  }
  for (const f of files) {
    await writeFile(new URL(f.file, ROOT_URL), f.content);
    console.log(`wrote ${f.file} (${Buffer.byteLength(f.content)} bytes)`);
  }
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    },
  );
}
