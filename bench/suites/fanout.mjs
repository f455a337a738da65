// Fan-out benchmark: one session's events delivered live to many WebSocket and SSE subscribers
// over loopback, beside a raw `ws` / raw node:http broadcast of the same frames in the same run.
// The turnstate rows run the real runtime (scripted model) and the real streams transport; the
// subscribers live in a separate client process (this file, re-run with `clients`).
// Standalone; prints one JSON line {suite:'fanout', rows} and a markdown table.
// Uses the built package (dist/); from a source checkout: `node --import tsx bench/suites/fanout.mjs`.
// `--quick` runs 200 subscribers per transport instead of 1,000.
import { fork } from 'node:child_process';
import { createServer, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { WebSocket, WebSocketServer } from 'ws';
import { cpuMicros } from '../lib.mjs';
import { loadBuild } from '../reference.mjs';

const now = () => performance.timeOrigin + performance.now();
const SUBPROTOCOL = 'turnstate.v1';
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

if (process.argv[2] === 'clients') {
  await runClients(JSON.parse(process.argv[3]));
} else {
  await main();
}

/* ------------------------------------------------------------------ client process */

/**
 * Opens `n` subscribers, reports 'ready', then counts frames until every subscriber has seen
 * seq `last`. Frame parsing is the same cheap scan for both variants of a transport.
 */
async function runClients({ kind, url, n, last, sample, subscribe, token }) {
  const recvAt = new Map(); // seq -> receive times (sampled seqs only)
  let done = 0;
  let lastRecv = 0;
  let frames = 0;
  const noteSeq = (seq) => {
    frames++;
    if (seq % sample === 0) {
      const t = now();
      let list = recvAt.get(seq);
      if (list === undefined) recvAt.set(seq, (list = []));
      list.push(t);
    }
    if (seq === last) {
      done++;
      lastRecv = now();
      if (done === n) finish();
    }
  };
  const finish = () => {
    process.send({ type: 'done', frames, lastRecv, samples: [...recvAt.entries()] }, () => process.exit(0));
  };
  const opened = [];
  for (let i = 0; i < n; i++) {
    if (kind === 'ws') {
      opened.push(
        new Promise((resolve, reject) => {
          const ws = new WebSocket(url, [SUBPROTOCOL], { perMessageDeflate: false });
          ws.on('error', reject);
          ws.on('message', (data) => {
            const s = data.toString();
            const k = s.indexOf('"seq":');
            if (s.charCodeAt(9) === 115 /* {"type":"subscribed" */ && s.startsWith('{"type":"subscribed"')) return resolve();
            if (k === -1) return;
            noteSeq(parseInt(s.slice(k + 6, k + 20), 10));
          });
          ws.on('open', () => {
            if (subscribe) ws.send(JSON.stringify({ type: 'subscribe', sessionId: subscribe, resumeFrom: 0 }));
            else resolve();
          });
        }),
      );
    } else {
      opened.push(
        new Promise((resolve, reject) => {
          const req = request(url, { headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
            res.setEncoding('utf8');
            let carry = '';
            res.on('data', (chunk) => {
              const text = carry + chunk;
              let start = 0;
              for (;;) {
                const end = text.indexOf('\n\n', start);
                if (end === -1) break;
                if (text.startsWith('id: ', start)) noteSeq(parseInt(text.slice(start + 4, start + 20), 10));
                start = end + 2;
              }
              carry = text.slice(start);
            });
            resolve();
          });
          req.on('error', reject);
          req.end();
        }),
      );
    }
    if (i % 100 === 99) await Promise.all(opened.slice(-100));
  }
  await Promise.all(opened);
  process.send({ type: 'ready' });
}

/* ------------------------------------------------------------------ server side */

function startClients(opts) {
  const child = fork(fileURLToPath(import.meta.url), ['clients', JSON.stringify(opts)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise((resolve, reject) => {
    child.on('message', (m) => m.type === 'ready' && resolve());
    child.once('exit', (code) => reject(new Error(`client process exited early (${code})`)));
  });
  const done = new Promise((resolve, reject) => {
    child.on('message', (m) => m.type === 'done' && resolve(m));
    setTimeout(() => reject(new Error('fan-out run timed out')), 120_000).unref();
  });
  return { child, ready, done };
}

/** Waits until `at` (a `now()` time), sleeping when far, yielding when near. */
async function until(at) {
  for (;;) {
    const left = at - now();
    if (left <= 0) return;
    await new Promise((r) => (left > 2 ? setTimeout(r, left - 1) : setImmediate(r)));
  }
}

function scriptFor(repeat) {
  const text = 'Flights to Corfu on the 12th: TS205 at EUR 42, TS101 at EUR 94. '.repeat(repeat);
  return {
    rules: [
      {
        when: { on: 'user' },
        respond: {
          chunkSize: 2,
          blocks: [{ type: 'tool_use', name: 'respond', input: { parts: [{ text, metadata: { partType: 'response' } }], turnState: 'complete' } }],
        },
      },
    ],
  };
}

/** The scripted model with a pause before each stream event (a model that streams at a steady pace). */
function paced(inner, ms) {
  return {
    ...inner,
    async *stream(req, signal) {
      for await (const ev of inner.stream(req, signal)) {
        await new Promise((r) => setTimeout(r, ms));
        yield ev;
      }
    },
  };
}

async function main() {
  const quick = process.argv.includes('--quick');
  const N = Number(process.env.FANOUT_SUBSCRIBERS ?? (quick ? 200 : 1000));
  const SAMPLE = 5;
  // Latency is measured below saturation: one event per PACE_MS must fan out to every subscriber in time.
  const PACE_MS = quick ? 10 : 50;
  const deadline = Date.now() + 10 * 60_000;
  const { createRuntime } = await loadBuild('runtime.js');
  const { createScriptedModel } = await loadBuild('models/scripted.js');
  const { createStreamsTransport } = await loadBuild('transports/streams/index.js');

  /**
   * One fixture per mode: `burst` (a turn of about 1,000 events as fast as the runtime makes them:
   * throughput) and `paced` (about 75 events at one per PACE_MS: latency without queueing).
   */
  const fixture = async (mode) => {
    const scripted = createScriptedModel(scriptFor(mode === 'burst' ? 30 : 2));
    const runtime = createRuntime({ model: mode === 'burst' ? scripted : paced(scripted, PACE_MS) });
    runtime.registries.actors.register({ name: 'desk' });
    const probe = await runtime.createSession({ actor: 'desk' });
    await (await probe.send('find flights to Corfu')).settled;
    const recorded = await runtime.store.readEvents(probe.id, 0);
    const transport = createStreamsTransport({ runtime, maxBufferedBytes: 4 * 1024 * 1024 });
    const server = createServer(async (req, res) => {
      if (!(await transport.handle(req, res))) res.writeHead(404).end();
    });
    server.on('upgrade', (req, socket, head) => transport.upgrade(req, socket, head) || socket.destroy());
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    return {
      mode,
      runtime,
      transport,
      server,
      port: server.address().port,
      events: recorded.length,
      wsFrames: recorded.map((e) => Buffer.from(`{"type":"event","sessionId":${JSON.stringify(e.sessionId)},"seq":${e.seq},"event":${JSON.stringify(e)}}`)),
      sseFrames: recorded.map((e) => Buffer.from(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)),
      /** Publish offsets (ms from the first event) of the last turnstate run, replayed by the raw run. */
      offsets: undefined,
      async close() {
        await transport.close();
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
        await runtime.close();
      },
    };
  };

  const turnstateRun = async (fx, kind) => {
    const session = await fx.runtime.createSession({ actor: 'desk' });
    const publishAt = new Map();
    // Subscribed before any transport subscriber, so it sees each live event first: the publish time.
    const stamp = session.events(0).subscribe((e) => publishAt.set(e.seq, now()));
    const clients = startClients({
      kind,
      n: N,
      last: fx.events,
      sample: SAMPLE,
      url: kind === 'ws' ? `ws://127.0.0.1:${fx.port}/ws` : `http://127.0.0.1:${fx.port}/sessions/${session.id}/events`,
      subscribe: kind === 'ws' ? session.id : undefined,
    });
    await clients.ready;
    await (await session.send('find flights to Corfu')).settled;
    const result = await clients.done;
    stamp.unsubscribe();
    const t0 = publishAt.get(1);
    fx.offsets = [...publishAt.entries()].sort((a, b) => a[0] - b[0]).map(([, t]) => t - t0);
    return { publishAt, result };
  };

  /** Sends frame i to every subscriber: in a burst (yielding every 16 frames), or on the turnstate run's schedule. */
  const publishRaw = async (fx, frames, sendAll) => {
    const publishAt = new Map();
    const t0 = now();
    for (let i = 0; i < frames.length; i++) {
      if (fx.mode === 'paced') await until(t0 + fx.offsets[i]);
      publishAt.set(i + 1, now());
      sendAll(frames[i]);
      if (fx.mode === 'burst' && i % 16 === 15) await new Promise((r) => setImmediate(r));
    }
    return publishAt;
  };

  const rawWsRun = async (fx) => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false, handleProtocols: () => SUBPROTOCOL });
    await new Promise((r) => wss.once('listening', r));
    const clients = startClients({ kind: 'ws', n: N, last: fx.events, sample: SAMPLE, url: `ws://127.0.0.1:${wss.address().port}/ws` });
    await clients.ready;
    const publishAt = await publishRaw(fx, fx.wsFrames, (f) => {
      for (const c of wss.clients) c.send(f, { binary: false });
    });
    const result = await clients.done;
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
    return { publishAt, result };
  };

  const rawSseRun = async (fx) => {
    const responses = [];
    const server = createServer((req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
      responses.push(res);
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const clients = startClients({ kind: 'sse', n: N, last: fx.events, sample: SAMPLE, url: `http://127.0.0.1:${server.address().port}/events` });
    await clients.ready;
    while (responses.length < N) await new Promise((r) => setTimeout(r, 5));
    const publishAt = await publishRaw(fx, fx.sseFrames, (f) => {
      for (const res of responses) res.write(f);
    });
    const result = await clients.done;
    for (const res of responses) res.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    return { publishAt, result };
  };

  const throughput = ({ publishAt, result, cpuMs }) => {
    const seconds = (result.lastRecv - Math.min(...publishAt.values())) / 1000;
    return { deliveries: result.frames, eventsPerSec: Math.round(result.frames / seconds), serverCpuUsPerDelivery: Number(((cpuMs * 1000) / result.frames).toFixed(2)) };
  };
  /** Runs `fn`, adding the server process's CPU time (user + system) spent while it ran. */
  const withCpu = async (fn) => {
    const c0 = cpuMicros();
    const out = await fn();
    return { ...out, cpuMs: (cpuMicros() - c0) / 1000 };
  };
  const latency = ({ publishAt, result }) => {
    const lat = [];
    for (const [seq, times] of result.samples) {
      const p = publishAt.get(seq);
      if (p !== undefined) for (const t of times) lat.push(t - p);
    }
    lat.sort((a, b) => a - b);
    const q = (f) => Number((lat[Math.min(lat.length - 1, Math.floor(f * lat.length))] ?? NaN).toFixed(2));
    return { p50Ms: q(0.5), p99Ms: q(0.99) };
  };

  const burst = await fixture('burst');
  const steady = await fixture('paced');
  {
    // Warm-up (not reported).
    const warm = await burst.runtime.createSession({ actor: 'desk' });
    await (await warm.send('warm up')).settled;
  }
  const rows = [];
  for (const kind of (process.env.FANOUT_KINDS ?? 'ws,sse').split(',')) {
    const transportName = kind === 'ws' ? 'websocket' : 'sse';
    const rawName = kind === 'ws' ? 'raw ws' : 'raw node:http';
    const rawRun = kind === 'ws' ? rawWsRun : rawSseRun;
    let bestRaw;
    let bestTs;
    for (let round = 0; round < 2 && Date.now() < deadline; round++) {
      const r = throughput(await withCpu(() => rawRun(burst)));
      const t = throughput(await withCpu(() => turnstateRun(burst, kind)));
      if (!bestRaw || r.eventsPerSec > bestRaw.eventsPerSec) bestRaw = r;
      if (!bestTs || t.eventsPerSec > bestTs.eventsPerSec) bestTs = t;
    }
    // Latency: the turnstate run first (its publish schedule is what the raw run replays).
    const tsLat = latency(await turnstateRun(steady, kind));
    const rawLat = latency(await rawRun(steady));
    rows.push({ transport: transportName, variant: rawName, subscribers: N, events: burst.events, ...bestRaw, latencyEvents: steady.events, ...rawLat });
    rows.push({
      transport: transportName,
      variant: 'turnstate',
      subscribers: N,
      events: burst.events,
      ...bestTs,
      latencyEvents: steady.events,
      ...tsLat,
      ofRaw: Number((bestTs.eventsPerSec / bestRaw.eventsPerSec).toFixed(3)),
      addedP99Ms: Number((tsLat.p99Ms - rawLat.p99Ms).toFixed(2)),
      budgetOk: bestTs.eventsPerSec >= 0.7 * bestRaw.eventsPerSec,
    });
  }
  const slowDisconnects = burst.transport.stats().slowDisconnects + steady.transport.stats().slowDisconnects;
  await burst.close();
  await steady.close();

  console.log(JSON.stringify({ suite: 'fanout', subscribers: N, slowDisconnects, rows }));
  console.log('');
  console.log(`Throughput: one turn of ${burst.events} events as fast as the runtime makes them; latency: ${steady.events} events at one per ~${PACE_MS} ms (publish to client receipt, sampled every ${SAMPLE}th event).`);
  console.log('');
  console.log('| transport | variant | subscribers | deliveries | events/s | of raw | server CPU µs/delivery | p50 ms | p99 ms | added p99 ms |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const ofRaw = r.ofRaw === undefined ? '' : `${Math.round(r.ofRaw * 100)}%${r.budgetOk ? '' : ' (under the 70% budget)'}`;
    console.log(`| ${r.transport} | ${r.variant} | ${r.subscribers} | ${r.deliveries} | ${r.eventsPerSec.toLocaleString('en')} | ${ofRaw} | ${r.serverCpuUsPerDelivery} | ${r.p50Ms} | ${r.p99Ms} | ${r.addedP99Ms ?? ''} |`);
  }
  process.exit(0);
}
