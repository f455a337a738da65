// Router micro-benchmark: the overhead of EventRouter.dispatchTool per call (trivial handlers),
// per (scope, routing) and result shape. Standalone; prints one JSON line {suite:'router', rows}.
// Uses the built package (dist/); from a source checkout: `node --import tsx bench/suites/router.mjs`.
import { loadBuild } from '../reference.mjs';
const { EventRouter, FilterAndDistribute, annotate } = await loadBuild('router/index.js');
const { ToolRegistry } = await loadBuild('registries/tools.js');
const { compileApprovalPolicy } = await loadBuild('approvals/policy.js');

const RUNS = 7;
const N = Number(process.env.ROUTER_BENCH_N ?? 50_000);
const reg = new ToolRegistry(compileApprovalPolicy);
const why = 'private to one actor: its own working state';
const tools = {
  generalist: reg.register({ name: 'g', description: 'g', inputSchema: { type: 'object' }, scope: 'generalist', handler: (a) => ({ ok: true, n: a.n }) }),
  specialist: reg.register({ name: 's', description: 's', inputSchema: { type: 'object' }, scope: 'specialist', justification: why, handler: (a) => ({ ok: true, n: a.n }) }),
  bypass: reg.register({
    name: 'b', description: 'b', inputSchema: { type: 'object' }, scope: 'specialist', routing: 'bypass',
    bypassRouting: { reason: 'latency: inline arithmetic in the actor loop' }, justification: why, handler: (a) => ({ ok: true, n: a.n }),
  }),
  async: reg.register({ name: 'ga', description: 'ga', inputSchema: { type: 'object' }, scope: 'generalist', handler: async (a) => ({ ok: true, n: a.n }) }),
};
const SPEC = { kind: 'offer', fields: { '/internal': ['audit'], '/items/*/ref': ['audit', 'cache'] }, default: ['llm-session', 'ui-stream', 'audit', 'cache'] };
tools.annotated = reg.register({
  name: 'ann', description: 'ann', inputSchema: { type: 'object' }, scope: 'generalist',
  handler: (a) => annotate({ n: a.n, internal: 3, items: [{ id: 1, ref: 'x' }, { id: 2, ref: 'y' }] }, SPEC),
});

const signal = new AbortController().signal;
const ctx = { actorName: 'bench', sessionId: 's1', turnId: 't1', callId: 'c', signal };
// How a session host dispatches: the turn's signal as a cooperative interrupt (not raced).
const hostCtx = { actorName: 'bench', sessionId: 's1', turnId: 't1', callId: 'c', interrupt: signal };
const args = { n: 1 };

async function measure(router, tool, c = ctx) {
  for (let i = 0; i < 2_000; i++) await router.dispatchTool(tool, args, c);
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) await router.dispatchTool(tool, args, c);
    samples.push(Number(process.hrtime.bigint() - t0) / N / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[RUNS >> 1];
}

function plainRouter() {
  return new EventRouter({ executionLog: { append() {} } });
}
function fanOutRouter() {
  const fad = new FilterAndDistribute();
  for (const id of ['audit', 'cache', 'formatter:email']) fad.register({ id, deliver() {} });
  return new EventRouter({ filterAndDistribute: fad, executionLog: { append() {} } });
}

const rows = [];
const add = async (name, router, tool, c) => rows.push({ name, usPerCall: Number((await measure(router, tool, c)).toFixed(3)) });

// Floor: awaiting a sync handler call directly, no router.
{
  const h = tools.generalist.handler;
  for (let i = 0; i < 2_000; i++) await h(args, ctx);
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) await h(args, ctx);
    samples.push(Number(process.hrtime.bigint() - t0) / N / 1000);
  }
  samples.sort((a, b) => a - b);
  rows.push({ name: 'floor: await handler()', usPerCall: Number(samples[RUNS >> 1].toFixed(3)) });
}
await add('routed generalist, no observers', plainRouter(), tools.generalist);
{
  const r = plainRouter();
  r.observe({}, () => {});
  r.observe({ sessionId: 's2' }, () => {});
  await add('routed generalist, 2 observers', r, tools.generalist);
}
await add('routed specialist, no observers', plainRouter(), tools.specialist);
await add('bypass specialist', plainRouter(), tools.bypass);
await add('routed generalist, async handler', plainRouter(), tools.async);
await add('routed generalist, async handler, interrupt (host)', plainRouter(), tools.async, hostCtx);
await add('generalist AnnotatedRecord, 5 destinations', fanOutRouter(), tools.annotated);

console.log(JSON.stringify({ suite: 'router', node: process.version, n: N, runs: RUNS, rows }));
