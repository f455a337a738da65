/**
 * Evaluates approval-policy CEL off the event loop: a small pool of child processes, each with a
 * heap cap (`--max-old-space-size`), each running one evaluation at a time under a time limit.
 * A process, not a worker thread: V8 can end the whole process on a heap exhausted by a large
 * allocation even in a worker with `resourceLimits`; a child's abort cannot take the server with it.
 *
 * Contract: `evaluate` never rejects. An evaluation over its time limit has its process killed
 * and settles `{ budget }`; a process that runs out of heap (or dies) while it evaluates settles
 * `{ budget }` too; other queued evaluations continue on a fresh process. A child acknowledges each
 * evaluation when it receives it: one sent to a child that was already gone (killed while idle, its
 * death not yet seen) never ran, and is sent again, once, to a process started after the loss. A
 * child lost while idle or evaluating is replaced at once. Children are unref'd: an idle pool never
 * keeps the server alive, and a child exits when the server goes away. The clock starts when the
 * evaluation reaches a child that has finished loading, so a cold start does not count against a policy;
 * a child that has not loaded within `startupLimitMs` is killed as one that failed to start. A slot
 * whose child failed to start stays down while another slot serves; when none can, what waits
 * settles `{ budget }` and the next evaluation tries to start the pool again.
 *
 * Waiting evaluations are served round-robin by their `key` (the tenant; cel-queue.ts), so one
 * key's backlog does not hold another's behind it, and one that waits past its `queueLimitMs`
 * (while some child is up) settles `{ budget }`. A child whose heap is past half its limit after an
 * evaluation says so in its reply (`retire`): it is sent nothing more and replaced at once.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync, unlinkSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CelShapeLimits } from './cel-environment.js';
import { RECEIPT_BYTES, RECEIPT_FD_ARG } from './cel-protocol.js';
import { FairQueue } from './cel-queue.js';
import type { CelMessage, CelRequest } from './cel-worker.js';

export type SandboxOutcome = { value: boolean | string } | { error: string } | { budget: string };

export interface SandboxJob {
  expression: string;
  shape: CelShapeLimits;
  args: unknown;
  ctx: unknown;
  timeoutMs: number;
  /**
   * Whose evaluation it is (the tenant; the session when there is none): waiting evaluations are
   * served round-robin by key, so one key's backlog does not hold another's behind it. Default ''.
   */
  key?: string;
  /** Milliseconds it may wait for a free evaluator before it settles `{ budget }`; unbounded when absent. */
  queueLimitMs?: number;
}

interface Pending extends SandboxJob {
  key: string;
  settle(outcome: SandboxOutcome): void;
  /** Settles it `{ budget }` when it has waited its `queueLimitMs`; cleared when it is sent. */
  waitTimer?: NodeJS.Timeout | undefined;
  /**
   * Set when it was sent to a child that was lost before acknowledging it: it may run only on a
   * process started after that (a spawn number above this one), and is not sent again after that.
   */
  resentAfter?: number;
}

interface Running extends Pending {
  id: number;
  timer: NodeJS.Timeout;
  /** The child said it received the request: from here a loss of the child is this evaluation's. */
  received: boolean;
}

interface Slot {
  worker: ChildProcess | undefined;
  /** Its child is loaded and not known to be gone: evaluations go to it. */
  ready: boolean;
  /** Its child said it was loaded (it may since have gone). */
  loaded: boolean;
  /** An evaluation was sent to its child. */
  used: boolean;
  /** Its children lost in a row before any evaluation was sent to them. */
  idleLosses: number;
  /** Kills a child that has not loaded in time; cleared when it says it is ready. */
  startTimer: NodeJS.Timeout | undefined;
  /** Its last child failed to start: not respawned while another slot can serve. */
  failedStart: boolean;
  /** Which spawn of the pool its child is (increasing). */
  spawn: number;
  /** The child's receipt file (unlinked; its descriptor here), or undefined when it acknowledges by message. */
  receipt: number | undefined;
  job: Running | undefined;
}

/** The worker's module: the built .js, or a bootstrap that loads the .ts through tsx when this module runs from source. */
function workerEntry(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './cel-worker.source.mjs' : './cel-worker.js', import.meta.url);
}

/**
 * What an evaluator inherits of the server's environment: where programs are and the time zone,
 * nothing else. A policy's input is model-chosen, so the process that reads it holds none of the
 * server's secrets (API keys, database URLs) and loads none of its NODE_OPTIONS hooks.
 */
export function evaluatorEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'TZ'] as const) if (env[k] !== undefined) out[k] = env[k];
  return out;
}

/** Scheduling priority of evaluator processes (POSIX nice: 19 is the lowest). */
const EVALUATOR_NICE = 15;

