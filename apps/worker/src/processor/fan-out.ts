import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Queue, WaitingChildrenError } from 'bullmq';
import { CONFIG, type Config } from '@app/config';
import { CodedJobError, JobDefinition, JobFailureCode } from '@app/jobs';
import { childJobId, JobData, jobOptions, queuePrefix, stopChildren } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { type Tracing, TRACING } from '@app/tracing';
import { JobPool, RunOptions } from '../pool/job-pool';
import type { PlannedChild } from '../pool/thread-protocol';
import type { QueueJob } from './slot-worker';
import { WORKER_REDIS } from './worker-redis';

/**
 * Runs fan-out jobs (defineFanOut) as BullMQ flows: the first pickup splits the input on a pool
 * thread and adds one child job per chunk to the same queue, where every worker takes them; the job
 * then waits in `waiting-children` holding no thread; once the children are done it is picked up
 * again and merges their results on a pool thread. A child that fails for good wakes it at once
 * (continueParentOnFailure): it cancels the other children and fails with JOB_CHILD_FAILED.
 */
@Injectable()
export class FanOut implements OnApplicationShutdown {
  private readonly queues = new Map<string, Queue<JobData, unknown, string>>();

  constructor(
    private readonly pool: JobPool,
    @Inject(WORKER_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(TRACING) private readonly tracing: Tracing | null,
  ) {}

  async run(job: QueueJob, token: string, def: JobDefinition, version: number, options: RunOptions): Promise<{ value: unknown; key: string }> {
    const child = def.fanOut!.child;
    if (job.data.chunks === undefined) {
      const planned = (await this.pool.run(def.name, version, job.data.inputJson, { ...options, step: 'split' })).value as PlannedChild[];
      // why ids derived from the parent's: a crash between this add and the update below splits
      // again on retry, and adding the same ids again adds nothing.
      await this.queue(child.queue).addBulk(
        planned.map((chunk, index) => ({
          name: child.name,
          data: {
            inputJson: chunk.inputJson,
            version: child.version,
            key: chunk.key,
            ...(job.data.scope === undefined ? {} : { scope: job.data.scope }),
            requestId: job.data.requestId,
            parent: { id: job.id!, index, of: planned.length },
          },
          opts: {
            jobId: childJobId(job.id!, index),
            parent: { id: job.id!, queue: job.queueQualifiedName },
            continueParentOnFailure: true,
            ...jobOptions(child, this.config.jobRetentionSeconds),
          },
        })),
      );
      await job.updateData({ ...job.data, chunks: planned.length });
      // why here: a cancel that came while the split ran found the parent's thread, not its chunks.
      if (options.signal.aborted) throw options.signal.reason;
    }
    const chunks = job.data.chunks!;
    const failures = await job.getFailedChildrenValues();
    const [failedKey, reason] = Object.entries(failures)[0] ?? [];
    if (failedKey) {
      await this.abandon(job);
      const index = this.childIds(job).findIndex((id) => failedKey.endsWith(`:${id}`));
      throw new CodedJobError(JobFailureCode.JOB_CHILD_FAILED, `chunk ${index + 1} of ${chunks} (${child.name} job ${failedKey.split(':').pop()}) failed: ${reason}`);
    }
    if (await job.moveToWaitingChildren(token)) throw new WaitingChildrenError();

    const values = await job.getChildrenValues();
    const byId = new Map(Object.entries(values).map(([key, value]) => [key.slice(key.lastIndexOf(':') + 1), value]));
    const parts = this.childIds(job).map((id, i) => {
      if (!byId.has(id)) throw new CodedJobError(JobFailureCode.JOB_CHILD_FAILED, `chunk ${i + 1} of ${chunks} has no result (was it removed?)`);
      return byId.get(id);
    });
    return this.pool.run(def.name, version, job.data.inputJson, { ...options, step: 'merge', partsJson: JSON.stringify(parts) });
  }

  /** Stops what is left of the children of fan-out job `job` (see stopChildren). */
  abandon(job: QueueJob): Promise<void> {
    return stopChildren(job, this.redis, this.config.redisPrefix);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((queue) => queue.close()));
  }

  private childIds(job: QueueJob): string[] {
    return Array.from({ length: job.data.chunks! }, (_, i) => childJobId(job.id!, i));
  }

  private queue(name: string): Queue<JobData, unknown, string> {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue<JobData, unknown, string>(name, {
        connection: this.redis,
        prefix: queuePrefix(this.config.redisPrefix, name),
        telemetry: this.tracing?.telemetry,
      });
      this.queues.set(name, queue.on('error', () => undefined));
    }
    return queue;
  }
}
