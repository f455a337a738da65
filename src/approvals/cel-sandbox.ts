/**
 * Evaluates approval-policy CEL off the event loop: a small pool of child processes, each with a
 * heap cap (`--max-old-space-size`), each running one evaluation at a time under a time limit.
 * A process, not a worker thread: V8 can end the whole process on a heap exhausted by a large
 * allocation even in a worker with `resourceLimits`; a child's abort cannot take the server with it.
 *
 * Contract: `evaluate` never rejects. An evaluation over its time limit has its process killed
 * and settles `{ budget }`; a process that runs out of heap (or dies) settles `{ budget }` too;
 * other queued evaluations continue on a fresh process. Children are unref'd: an idle pool never
 * keeps the server alive, and a child exits when the server goes away. The clock starts when the
 * evaluation reaches a child that has finished loading, so a cold start does not count against a policy;
 * a child that has not loaded within `startupLimitMs` is killed as one that failed to start. A slot
 * whose child failed to start stays down while another slot serves; when none can, what waits
 * settles `{ budget }` and the next evaluation tries to start the pool again.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { CelShapeLimits } from './cel-environment.js';
import type { CelReply, CelRequest } from './cel-worker.js';

export type SandboxOutcome = { value: boolean | string } | { error: string } | { budget: string };

export interface SandboxJob {
  expression: string;
  shape: CelShapeLimits;
  args: unknown;
  ctx: unknown;
  timeoutMs: number;
}

interface Pending extends SandboxJob {
  settle(outcome: SandboxOutcome): void;
}

interface Slot {
  worker: ChildProcess | undefined;
  ready: boolean;
  /** Kills a child that has not loaded in time; cleared when it says it is ready. */
  startTimer: NodeJS.Timeout | undefined;
  /** Its last child failed to start: not respawned while another slot can serve. */
  failedStart: boolean;
  job: (Pending & { id: number; timer: NodeJS.Timeout }) | undefined;
}

/** The worker's module: the built .js, or a bootstrap that loads the .ts through tsx when this module runs from source. */
function workerEntry(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './cel-worker.source.mjs' : './cel-worker.js', import.meta.url);
}

/** Scheduling priority of evaluator processes (POSIX nice: 19 is the lowest). */
const EVALUATOR_NICE = 15;

/** How long a child may take to load before it counts as one that failed to start. */
const EVALUATOR_STARTUP_LIMIT_MS = 30_000;

export interface CelSandboxOptions {
  workers: number;
  heapMb: number;
  startupLimitMs?: number;
  /** The child's module; the built evaluator unless a test names another. */
  entry?: string;
}

export class CelSandbox {
  readonly #slots: Slot[];
  readonly #queue: Pending[] = [];
  readonly #heapMb: number;
  readonly #startupLimitMs: number;
  readonly #entry: string;
  #nextId = 0;

  constructor(opts: CelSandboxOptions) {
    this.#heapMb = opts.heapMb;
    this.#startupLimitMs = opts.startupLimitMs ?? EVALUATOR_STARTUP_LIMIT_MS;
    this.#entry = opts.entry ?? fileURLToPath(workerEntry());
    this.#slots = Array.from({ length: Math.max(1, opts.workers) }, () => ({
      worker: undefined,
      ready: false,
      startTimer: undefined,
      failedStart: false,
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
      this.#queue.push({ ...job, settle });
      this.#dispatch();
      this.#hold();
    });
  }

  /** Children keep the server alive only while an evaluation waits for them. */
  #hold(): void {
    const busy = this.#queue.length > 0 || this.#slots.some((s) => s.job !== undefined);
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
    for (const p of this.#queue.splice(0)) p.settle({ budget: 'the policy evaluator was closed' });
    await Promise.all(
      this.#slots.map(async (slot) => {
        const w = slot.worker;
        this.#finish(slot, { budget: 'the policy evaluator was closed' });
        clearTimeout(slot.startTimer);
        slot.worker = undefined;
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
      if (this.#queue.length === 0) return;
      if (slot.worker === undefined && !slot.failedStart) this.#spawn(slot);
      if (!slot.ready || slot.job !== undefined) continue;
      const p = this.#queue.shift()!;
      const id = ++this.#nextId;
      const timer = setTimeout(() => this.#kill(slot, `evaluation exceeded its ${p.timeoutMs} ms budget`), p.timeoutMs);
      slot.job = { ...p, id, timer };
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
    const worker = fork(this.#entry, [], {
      execArgv: [`--max-old-space-size=${heapMb}`, `--max-semi-space-size=${Math.max(1, Math.floor(heapMb / 16))}`, '--stack-size=2048'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
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
    slot.startTimer = setTimeout(() => this.#kill(slot, `it was not ready within ${this.#startupLimitMs} ms`), this.#startupLimitMs);
    slot.startTimer.unref();
    worker.on('message', (m: CelReply | 'ready') => {
      if (slot.worker !== worker) return;
      if (m === 'ready') {
        clearTimeout(slot.startTimer);
        slot.ready = true;
        slot.failedStart = false;
      } else if (slot.job?.id === m.id) {
        this.#finish(slot, 'error' in m ? { error: m.error } : { value: m.value });
      }
      this.#dispatch();
    });
    worker.on('error', (e: Error) => {
      if (slot.worker === worker) this.#lose(slot, `the policy evaluator failed: ${e.message}`);
    });
    worker.on('exit', (code, signal) => {
      if (slot.worker !== worker) return;
      // V8 aborts a process whose heap is exhausted (SIGABRT, or exit code 134 through a shell).
      const oom = signal === 'SIGABRT' || code === 134;
      this.#lose(slot, oom ? `evaluation exceeded its ${heapMb} MB heap budget` : `the policy evaluator exited (${signal ?? `code ${code}`})`);
    });
  }

  /** The slot's worker is gone: its evaluation settles with the reason; the rest go to a fresh worker. */
  #lose(slot: Slot, why: string): void {
    const started = slot.ready;
    clearTimeout(slot.startTimer);
    slot.worker = undefined;
    slot.ready = false;
    this.#finish(slot, { budget: why });
    if (!started) {
      // A worker that never started will not start next time either: do not respawn it in a loop.
      // What waits goes to a slot that is up or still starting; when there is none, it fails, and
      // the next evaluation tries the whole pool again.
      slot.failedStart = true;
      if (this.#slots.every((s) => s.worker === undefined)) {
        for (const s of this.#slots) s.failedStart = false;
        for (const p of this.#queue.splice(0)) p.settle({ budget: `the policy evaluator could not start: ${why}` });
      }
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
