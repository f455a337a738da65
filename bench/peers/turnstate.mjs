// turnstate, built package (dist/), driven by its ScriptedModel through the same turn as every peer:
// user message -> model call 1: respond(ack, awaiting) + get_weather -> tool result
//              -> model call 2: respond(thinking, awaiting) + get_time -> tool result
//              -> model call 3: respond(response + domain-data, complete).
// 3 model calls and 2 tool executions (routed generalist tools), like the peers. respond() travels
// alongside each tool call in the same model response, so it adds no model call.
// Variants: memory (in-memory store), sqlite (SQLite file in a temp dir).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { currentDist } from '../reference.mjs';
import { toolImpl, TOOL_A, TOOL_B } from './script.mjs';

// The built package being measured (bench/reference.mjs: TURNSTATE_DIST or ../../dist).
const DIST = currentDist();
const { createRuntime } = await import(DIST + 'runtime.js');
const { createScriptedModel } = await import(DIST + 'models/scripted.js');
const { createMemoryStore } = await import(DIST + 'stores/memory.js');

export const ANSWER = 'It is 21°C and sunny in Paris, local time 12:00.';

/** The turn as a ModelScript (src/models/script.ts): one rule per model call of the turn. */
export const SCRIPT = {
  rules: [
    {
      id: 'ack+weather',
      when: { call: 0 },
      respond: {
        blocks: [
          { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Checking the weather and time in Paris.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
          { type: 'tool_use', name: TOOL_A, input: { city: 'Paris' } },
        ],
      },
    },
    {
      id: 'thinking+time',
      when: { call: 1 },
      respond: {
        blocks: [
          { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Weather found; now the local time.', metadata: { partType: 'thinking' } }], turnState: 'awaiting' } },
          { type: 'tool_use', name: TOOL_B, input: { tz: 'Europe/Paris' } },
        ],
      },
    },
    {
      id: 'answer',
      when: { call: 2 },
      respond: {
        blocks: [
          {
            type: 'tool_use',
            name: 'respond',
            input: {
              parts: [
                { text: ANSWER, metadata: { partType: 'response' } },
                { data: { city: 'Paris', tempC: 21, cond: 'sunny', tz: 'Europe/Paris', time: '12:00' }, metadata: { partType: 'domain-data' } },
              ],
              turnState: 'complete',
            },
          },
        ],
      },
    },
  ],
};

export const counters = { modelCalls: 0, toolCalls: 0, commits: 0, events: 0 };

const runtimes = [];
// temp dirs go even when a run fails or exits early
process.on('exit', () => { for (const { dir } of runtimes) if (dir) rmSync(dir, { recursive: true, force: true }); });

/**
 * A runtime with the bench actor and its two tools registered; `storeKind` is 'memory', 'sqlite'
 * or a store object to use as it is; `options` are extra RuntimeOptions; `sqlitePath` opens that
 * SQLite file (kept, or ':memory:') instead of a new one in a temp dir.
 */
export async function makeRuntime(storeKind, options = {}, sqlitePath) {
  const scripted = createScriptedModel(SCRIPT, { name: 'bench-scripted', record: false });
  // Counts model calls for the sanity check and delegates the stream untouched. The ScriptedModel
  // records nothing (`record: false`), as the peers' scripted models, to keep its list of requests
  // out of the memory figures.
  const model = {
    name: scripted.name,
    stream(req, signal) {
      counters.modelCalls++;
      return scripted.stream(req, signal);
    },
  };
  let store, dir;
  if (typeof storeKind === 'object') {
    store = storeKind;
  } else if (storeKind === 'sqlite') {
    const { createSqliteStore } = await import(DIST + 'stores/sqlite.js');
    if (sqlitePath === undefined) dir = mkdtempSync(join(tmpdir(), 'turnstate-bench-'));
    store = await createSqliteStore({ path: sqlitePath ?? join(dir, 'bench.db') });
  } else {
    store = createMemoryStore();
  }
  // Counts store commits and published events per turn (reported with the results).
  const commit = store.commit.bind(store);
  store.commit = (id, step) => { counters.commits++; counters.events += step.events ? step.events.length : 0; return commit(id, step); };
  const runtime = createRuntime({ ...options, model, store });
  runtime.registries.tools.register({
    name: TOOL_A, description: 'weather', scope: 'generalist',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    handler: (args) => { counters.toolCalls++; return toolImpl[TOOL_A](args); },
  });
  runtime.registries.tools.register({
    name: TOOL_B, description: 'time', scope: 'generalist',
    inputSchema: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] },
    handler: (args) => { counters.toolCalls++; return toolImpl[TOOL_B](args); },
  });
  runtime.registries.actors.register({ name: 'bench', system: 'You are a benchmark agent.', tools: [TOOL_A, TOOL_B] });
  const rt = { runtime, dir };
  runtimes.push(rt);
  return rt;
}

let last = { m: 0, t: 0, c: 0, e: 0 };
let turnShape;
const check = (s, outcome) => {
  const dm = counters.modelCalls - last.m, dt = counters.toolCalls - last.t;
  turnShape = { modelCalls: dm, toolExecutions: dt, storeCommits: counters.commits - last.c, events: counters.events - last.e, parts: outcome.parts.map((p) => p.metadata.partType) };
  last = { m: counters.modelCalls, t: counters.toolCalls, c: counters.commits, e: counters.events };
  if (dm !== 3 || dt !== 2) throw new Error(`bad turn: model=${dm} tools=${dt} outcome=${JSON.stringify(outcome)}`);
  if (outcome.finalizedBy !== 'complete') throw new Error('turn not complete: ' + JSON.stringify(outcome));
  const types = outcome.parts.map((p) => p.metadata.partType);
  for (const t of ['ack', 'thinking', 'response', 'domain-data']) if (!types.includes(t)) throw new Error(`part ${t} missing: ${types}`);
  const resp = outcome.parts.find((p) => p.metadata.partType === 'response');
  if (!String(resp.text).startsWith('It is 21')) throw new Error('bad response: ' + resp.text);
};

function variant(storeKind) {
  let rt;
  const ensure = async () => {
    if (!rt) rt = await makeRuntime(storeKind);
    return rt.runtime;
  };
  return {
    createSession: async () => (await ensure()).createSession({ actor: 'bench' }),
    runTurn: async (s, text) => (await s.send(text)).settled,
    // perf mode: after its turn each fresh session is dropped from memory, inside the timed loop,
    // so the runtime does not grow over ~100k measured sessions: the in-memory store deletes it
    // (its records are on the heap); with SQLite it is passivated (its rows stay in the file, as
    // sessions do in production; deleting them would time a DELETE the turn does not need).
    disposeSession: storeKind === 'sqlite' ? () => { rt.runtime.passivateIdle(); } : (s) => rt.runtime.deleteSession(s.id),
    check,
    /** What the checked turn did (model calls, tool executions, store commits, events, parts). */
    describeTurn: () => turnShape,
    describeRetained: () => storeKind === 'sqlite'
      ? 'session handle + runtime bookkeeping (events, mailbox and snapshot in the SQLite file, off-heap)'
      : 'session handle + runtime bookkeeping + in-memory store (events, mailbox, executions, snapshot)',
  };
}

export const variants = { memory: variant('memory'), sqlite: variant('sqlite') };

export async function close() {
  for (const { runtime, dir } of runtimes) {
    await runtime.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}
