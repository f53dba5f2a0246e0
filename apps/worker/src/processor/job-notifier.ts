import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { type JobNotice, notify, notifyChildProgress, notifyProgress } from '@app/queue';
import type { RedisClient } from '@app/redis';
import type { QueueJob } from './slot-worker';
import { WORKER_REDIS } from './worker-redis';

/**
 * Tells the API replicas that wait on a job (its watchers: libs/queue notice.protocol.ts) what it
 * does: its progress, and its end, with the job's record so that they answer without reading it
 * back. Every notice is one script on the worker's connection, sent right after the step it reports
 * (a finish is sent once BullMQ has recorded it, so a replica that reads the job on the notice sees
 * it finished).
 */
@Injectable()
export class JobNotifier {
  private readonly prefix: string;

  constructor(
    @Inject(WORKER_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.prefix = config.redisPrefix;
  }

  /** Job `job`'s progress is now `percent`. */
  progress(job: QueueJob, percent: number): Promise<unknown> {
    return notifyProgress(this.redis, this.prefix, job.queueName, job.id!, percent);
  }

  /**
   * A chunk of fan-out job `job.data.parent` is at `percent`: its parent (in the same queue) follows
   * the chunks' average.
   */
  childProgress(job: QueueJob, percent: number): Promise<unknown> {
    const { id, index, of } = job.data.parent!;
    return notifyChildProgress(this.redis, this.prefix, job.queueName, { parentId: id, index, of, ttlSeconds: this.config.jobRetentionSeconds }, percent);
  }

  /**
   * Job `job` ended: completed with `result` (what its run returned), or failed for good (BullMQ has
   * recorded it). Fire and forget. why `result` and not `job.returnvalue`: BullMQ keeps
   * `returnValue || undefined` on the job it completed, so 0, false, "" and null would vanish.
   */
  final(job: QueueJob, state: 'completed' | 'failed', result?: unknown): void {
    const record = {
      name: job.name,
      progress: job.progress,
      returnvalue: state === 'completed' ? result : null,
      failedReason: job.failedReason,
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      timestamp: job.timestamp,
      processedOn: job.processedOn,
      finishedOn: job.finishedOn,
    };
    this.send(job.queueName, { id: job.id!, final: state, record }, true);
  }

  /** Job `id` of `queue` changed in a way its watchers should read it again for (failed after stalling). */
  settled(queue: string, id: string): void {
    this.send(queue, { id, settled: true }, false);
  }

  private send(queue: string, notice: JobNotice, final: boolean): void {
    void notify(this.redis, this.prefix, queue, notice, final).catch(() => undefined);
  }
}
