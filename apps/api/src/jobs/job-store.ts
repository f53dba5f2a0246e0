import { Inject, Injectable } from '@nestjs/common';
import { ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { forgetParked, queueKeys, SCHEDULED_JOB_ID } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { JobRecord, JobView, viewOfCached, viewOfJob } from './job-view';
import { JobQueues, type JobsQueue, QUEUE_REDIS } from '../queues/queue.providers';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Submitted jobs have UUIDs; the ticks of declared schedules have BullMQ's `repeat:…` ids. */
const isJobId = (id: string) => UUID.test(id) || SCHEDULED_JOB_ID.test(id);
/** BullMQ's error code for removing the next job of a job scheduler (it would end the schedule). */
const SCHEDULER_JOB = -8;

/**
 * The fields of BullMQ's job hash a view needs. why not Job.fromId: it reads and parses the whole
 * hash, input included, on every GET and every wait; for a multi-megabyte input that is most of the
 * cost. These are BullMQ 6's field names (see rawToJobJson in its Redis backend).
 */
const FIELDS = ['name', 'timestamp', 'progress', 'ats', 'atm', 'attemptsMade', 'processedOn', 'finishedOn', 'failedReason', 'returnvalue'] as const;

const num = (v: string | null) => (v ? Number(v) : undefined);
const json = (v: string | null) => (v ? (JSON.parse(v) as unknown) : undefined);

export interface StoredJob {
  record?: JobRecord;
  /** BullMQ's state: waiting, prioritized, delayed, active, completed, failed, … or unknown. */
  state: string;
  /** The queue that holds it. */
  queue?: JobsQueue;
}

/** Where a job's state lives: BullMQ's hash, the cancelled-view key, or the result cache. */
@Injectable()
export class JobStore {
  private readonly keys: ReturnType<typeof queueKeys>;

  constructor(
    private readonly queues: JobQueues,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    private readonly cache: ResultCache,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.keys = queueKeys(config.redisPrefix);
  }

  /**
   * The job as BullMQ holds it, if it still does. `knownState` (from a completion event) saves
   * asking BullMQ for the state; `queue`, when the caller knows it, saves looking for it.
   */
  async read(id: string, knownState?: string, queue?: JobsQueue): Promise<StoredJob> {
    if (!isJobId(id)) return { state: 'unknown' };
    queue ??= await this.queues.locate(id);
    if (!queue) return { state: 'unknown' };
    // why in this order, not in parallel: fields read before the state could predate it, e.g. a
    // "completed" state with the result not yet in the fields read. Read after, they are never older.
    const state = knownState ?? (await queue.getJobState(id));
    const values = await this.redis.hmget(queue.toKey(id), ...FIELDS);
    const [name, timestamp, progress, ats, atm, attemptsMade, processedOn, finishedOn, failedReason, returnvalue] = values;
    if (name === null || state === 'unknown') return { state: 'unknown' };
    const record: JobRecord = {
      id,
      name,
      timestamp: Number(timestamp),
      progress: json(progress) ?? 0,
      attemptsStarted: num(ats) ?? 0,
      attemptsMade: num(attemptsMade ?? atm) ?? 0,
      processedOn: num(processedOn),
      finishedOn: num(finishedOn),
      failedReason: failedReason ?? undefined,
      returnvalue: json(returnvalue),
    };
    return { record, state, queue };
  }

  /** The view of job `id` wherever it lives now, or undefined for an id nobody knows. */
  async view(id: string, knownState?: string, queue?: JobsQueue): Promise<JobView | undefined> {
    const { record, state } = await this.read(id, knownState, queue);
    if (record) return viewOfJob(record, state);
    if (!isJobId(id)) return undefined;
    const [cancelled, cached] = await Promise.all([
      this.redis.get(this.keys.cancelledView(id)),
      // why: the cache may be a separate Redis; when it is away, cached results are just not found.
      this.cache.getById(id).catch(() => undefined),
    ]);
    if (cancelled) return JSON.parse(cancelled) as JobView;
    return cached ? viewOfCached(cached) : undefined;
  }

  /**
   * Removes a job that no worker holds; false when one does (it was picked up meanwhile) or when it is
   * a schedule's next tick. BullMQ keeps that one (the schedule would stop): it is promoted instead,
   * so a worker takes it at once and fails it as cancelled at pickup (flagCancelled marked it), and the schedule
   * goes on with the tick after it.
   */
  async removeQueued(id: string, queue: JobsQueue): Promise<boolean> {
    // A job parked by fair share leaves its caller's share first, so none releases it meanwhile.
    await forgetParked(this.redis, this.config.redisPrefix, queue.name, [id]);
    try {
      return (await queue.remove(id)) === 1;
    } catch (error) {
      if ((error as { code?: number }).code !== SCHEDULER_JOB) throw error;
      await (await queue.getJob(id))?.promote().catch(() => undefined); // not delayed: it is due anyway
      return false;
    }
  }

  /** Keeps the view of a job that ended while queued (cancelled, expired), since BullMQ no longer has it. */
  async saveRemoved(view: JobView): Promise<void> {
    await this.redis.set(this.keys.cancelledView(view.id), JSON.stringify(view), 'EX', this.config.jobRetentionSeconds);
  }
}
