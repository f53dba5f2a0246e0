import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { type JobNotice, type JobRecord, notify, notifyChildProgress, notifyCompleted, notifyProgress } from '@app/queue';
import type { RedisClient } from '@app/redis';
import type { QueueJob } from './slot-worker';
import { WORKER_REDIS } from './worker-redis';

/**
 * Tells the API replicas that wait on a job (its watchers: libs/queue notice.protocol.ts) what it
 * does: its progress, and its end, with the job's record so that they answer without reading it
 * back. Every notice is one script on the worker's connection, sent right after the step it reports:
 * a completion's right behind BullMQ's own write of it (see `completing`), a failure's once BullMQ
 * has recorded it, so a replica that reads the job on the notice sees it finished.
 */
@Injectable()
export class JobNotifier {
  private readonly prefix: string;
  /** Completions whose final notice went behind BullMQ's write (see `completing`): whether it reached the job completed. */
  private readonly completions = new WeakMap<QueueJob, Promise<boolean>>();

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
   * Job `job`'s run returned `result`, and BullMQ has just sent its completion at `finishedOn` (call
   * this as completeAt's `behind`): its final notice goes right behind it, in the same write, in a
   * script that publishes only once the job has that `finishedOn`. why not on BullMQ's `completed`
   * event: that waits for the completion's reply, a round trip every waiting caller paid. Fire and
   * forget; `final` sends it the usual way if this one found the job not completed (a connection's
   * first completion may load BullMQ's script first, and come later).
   */
  completing(job: QueueJob, result: unknown, finishedOn: number): void {
    const record = { ...this.record(job, result), attemptsMade: job.attemptsMade + 1, finishedOn };
    const sent = notifyCompleted(this.redis, this.prefix, job.queueName, job.id!, record).then(
      (reached) => reached >= 0,
      () => false,
    );
    this.completions.set(job, sent);
  }

  /**
   * Job `job` ended: completed with `result` (what its run returned), or failed for good (BullMQ has
   * recorded it). Fire and forget. why `result` and not `job.returnvalue`: BullMQ keeps
   * `returnValue || undefined` on the job it completed, so 0, false, "" and null would vanish.
   */
  final(job: QueueJob, state: 'completed' | 'failed', result?: unknown): void {
    const early = this.completions.get(job);
    this.completions.delete(job);
    const send = () => this.send(job.queueName, { id: job.id!, final: state, record: { ...this.record(job, state === 'completed' ? result : null), finishedOn: job.finishedOn } }, true);
    if (early) void early.then((sent) => sent || send());
    else send();
  }

  /** Job `id` of `queue` changed in a way its watchers should read it again for (failed after stalling). */
  settled(queue: string, id: string): void {
    this.send(queue, { id, settled: true }, false);
  }

  /** The job's record as it ends with `returnvalue` (the final notice's; its finishedOn is set by the caller). */
  private record(job: QueueJob, returnvalue: unknown): JobRecord {
    return {
      name: job.name,
      progress: job.progress,
      returnvalue,
      failedReason: job.failedReason,
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      timestamp: job.timestamp,
      processedOn: job.processedOn,
    };
  }

  private send(queue: string, notice: JobNotice, final: boolean): void {
    void notify(this.redis, this.prefix, queue, notice, final).catch(() => undefined);
  }
}
