// Idle sessions under passivation: N sessions are created (each after one turn, or none), left idle
// past `passivateAfterMs`, then the heap is measured after GC. Run in its own process, pinned:
//   taskset -c 0 node --expose-gc bench/passivation.mjs <sqlite|memory> <sessions> <turns: 0|1>
// The last stdout line is {"suite": "passivation", "rows": [row]} for bench/run.mjs.
import { heapUsed as heapOnly, now, sleep } from './lib.mjs';
import { makeRuntime, close } from './peers/turnstate.mjs';
import { USER_TEXT } from './peers/script.mjs';

const [storeKind = 'sqlite', nArg = '100000', turnsArg = '1'] = process.argv.slice(2);
const N = Number(nArg);
const TURNS = Number(turnsArg);
const PASSIVATE_MS = 200;
const heap = () => { heapOnly(); const m = process.memoryUsage(); return { heapUsed: m.heapUsed, external: m.external, rss: m.rss }; };
const MB = (b) => +(b / 1048576).toFixed(1);

const { runtime } = await makeRuntime(storeKind, { passivateAfterMs: PASSIVATE_MS });
// warm the code paths so the baseline heap holds compiled code, not per-session data
{
  const s = await runtime.createSession({ actor: 'bench' });
  const out = await (await s.send(USER_TEXT)).settled;
  if (out.finalizedBy !== 'complete') throw new Error('warm-up turn did not complete: ' + JSON.stringify(out));
}
await sleep(PASSIVATE_MS * 3);
const base = heap();
const t0 = now();
// only the ids of the sessions reactivated afterwards are kept (an array of N ids would be measured too)
const sample = [0, Math.floor(N / 2), N - 1];
const ids = new Map();
for (let i = 0; i < N; i++) {
  const s = await runtime.createSession({ actor: 'bench' });
  if (sample.includes(i)) ids.set(i, s.id);
  for (let t = 0; t < TURNS; t++) {
    const out = await (await s.send(USER_TEXT)).settled;
    if (out.finalizedBy !== 'complete') throw new Error(`turn on session ${i} did not complete: ${JSON.stringify(out)}`);
  }
}
const createMs = now() - t0;
const loaded = heap();
// idle past the passivation deadline of the last session created
await sleep(PASSIVATE_MS * 5 + 500);
const idle = heap();

// a passivated session comes back on demand and takes a turn
const t1 = now();
for (const k of sample) {
  const s = await runtime.session(ids.get(k));
  if (!s) throw new Error(`session ${ids.get(k)} not found after passivation`);
  const out = await (await s.send(USER_TEXT)).settled;
  if (out.finalizedBy !== 'complete') throw new Error('reactivated turn did not complete: ' + JSON.stringify(out));
}
const reactivateUs = ((now() - t1) * 1000) / sample.length;
const listed = (await runtime.listSessions()).length;
await close();

const row = {
  variant: `turnstate:${storeKind}`,
  sessions: N,
  turnsPerSession: TURNS,
  passivateAfterMs: PASSIVATE_MS,
  idleHeapDeltaMB: MB(idle.heapUsed + idle.external - base.heapUsed - base.external),
  idleBytesPerSession: Math.round((idle.heapUsed + idle.external - base.heapUsed - base.external) / N),
  heapUsedMB: { base: MB(base.heapUsed), afterCreate: MB(loaded.heapUsed), idle: MB(idle.heapUsed) },
  externalMB: { base: MB(base.external), idle: MB(idle.external) },
  rssMB: MB(idle.rss),
  storedSessions: listed,
  createAndTurnMs: Math.round(createMs),
  reactivateAndTurnUs: Math.round(reactivateUs),
};
console.log(`passivation ${storeKind}: ${N} sessions x ${TURNS} turn(s), idle heap +${row.idleHeapDeltaMB} MB (${row.idleBytesPerSession} B/session), rss ${row.rssMB} MB`);
console.log(JSON.stringify({ suite: 'passivation', rows: [row] }));
process.exit(0);
