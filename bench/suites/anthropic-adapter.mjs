// Anthropic adapter overhead per streamed model call. The real @anthropic-ai/sdk talks to the
// loopback Messages API server in this same process; every call streams one 2 KB respond() tool
// call cut into 100 input_json_delta chunks. Variants, interleaved round by round, medians:
//   http only                     fetch + read the SSE body, no parsing (what the server and HTTP cost)
//   sdk messages.stream()         the SDK's own streaming helper, no turnstate (the reference)
//   sdk messages.create(stream)   the raw event stream the adapter is built on (the floor)
//   turnstate adapter             createAnthropicModel().stream(): raw events -> ModelEvents
//   turnstate adapter + parts     the same plus createRespondStreamParser on every input.delta
// Prints one JSON line {suite:'anthropic-adapter', rows} and a markdown table.
// Uses the built package (dist/, `npm run build`); from a source checkout:
//   node --import tsx bench/suites/anthropic-adapter.mjs [--quick]
import Anthropic from '@anthropic-ai/sdk';
import { cpuMicros, summarize } from '../lib.mjs';
import { loadBuild } from '../reference.mjs';

const { createAnthropicModel } = await loadBuild('models/anthropic.js');
const { buildRequest } = await loadBuild('models/anthropic-request.js');
const { startLoopbackMessagesServer } = await loadBuild('models/loopback-server.js');
const { createRespondStreamParser } = await loadBuild('respond/stream.js');

const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 4 : 12;
const CALLS = QUICK ? 25 : 60; // calls per variant per round
const WARMUP = QUICK ? 30 : 100;

/* ------------------------------------------------------------------ the call */

const sentence = 'Two direct options: EasyJet EJ4521 at £94pp departing 06:15, BA2043 at £187pp at 08:45. ';
const input = {
  parts: [
    { metadata: { partType: 'ack' }, text: 'Looking up direct flights from Gatwick to Corfu for 15 August.' },
    { metadata: { partType: 'response' }, text: sentence.repeat(21).slice(0, 1880) },
  ],
  turnState: 'complete',
};
const json = JSON.stringify(input);
const CHUNKS = 100;
const chunkSize = Math.ceil(json.length / CHUNKS);
const reply = {
  id: 'msg_bench',
  content: [{ type: 'tool_use', name: 'respond', input, id: 'toolu_bench' }],
  split: chunkSize,
  usage: { inputTokens: 1200, outputTokens: 600, cacheReadTokens: 1000 },
};

const server = await startLoopbackMessagesServer({ fallback: reply, record: false });
const client = new Anthropic({ baseURL: server.url, apiKey: 'bench-key', maxRetries: 0 });
const model = createAnthropicModel({ client, retry: { retries: 0 } });

const tools = [
  { name: 'search_flights', description: 'Search flights.', input_schema: { type: 'object', properties: { from: { type: 'string' } } } },
  { name: 'respond', description: 'Emit a structured response.', input_schema: { type: 'object' }, eager_input_streaming: true },
];
const req = {
  sessionId: 's1',
  turnId: 't1',
  actor: 'sally',
  model: 'claude-bench',
  system: 'You are Sally, a travel agent. Answer only through respond().',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Direct flights LGW to CFU on 15 Aug?' }] }],
  tools,
  toolChoice: 'any',
  maxTokens: 2048,
};
// The SDK variants send exactly the request the adapter builds.
const params = buildRequest(req, { model: req.model, maxTokens: req.maxTokens });
const { stream: _s, ...streamParams } = params;
const signal = new AbortController().signal;

