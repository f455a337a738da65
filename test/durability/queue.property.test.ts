/**
 * Random interleavings of sends (chat, a turn held for approval, a streamed answer), approvals
 * and denials, and SIGKILL of the real process that runs the runtime (a new process opens the same
 * SQLite file and recovers), under the `queue` and `interrupt` double-texting policies, with
 * messages of 1-8 KB piling up behind held turns. After every step and at the end:
 * - durability:queue:no-loss — every accepted message (send() returned) is in the mailbox exactly
 *   once once the session is drained, and every turn that started settled;
 * - storage:linear — the data the store holds (used pages, read beside the writer) stays within a
 *   linear bound of the text accepted and the steps taken (the v3 store re-snapshotted the whole
 *   queue on every send: quadratic), and so does the file once closed.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/stores/sqlite.js';
import { Child } from './fixtures/child.js';

const dir = mkdtempSync(join(tmpdir(), 'turnstate-queue-prop-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const WORKER = fileURLToPath(new URL('./fixtures/queue-worker.ts', import.meta.url));

type Op =
  | { op: 'send'; kind: 'chat' | 'book' | 'stream'; size: number }
  | { op: 'approve'; approved: boolean }
  /** SIGKILL right after the ack of the previous step, or while this step's send is in flight. */
  | { op: 'kill'; midSend: boolean; size: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant('send' as const), kind: fc.constantFrom('chat' as const, 'chat' as const, 'book' as const, 'stream' as const), size: fc.integer({ min: 1_000, max: 8_000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('approve' as const), approved: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('kill' as const), midSend: fc.boolean(), size: fc.integer({ min: 1_000, max: 8_000 }) }) },
);

/** Bytes of the pages the store uses now (its WAL included: read as another connection sees it). */
function usedBytes(db: string): number {
  const raw = new Database(db, { readonly: true });
  try {
    const pages = raw.pragma('page_count', { simple: true }) as number;
    const free = raw.pragma('freelist_count', { simple: true }) as number;
    return (pages - free) * (raw.pragma('page_size', { simple: true }) as number);
  } finally {
    raw.close();
  }
}

/** The linear bound: a constant (tables, free pages), 4x the text accepted (turn.started input, mailbox, queue record, slack), 16 KB per step (its events). */
const bound = (text: number, steps: number) => 512 * 1024 + 4 * text + 16 * 1024 * steps;

let run = 0;

async function execute(policy: 'queue' | 'interrupt', ops: Op[]): Promise<void> {
  const n = ++run;
  const files = join(dir, `r${n}`);
  const db = join(files, 'turnstate.db');
  rmSync(files, { recursive: true, force: true });
  mkdirSync(files);
  const cfg = { db, sideLog: join(dir, `r${n}.log`), sessionId: `q${n}`, policy };
  const start = async () => {
    const c = new Child(cfg, WORKER, true);
    await c.until((l) => l.kind === 'ready' || l.kind === 'error');
    if (c.lines.some((l) => l.kind === 'error')) throw new Error(c.lines.map((l) => JSON.stringify(l)).join('\n') + c.stderr);
    return c;
  };
  let child = await start();
  let sent = 0;
  const command = (cmd: Record<string, unknown>) => {
    sent++;
    child.proc.stdin!.write(`${JSON.stringify(cmd)}\n`);
    return sent;
  };
  const ack = (k: number) => child.until((l) => (l.kind === 'ack' && l.n === k) || l.kind === 'error');
  const accepted: string[] = [];
  let text = 0;
  let steps = 0;
  try {
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i]!;
      steps++;
      if (o.op === 'kill') {
        if (o.midSend) command({ op: 'send', text: `chat r${n}-${i} ${'k'.repeat(o.size)}` });
        await child.kill();
        child = await start();
        sent = 0;
      } else {
        const body = o.op === 'send' ? `${o.kind} r${n}-${i} ${'x'.repeat(o.size)}` : '';
        const k = command(o.op === 'send' ? { op: 'send', text: body } : { op: 'approve', approved: o.approved });
        const line = await ack(k);
        if (line.kind === 'error') throw new Error(String(line.message));
        if (o.op === 'send') {
          accepted.push(body);
          text += body.length;
        }
      }
      // storage:linear — after every step.
      const used = usedBytes(db);
      expect(used, `after step ${i} (${JSON.stringify(o)}): ${used} B used for ${text} B of text`).toBeLessThanOrEqual(bound(text, steps));
    }
    command({ op: 'drain' });
    const drained = await child.until((l) => l.kind === 'drained' || l.kind === 'error', 60_000);
    expect(drained.kind, child.stderr).toBe('drained');
    await child.exited;
  } finally {
    child.proc.kill('SIGKILL');
  }
  const store = createSqliteStore({ path: db, readonly: true });
  try {
    const users = store.readMailbox(cfg.sessionId).flatMap((m) => (m.kind === 'user' ? [m.text] : []));
    // durability:queue:no-loss — each accepted message exactly once.
    for (const a of accepted) expect(users.filter((u) => u === a), `accepted message ${a.slice(0, 12)}`).toHaveLength(1);
    expect(new Set(users).size).toBe(users.length);
    const events = store.readEvents(cfg.sessionId, 0);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const started = events.filter((e) => e.type === 'turn.started').map((e) => e.turnId);
    const settled = events.filter((e) => e.type === 'turn.settled').map((e) => e.turnId);
    expect(new Set(settled)).toEqual(new Set(started));
    expect(store.readQueue(cfg.sessionId)).toEqual([]);
  } finally {
    store.close();
  }
  // storage:linear — the closed file too (WAL checkpointed into it).
  let fileBytes = 0;
  for (const f of readdirSync(files)) fileBytes += statSync(join(files, f)).size;
  expect(fileBytes).toBeLessThanOrEqual(bound(text, steps));
}

describe('durability: queued messages across SIGKILL (property)', () => {
  it('durability:queue:no-loss, storage:linear — random sends, approvals and SIGKILL restarts never lose an accepted message, and storage stays linear in the text accepted', async () => {
    // A held turn with 40 messages of 8 KB queued behind it, a kill, then the answer: quadratic
    // storage (every send re-snapshotting the queue) would hold ~6.5 MB against a bound of ~2.5 MB.
    const pileUp: Op[] = [{ op: 'send', kind: 'book', size: 1_000 }, ...Array.from({ length: 40 }, (): Op => ({ op: 'send', kind: 'chat', size: 8_000 })), { op: 'kill', midSend: true, size: 8_000 }, { op: 'approve', approved: true }];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('queue' as const, 'interrupt' as const), fc.array(opArb, { minLength: 8, maxLength: 30 }), async (policy, ops) => {
        // At most two kills per run: each restart is a new process (about a second).
        let kills = 0;
        await execute(policy, ops.filter((o) => o.op !== 'kill' || ++kills <= 2));
      }),
      { numRuns: 4, endOnFailure: true, examples: [['queue', pileUp]] },
    );
  }, 180_000);
});
