import { heal, HEAL_INTERVAL_MS, release, settle } from '@app/queue';
import type { RedisClient } from '@app/redis';
import type { QueueJob } from './slot-worker';

/**
 * The worker's side of fair share in one queue (see libs/queue's fair-share.ts): it settles each job
 * it ran that a caller's share counts, releases the next caller's job before it fetches with a free
 * slot, and heals every HEAL_INTERVAL_MS. Every call goes on BullMQ's own connection, unawaited: a
 * release sent before a fetch runs before it (Redis runs a connection's commands in order).
 *
 * why nothing per job without fair share: a job without a caller is never settled, and the release
 * before a fetch is only sent once a heal found callers in the queue (or a job had one).
 */
export class FairRelease {
  private inUse = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly queue: string,
    private readonly onError: (error: unknown) => void,
  ) {
    this.timer = setInterval(() => this.heal(), HEAL_INTERVAL_MS).unref();
    this.heal();
  }

  /** Before a fetch with a free slot: the next caller's job, if BullMQ holds none waiting. */
  beforeFetch(): void {
    if (this.inUse) release(this.redis, this.prefix, this.queue).catch(this.onError);
  }

  /** After BullMQ recorded the end of `job`'s attempt (completed, failed, retried, handed back). */
  ended(job: QueueJob): void {
    const { caller } = job.data;
    if (caller === undefined) return;
    this.inUse = true;
    settle(this.redis, this.prefix, this.queue, caller, [job.id!]).catch(this.onError);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private heal(): void {
    heal(this.redis, this.prefix, this.queue).then(({ callers }) => (this.inUse = callers > 0), this.onError);
  }
}