let sink = 0;
const body = JSON.stringify(params);
const variants = {
  'http only (fetch + read body)': async () => {
    const res = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'bench-key' }, body });
    sink += (await res.text()).length;
  },
  'sdk messages.stream()': async () => {
    const s = client.messages.stream(streamParams, { signal });
    for await (const ev of s) sink += ev.type.length;
    const msg = await s.finalMessage();
    sink += msg.content.length;
  },
  'sdk messages.create(stream)': async () => {
    const s = await client.messages.create(params, { signal });
    for await (const ev of s) sink += ev.type.length;
  },
  'turnstate adapter': async () => {
    for await (const ev of model.stream(req, signal)) sink += ev.type.length;
  },
  'turnstate adapter + parts': async () => {
    let parser;
    for await (const ev of model.stream(req, signal)) {
      if (ev.type === 'block.start' && ev.block.type === 'tool_use') parser = createRespondStreamParser((d) => { sink += d.text.length; });
      else if (ev.type === 'input.delta') parser.push(ev.partialJson);
      else if (ev.type === 'block.stop') parser?.end();
    }
  },
};

/* ------------------------------------------------------------------ check, then measure */

{
  // Correctness before speed: the adapter and the parser reproduce the call.
  let last;
  let text = '';
  for await (const ev of model.stream(req, signal)) {
    last = ev;
    if (ev.type === 'block.stop' && JSON.stringify(ev.block.input) !== json) throw new Error('adapter: tool input differs');
  }
  if (last?.type !== 'message.stop') throw new Error('adapter: no message.stop');
  const p = createRespondStreamParser((d) => { if (d.index === 1) text += d.text; });
  for (let i = 0; i < json.length; i += chunkSize) p.push(json.slice(i, i + chunkSize));
  p.end();
  if (text !== input.parts[1].text) throw new Error('parser: part text differs');
}

const names = Object.keys(variants);
for (const n of names) for (let i = 0; i < WARMUP; i++) await variants[n]();

// Per (round, variant): CPU time of the whole process (client, adapter and the in-process server)
// and wall time, each divided by the calls of the batch. CPU time is what the ratio uses: the
// machine may be shared, and wall time then mostly measures the scheduler.
const cpu = Object.fromEntries(names.map((n) => [n, []]));
const wall = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < ROUNDS; r++) {
  // Rotate the order so no variant always runs first (or right after the GC-heavy one).
  const order = names.map((_, i) => names[(i + r) % names.length]);
  for (const n of order) {
    globalThis.gc?.();
    const fn = variants[n];
    const c0 = cpuMicros();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) await fn();
    const t1 = process.hrtime.bigint();
    cpu[n].push((cpuMicros() - c0) / CALLS);
    wall[n].push(Number(t1 - t0) / 1000 / CALLS);
  }
}
await server.close();

const median = (xs) => summarize(xs).median;
const ref = median(cpu['sdk messages.stream()']);
const floor = median(cpu['sdk messages.create(stream)']);
const rows = names.map((n) => {
  const med = median(cpu[n]);
  return {
    name: n,
    cpuUsPerCall: Number(med.toFixed(1)),
    wallUsPerCall: Number(median(wall[n]).toFixed(1)),
    vsSdkStream: Number((med / ref).toFixed(3)),
    cpuUsOverRawCreate: Number((med - floor).toFixed(1)),
  };
});
console.log(JSON.stringify({ suite: 'anthropic-adapter', node: process.version, chunks: CHUNKS, inputBytes: Buffer.byteLength(json), rounds: ROUNDS, callsPerRound: CALLS, rows }));
console.log('');
console.log(`Anthropic adapter, one streamed call (${Buffer.byteLength(json)} B respond() input in ${CHUNKS} input_json_delta chunks), loopback server in-process, ${ROUNDS} interleaved rounds x ${CALLS} calls, medians of per-round means; CPU time includes the in-process server.`);
console.log('');
console.log('| variant | CPU us/call | wall us/call | CPU vs sdk messages.stream() | CPU us over raw create |');
console.log('|---|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.name} | ${r.cpuUsPerCall} | ${r.wallUsPerCall} | ${r.vsSdkStream}x | ${r.cpuUsOverRawCreate} |`);
if (sink === 42) console.log('');
