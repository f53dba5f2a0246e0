import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { flagCancelled, queueKeys, stopChildren } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import { QUEUE_REDIS } from '../queues/queue.providers';
import { JobNotices } from './job-notices';
import { JobOwners } from './job-owners';
import { JobReads } from './job-reads';
import { JobStore } from './job-store';
import { isFinal, JobView, viewOfCancelled, viewOfJob, viewOfWithdrawn } from './job-view';

const QUEUED_STATES = new Set(['waiting', 'prioritized', 'delayed']);
/** How long DELETE waits for a running job to be aborted by its worker before answering 202. */
const CANCEL_CONFIRM_MS = 3000;

/** DELETE /v1/jobs/{id}: withdraws the caller's interest in a job, or cancels it. */
@Injectable()
export class JobCancels {
  private readonly keys: ReturnType<typeof queueKeys>;

  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    private readonly reads: JobReads,
    private readonly store: JobStore,
    private readonly owners: JobOwners,
    private readonly notices: JobNotices,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.keys = queueKeys(config.redisPrefix);
  }

  /**
   * Cancels job `id` for the caller of `scope`. With API keys, a job several callers submitted (single
   * flight) keeps running for the others: this caller's interest is withdrawn, and the run is
   * cancelled only once no owner is left. A queued job is removed at once. A running one is aborted
   * by whichever worker runs it, told through Redis pub/sub; the cancel flag in the job's hash
   * covers the worker that picks it up meanwhile.
   */
  async cancel(id: string, scope: string): Promise<JobView> {
    this.reads.assertRedisUp();
    const [{ record, state, queue }, owns] = await Promise.all([this.store.read(id), this.owners.owns(id, scope)]);
    if (!owns) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
    if (!record) {
      const view = await this.store.view(id);
      if (!view) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
      throw new ApiError('JOB_ALREADY_FINISHED', `Job "${id}" is already ${view.status}`);
    }
    const current = viewOfJob(record, state);
    if (isFinal(current)) throw new ApiError('JOB_ALREADY_FINISHED', `Job "${id}" is already ${current.status}`);
    if (this.owners.enabled && (await this.owners.withdraw(queue!.name, id, scope)) > 0) return viewOfWithdrawn(current);

    await flagCancelled(this.redis, [queue!.toKey(id)]);
    // A fan-out job waiting for its chunks: stopping them wakes it, and it ends as cancelled.
    const parent = state === 'waiting-children' ? await queue!.getJob(id) : undefined;
    if (parent) await stopChildren(parent, this.redis, this.config.redisPrefix);
    else if (QUEUED_STATES.has(state) && (await this.store.removeQueued(id, queue!))) {
      const cancelled = viewOfCancelled(current);
      await this.store.saveRemoved(cancelled);
      // Whoever waits on it (another replica's Prefer: wait, an event stream) reads the cancelled view.
      await this.notices.notifySettled(queue!.name, id);
      await this.owners.finished(queue!.name, id, this.config.jobRetentionSeconds);
      return cancelled;
    }
    // Running (or picked up between our read and the remove, which then refuses: it holds a lock).
    // why awaited together: if the publish fails, the wait still has a handler (and the reverse).
    const [confirmed] = await Promise.all([this.reads.waitUntilFinal(id, CANCEL_CONFIRM_MS, undefined, queue), this.redis.publish(this.keys.cancelChannel, id)]);
    return confirmed;
  }
}
