import { Job, Queue, QueueEvents } from 'bullmq';
import IORedis from 'ioredis';
import { RAW_QUEUE } from '../baselines/baseline.tokens';
import { benchJobs } from '../support/bench-jobs';

/** Timestamps of one raw BullMQ job as BullMQ recorded them (ms). */
export interface RawJobTimes {
  timestamp: number;
  processedOn: number;
  finishedOn: number;
}

/**
 * Raw BullMQ's client side, in the bench process: `queue.add` then `job.waitUntilFinished` on a
 * QueueEvents, as its documentation shows. The consumer is baselines/raw-bullmq.main.ts.
 */
export class RawBullmqClient {
  private constructor(
    private readonly queue: Queue,
    private readonly events: QueueEvents,
    private readonly connections: IORedis[],
  ) {}

  static async open(redisUrl: string, prefix: string, callers: number): Promise<RawBullmqClient> {
    const connections = [0, 1].map(() => new IORedis(redisUrl, { maxRetriesPerRequest: null }));
    const queue = new Queue(RAW_QUEUE, { connection: connections[0], prefix });
    const events = new QueueEvents(RAW_QUEUE, { connection: connections[1], prefix });
    // why: every waitUntilFinished listens on both; this many callers wait at once.
    queue.setMaxListeners(callers * 2 + 10);
    events.setMaxListeners(callers * 2 + 10);
    await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
    return new RawBullmqClient(queue, events, connections);
  }

  /** Adds a bench-sum job and waits for its result; resolves with the job (its id and timestamp). */
  async submitAndWait(input: { from: number; to: number }): Promise<Job> {
    const job = await this.queue.add(benchJobs.sum.name, { input }, { removeOnComplete: { age: 3600 }, removeOnFail: { age: 3600 } });
    await job.waitUntilFinished(this.events, 30_000);
    return job;
  }

  /** BullMQ's timestamps of a finished job (one more read: only outside timed loops). */
  async times(job: Job): Promise<RawJobTimes> {
    const done = (await Job.fromId(this.queue, job.id!))!;
    return { timestamp: job.timestamp, processedOn: done.processedOn!, finishedOn: done.finishedOn! };
  }

  async close(): Promise<void> {
    await this.events.close();
    await this.queue.close();
    // why: BullMQ leaves a connection it was given open; these are ours to close.
    await Promise.all(this.connections.map((c) => c.quit().catch(() => undefined)));
  }
}