/** Children of a slot lost in a row while never sent an evaluation, after which it is restarted only on demand. */
const MAX_IDLE_LOSSES = 5;

/** How long a child may take to load before it counts as one that failed to start. */
const EVALUATOR_STARTUP_LIMIT_MS = 30_000;

export interface CelSandboxOptions {
  workers: number;
  heapMb: number;
  startupLimitMs?: number;
  /** The child's module; the built evaluator unless a test names another. */
  entry?: string;
  /** The child's environment; `evaluatorEnv(process.env)` (PATH and TZ) unless a test's fixture needs more. */
  env?: NodeJS.ProcessEnv;
}

export class CelSandbox {
  readonly #slots: Slot[];
  readonly #queue = new FairQueue<Pending>();
  readonly #heapMb: number;
  readonly #startupLimitMs: number;
  readonly #entry: string;
  readonly #env: NodeJS.ProcessEnv | undefined;
  #nextId = 0;
  #spawns = 0;
  readonly #killed = new WeakSet<ChildProcess>();

  constructor(opts: CelSandboxOptions) {
    this.#heapMb = opts.heapMb;
    this.#startupLimitMs = opts.startupLimitMs ?? EVALUATOR_STARTUP_LIMIT_MS;
    this.#entry = opts.entry ?? fileURLToPath(workerEntry());
    this.#env = opts.env;
    this.#slots = Array.from({ length: Math.max(1, opts.workers) }, () => ({
      worker: undefined,
      ready: false,
      loaded: false,
      used: false,
      idleLosses: 0,
      startTimer: undefined,
      failedStart: false,
      spawn: 0,
      receipt: undefined,
      job: undefined,
    }));
  }

  /** Starts the workers ahead of the first evaluation. */
  warm(): void {
    for (const slot of this.#slots) if (slot.worker === undefined) this.#spawn(slot);
    this.#hold();
  }

  evaluate(job: SandboxJob): Promise<SandboxOutcome> {
    return new Promise<SandboxOutcome>((settle) => {
      this.#enqueue({ ...job, key: job.key ?? '', settle }, false);
      this.#dispatch();
      this.#hold();
    });
  }

  /**
   * Queues `p` (`front`: sent again, it goes first) under its wait limit: past `queueLimitMs` it
   * settles `{ budget }`. While no evaluator is up the clock is restarted: a start-up never counts
   * against a policy.
   */
  #enqueue(p: Pending, front: boolean): void {
    this.#queue.push(p, front);
    const limit = p.queueLimitMs;
    if (limit === undefined || !Number.isFinite(limit)) return;
    const expire = (): void => {
      if (!this.#slots.some((s) => s.ready)) {
        p.waitTimer = setTimeout(expire, limit);
        return;
      }
      p.waitTimer = undefined;
      if (!this.#queue.remove(p)) return;
      p.settle({ budget: `policy evaluators busy: none was free within ${limit} ms` });
      this.#hold();
    };
    p.waitTimer = setTimeout(expire, limit);
  }

  /** Empties the queue, settling each evaluation `{ budget }` for `why`. */
  #failWaiting(why: string): void {
    for (const p of this.#queue.drain()) {
      clearTimeout(p.waitTimer);
      p.settle({ budget: why });
    }
  }

  /** Children keep the server alive only while an evaluation waits for them. */
  #hold(): void {
    const busy = this.#queue.size > 0 || this.#slots.some((s) => s.job !== undefined);
    for (const { worker } of this.#slots) {
      if (worker === undefined) continue;
      const channel = worker.channel as { ref?: () => void; unref?: () => void } | undefined;
      if (busy) {
        worker.ref();
        channel?.ref?.();
      } else {
        worker.unref();
        channel?.unref?.();
      }
    }
  }

  /** Terminates every worker; queued and running evaluations settle `{ budget }`. */
  async close(): Promise<void> {
    this.#failWaiting('the policy evaluator was closed');
    await Promise.all(
      this.#slots.map(async (slot) => {
        const w = slot.worker;
        this.#finish(slot, { budget: 'the policy evaluator was closed' });
        clearTimeout(slot.startTimer);
        slot.worker = undefined;
        this.#dropReceipt(slot);
        if (w !== undefined && w.exitCode === null && w.signalCode === null) {
          const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
          // Held while it dies: an idle worker is unref'd, and awaiting its exit must keep the process up.
          w.ref();
          w.kill('SIGKILL');
          await exited;
        }
      }),
    );
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (this.#queue.size === 0) return;
      if (slot.worker === undefined && !slot.failedStart) this.#spawn(slot);
      if (!slot.ready || slot.job !== undefined) continue;
      // An evaluation sent again waits for a process started after the one that lost it.
      const p = this.#queue.take((q) => q.resentAfter === undefined || slot.spawn > q.resentAfter);
      if (p === undefined) continue;
      clearTimeout(p.waitTimer);
      p.waitTimer = undefined;
      const id = ++this.#nextId;
      const timer = setTimeout(() => this.#kill(slot, `evaluation exceeded its ${p.timeoutMs} ms budget`), p.timeoutMs);
      slot.job = { ...p, id, timer, received: false };
      slot.used = true;
      slot.idleLosses = 0;
      const req: CelRequest = { id, expression: p.expression, shape: p.shape, args: p.args, ctx: p.ctx };
      try {
        slot.worker!.send(req);
      } catch (e) {
        this.#finish(slot, { error: `arguments cannot be passed to the evaluator: ${(e as Error).message}` });
      }
    }
  }

  #spawn(slot: Slot): void {
    const heapMb = this.#heapMb;
    const receipt = receiptFile();
    let worker: ChildProcess;
    try {
      worker = fork(this.#entry, receipt === undefined ? [] : [RECEIPT_FD_ARG, '4'], {
        execArgv: [`--max-old-space-size=${heapMb}`, `--max-semi-space-size=${Math.max(1, Math.floor(heapMb / 16))}`, '--stack-size=2048'],
        serialization: 'advanced',
        env: this.#env ?? evaluatorEnv(process.env),
        stdio: receipt === undefined ? ['ignore', 'ignore', 'ignore', 'ipc'] : ['ignore', 'ignore', 'ignore', 'ipc', receipt],
      });
    } catch (e) {
      if (receipt !== undefined) closeSync(receipt);
      throw e;
    }
    slot.receipt = receipt;
    // Evaluators yield the CPU to the server: a policy at its budget must not slow the event loop's turns.
    if (worker.pid !== undefined) {
      try {
        setPriority(worker.pid, EVALUATOR_NICE);
      } catch {
        // Not permitted on this platform: the evaluator runs at the server's priority.
      }
    }
    slot.worker = worker;
    slot.ready = false;
    slot.loaded = false;
    slot.used = false;
    slot.spawn = ++this.#spawns;
    slot.startTimer = setTimeout(() => this.#kill(slot, `it was not ready within ${this.#startupLimitMs} ms`), this.#startupLimitMs);
    slot.startTimer.unref();
    worker.on('message', (m: CelMessage) => {
      if (slot.worker !== worker) return;
      if (m === 'ready') {
        clearTimeout(slot.startTimer);
        slot.ready = true;
        slot.loaded = true;
        slot.failedStart = false;
      } else if (typeof m === 'number') {
        if (slot.job?.id === m) slot.job.received = true;
        return;
      } else {
        if (slot.job?.id === m.id) this.#finish(slot, 'error' in m ? { error: m.error } : { value: m.value });
        // Its heap is past half its limit (cel-worker.ts): it takes nothing more; a fresh process replaces it.
        if (m.retire === true) {
          this.#end(worker);
          this.#lose(slot, 'the policy evaluator was retired');
          return;
        }
      }
      this.#dispatch();
    });
    // A child's end shows as 'exit' (with how it ended), 'disconnect' (its channel closed, after every
    // message it sent was delivered) and, for a send to a closed channel, 'error', in any order.
    worker.on('error', (e: Error) => this.#gone(slot, worker, `the policy evaluator failed: ${e.message}`));
    worker.on('disconnect', () => this.#gone(slot, worker, undefined));
    worker.on('exit', () => this.#gone(slot, worker, undefined));
  }

  /**
   * The slot's child has ended or cannot be reached ('exit' says how it ended; 'disconnect' comes
   * once every message it sent has been delivered; 'error' is a failed send or spawn, in any order).
   * Settles once what happened to its evaluation is known. One it acknowledged was running: it is
   * the evaluation's (`{ budget }` naming how the child ended, which takes the 'exit'). One it did
   * not acknowledge never ran (known once the channel is drained, as the acknowledgement may still
   * be on its way, or the send failed): it is sent again, once, to a process started after this.
   */
  #gone(slot: Slot, worker: ChildProcess, failure: string | undefined): void {
    if (slot.worker !== worker) return;
    // No new evaluation goes to it while the rest of its end arrives.
    slot.ready = false;
    const job = slot.job;
    if (job !== undefined && !job.received) job.received = this.#receiptSays(slot, job.id);
    if (failure === undefined) {
      const exited = worker.exitCode !== null || worker.signalCode !== null;
      const known = job !== undefined && !job.received ? !worker.connected : exited;
      if (!known) {
        this.#end(worker);
        return;
      }
    }
    if (job !== undefined && !job.received && job.resentAfter === undefined) {
      slot.job = undefined;
      clearTimeout(job.timer);
      const { expression, shape, args, ctx, timeoutMs, key, queueLimitMs, settle } = job;
      const again: Pending = { expression, shape, args, ctx, timeoutMs, key, settle, resentAfter: this.#spawns };
      if (queueLimitMs !== undefined) again.queueLimitMs = queueLimitMs;
      this.#enqueue(again, true);
    }
    this.#end(worker);
    this.#lose(slot, failure ?? this.#ending(worker));
  }

  /** Whether the slot's child recorded in its receipt file that it received evaluation `id`. */
  #receiptSays(slot: Slot, id: number): boolean {
    if (slot.receipt === undefined) return false;
    try {
      return readSync(slot.receipt, receiptBuffer, 0, RECEIPT_BYTES, 0) === RECEIPT_BYTES && receiptView[0] === id;
    } catch {
      // Unreadable: it may have run, so it is not sent again.
      return true;
    }
  }

  #dropReceipt(slot: Slot): void {
    if (slot.receipt === undefined) return;
    try {
      closeSync(slot.receipt);
    } catch {
      // Already closed: nothing holds it.
    }
    slot.receipt = undefined;
  }

  /** Kills a child that has not exited (once: a kill that fails reports an 'error', which comes back here). */
  #end(worker: ChildProcess): void {
    if (worker.exitCode !== null || worker.signalCode !== null || this.#killed.has(worker)) return;
    this.#killed.add(worker);
    worker.kill('SIGKILL');
  }

  /** How a child ended, as an evaluation's `{ budget }` says it. */
  #ending(worker: ChildProcess): string {
    const code = worker.exitCode;
    const signal = worker.signalCode;
    if (code === null && signal === null) return 'the policy evaluator disconnected';
    // V8 aborts a process whose heap is exhausted (SIGABRT, or exit code 134 through a shell).
    if (signal === 'SIGABRT' || code === 134) return `evaluation exceeded its ${this.#heapMb} MB heap budget`;
    return `the policy evaluator exited (${signal ?? `code ${code}`})`;
  }

  /** The slot's worker is gone: its evaluation settles with the reason; a fresh worker takes its place. */
  #lose(slot: Slot, why: string): void {
    const started = slot.loaded;
    clearTimeout(slot.startTimer);
    slot.worker = undefined;
    slot.ready = false;
    this.#dropReceipt(slot);
    this.#finish(slot, { budget: why });
    if (!started) {
      // A worker that never started will not start next time either: do not respawn it in a loop.
      // What waits goes to a slot that is up or still starting; when there is none, it fails, and
      // the next evaluation tries the whole pool again.
      slot.failedStart = true;
      // An evaluation waiting for a process started after its loss may not get one: any will do.
      for (const q of this.#queue.values()) delete q.resentAfter;
      if (this.#slots.every((s) => s.worker === undefined)) {
        for (const s of this.#slots) s.failedStart = false;
        this.#failWaiting(`the policy evaluator could not start: ${why}`);
      }
    } else if (slot.used || ++slot.idleLosses < MAX_IDLE_LOSSES) {
      // A child that had started is replaced now, not when the next evaluation needs it (a cold
      // start); but not one after MAX_IDLE_LOSSES children in a row died before being sent
      // anything: those would be restarted in a loop. The next evaluation starts it.
      this.#spawn(slot);
    }
    this.#dispatch();
    this.#hold();
  }

  #kill(slot: Slot, why: string): void {
    const w = slot.worker;
    this.#lose(slot, why);
    w?.kill('SIGKILL');
  }

  #finish(slot: Slot, outcome: SandboxOutcome): void {
    const job = slot.job;
    if (job === undefined) return;
    slot.job = undefined;
    clearTimeout(job.timer);
    job.settle(outcome);
    this.#hold();
  }
}

const receiptView = new Float64Array(1);
const receiptBuffer = new Uint8Array(receiptView.buffer);

/**
 * A new receipt file for a child (see cel-worker.ts): created in the temporary directory and
 * unlinked at once, so only the two descriptors keep it and nothing is left behind, whatever ends
 * the process. Undefined when that cannot be done: the child then acknowledges by message.
 */
function receiptFile(): number | undefined {
  const path = join(tmpdir(), `turnstate-evaluator-${process.pid}-${randomBytes(6).toString('hex')}`);
  let fd: number | undefined;
  try {
    fd = openSync(path, 'wx+', 0o600);
    unlinkSync(path);
    return fd;
  } catch {
    if (fd !== undefined) {
      try {
        closeSync(fd);
        unlinkSync(path);
      } catch {
        // Left as it is.
      }
    }
    return undefined;
  }
}
