import { Job, Processor, Worker, WorkerOptions } from 'bullmq';
import type { JobData } from '@app/queue';
import type { FairRelease } from './fair-release';
import { Slots } from './slots';

export type QueueJob = Job<JobData, unknown, string>;

/** When each job's run ended, as its processor recorded it, and what follows the completion; read once, by BullMQ's completion of it. */
const runEnds = new WeakMap<QueueJob, { ms: number; behind?: () => void }>();

/**
 * Has BullMQ record `job`'s completion at `ms`, the end of its run: the cache entry written with the
 * result carries the same time, so a cached answer shows the `finishedAt` that GET of the job shows.
 * `behind` is called right after BullMQ sends that completion (process.nextTick from where it builds
 * its arguments: BullMQ sends it within the promise jobs that follow), so what it sends on the
 * completion's connection goes behind it, in the same write (see coalesceWrites;
 * test/bullmq-internals.e2e-spec.ts).
 */
export function completeAt(job: QueueJob, ms: number, behind?: () => void): void {
  runEnds.set(job, { ms, behind });
}

/** The part of BullMQ's Redis backend a completion's time goes through (bullmq 6, see SlotWorker). */
interface CompletionArgs {
  moveToCompletedArgs(job: QueueJob, ...rest: unknown[]): unknown[];
  moveToFinishedKeys: unknown[];
}

/**
 * A BullMQ Worker for one queue that takes a job only while it holds one of the pool's slots, which
 * every queue of this process shares: however many queues a worker consumes, it holds at most as
 * many jobs as it has threads, and a job it cannot run yet stays in Redis for other replicas.
 *
 * why here: BullMQ fetches a job in `moveToActive`, after waiting for one to arrive; taking the slot
 * just before that call means an idle queue never holds a slot while it waits. A slot belongs to the
 * fetch token and stays with it while BullMQ chains the next job onto a finished one (same token).
 *
 * BullMQ's main loop awaits each fetch in turn and only then starts the jobs it fetched; two rules
 * keep a shared slot from deadlocking it (test/slot-worker.e2e-spec.ts) and a job from waiting on
 * another's fetch:
 * - no fetch while this Worker holds a job its loop has not started: it gives up at once (no job,
 *   no Redis call), so the loop starts that job and fetches again after. why not a fetch while a
 *   slot is free: with a slot free and the queue empty, BullMQ made the job it had just fetched wait
 *   for a second fetch's empty answer, a Redis round trip before every lone job started;
 * - a job chained onto a finished one runs here, in the same `processJob`, not through the main
 *   loop, which may by then be waiting for the very slot the chained job holds.
 */
export class SlotWorker extends Worker<JobData, unknown, string> {
  /** Tokens holding a slot: a job fetched or running under each. */
  private readonly holding = new Set<string>();
  /** Of those, the ones whose job BullMQ's main loop has not started yet. */
  private readonly fetched = new Set<string>();

  constructor(
    queue: string,
    processor: Processor<JobData, unknown, string>,
    options: WorkerOptions,
    private readonly slots: Slots,
    /**
     * Called for a job BullMQ fails at pickup without running the processor: one flagged with a
     * deferred failure (the API's cancel flag, see flagCancelled in libs/queue).
     */
    private readonly failedAtPickup: (job: QueueJob) => void = () => undefined,
    /** Fair share between callers in this queue (see fair-release.ts), made once the Worker exists. */
    fairRelease?: (worker: SlotWorker) => FairRelease,
  ) {
    super(queue, processor, { ...options, concurrency: slots.size });
    // why: BullMQ stamps a completion with the time it builds moveToFinished's arguments, after the
    // processor cached the result with its run's end (see completeAt). Assumed of bullmq 6, as its
    // own Job.moveToCompleted reads the time back: moveToCompletedArgs(job, …) returns those
    // arguments, the time at moveToFinishedKeys.length + 1. Checked here, so an upgrade fails at start-up.
    const backend = (this as unknown as { backend: Partial<CompletionArgs> }).backend;
    const build = backend.moveToCompletedArgs;
    const keys = backend.moveToFinishedKeys;
    if (typeof build !== 'function' || !Array.isArray(keys)) {
      throw new Error('bullmq: the worker backend has no moveToCompletedArgs or moveToFinishedKeys, through which slot-worker.ts dates completions');
    }
    backend.moveToCompletedArgs = (job, ...rest) => {
      const args = build.call(backend, job, ...rest);
      const ended = runEnds.get(job);
      if (ended !== undefined && typeof args[keys.length + 1] === 'number') args[keys.length + 1] = ended.ms;
      if (ended?.behind) process.nextTick(ended.behind);
      runEnds.delete(job);
      return args;
    };
    this.fair = fairRelease?.(this);
  }

  private readonly fair: FairRelease | undefined;

  override async close(force?: boolean): Promise<void> {
    this.fair?.stop();
    return super.close(force);
  }

  protected override async moveToActive(token: string, name?: string): Promise<QueueJob> {
    const inherited = this.holding.has(token);
    if (!inherited) {
      if (this.fetched.size > 0) return undefined as unknown as QueueJob;
      await this.slots.acquire();
      this.holding.add(token);
    }
    let job: QueueJob | undefined;
    try {
      // why check again: the wait for a slot may outlast the start of a shutdown.
      if (!this.closing) {
        this.fair?.beforeFetch();
        job = await super.moveToActive(token, name);
      }
    } finally {
      if (!job && !inherited) this.giveBack(token);
    }
    if (job && !inherited) this.fetched.add(token);
    return job!;
  }

  // why here: BullMQ records the run's end (and chains its next fetch) right after this returns.
  protected override async callProcessJob(job: QueueJob, token: string, signal?: AbortSignal): Promise<unknown> {
    try {
      return await super.callProcessJob(job, token, signal);
    } finally {
      this.fair?.ending(job);
    }
  }

  override async processJob(job: QueueJob, token: string, fetchNext: () => boolean = () => true): Promise<void | QueueJob> {
    this.fetched.delete(token);
    try {
      // why: while another queue waits for a slot, the slot goes back rather than to this queue's next job.
      const another = () => fetchNext() && this.slots.waiting === 0;
      let next: void | QueueJob = job;
      while (next) {
        if (next.deferredFailure) this.failedAtPickup(next);
        const ran: QueueJob = next;
        try {
          next = await super.processJob(ran, token, another);
        } finally {
          this.fair?.ended(ran);
        }
      }
    } finally {
      this.giveBack(token);
    }
  }

  private giveBack(token: string): void {
    if (this.holding.delete(token)) this.slots.release();
  }
}
