import { ending, heal, HEAL_INTERVAL_MS, release, settle } from '@app/queue';
import type { RedisClient } from '@app/redis';
import type { QueueJob } from './slot-worker';

/**
 * The worker's side of fair share in one queue (see libs/queue's fair-share.ts): when a job's run
 * ends, before BullMQ records its completion, it releases ahead so that the fetch BullMQ chains onto
 * the completion finds the next caller's job; it settles each job it ran that a caller's share
 * counts (a caller without a concurrency limit in that same call, one with a limit once BullMQ has
 * recorded the end); it releases before a fetch with a free slot; and it heals every
 * HEAL_INTERVAL_MS. Every call goes on BullMQ's own connection, unawaited: one sent before a
 * completion or a fetch runs before it (Redis runs a connection's commands in order).
 *
 * How far ahead: one job for each of this worker's slots about to fetch in the queue (a job ending,
 * or a fetch), so two slots whose jobs end together both find one, and BullMQ never holds more
 * waiting than this worker has slots: a caller's new job still starts within about one job's
 * duration per busy slot.
 *
 * why nothing per job without fair share: a job without a caller is never settled, and the release
 * before a fetch is only sent once a heal found callers in the queue (or a job had one).
 */
export class FairRelease {
  private inUse = false;
  private healing = false;
  private readonly timer: NodeJS.Timeout;
  /** Jobs whose run ended and whose completion is not yet recorded: whether each was settled then. */
  private readonly endings = new Map<QueueJob, Promise<boolean>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly queue: string,
    private readonly onError: (error: unknown) => void,
  ) {
    this.timer = setInterval(() => this.heal(), HEAL_INTERVAL_MS).unref();
    this.heal();
  }

  /** Before a fetch with a free slot: the next caller's job, if BullMQ holds too few waiting. */
  beforeFetch(): void {
    if (this.inUse) release(this.redis, this.prefix, this.queue, this.endings.size + 1).catch(this.onError);
  }

  /** `job`'s run ended (a result or an error); BullMQ records that next. */
  ending(job: QueueJob): void {
    const { caller } = job.data;
    if (caller === undefined || this.endings.has(job)) return;
    this.inUse = true;
    const settled = ending(this.redis, this.prefix, this.queue, caller, job.id!, this.endings.size + 1).catch((error: unknown) => {
      this.onError(error);
      return false;
    });
    this.endings.set(job, settled);
  }

  /** After BullMQ recorded the end of `job`'s attempt (completed, failed, retried, handed back). */
  ended(job: QueueJob): void {
    const { caller } = job.data;
    if (caller === undefined) return;
    this.inUse = true;
    const settled = this.endings.get(job) ?? Promise.resolve(false);
    this.endings.delete(job);
    void settled.then((done) => {
      if (!done) settle(this.redis, this.prefix, this.queue, caller, [job.id!]).catch(this.onError);
    });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * why never two at once (a tick while one runs is skipped): on a frozen or unreachable Redis the
   * calls would queue in ioredis, one every HEAL_INTERVAL_MS, and all run when it is back, from
   * every worker at once, on a primary just promoted. why not the API's Periodic (the same rule for
   * its sweeps): this heals once at start too, and a stop must not wait on a frozen Redis's reply.
   */
  private heal(): void {
    if (this.healing) return;
    this.healing = true;
    heal(this.redis, this.prefix, this.queue)
      .then(({ callers }) => (this.inUse = callers > 0), this.onError)
      .finally(() => (this.healing = false));
  }
}
