import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { canonicalJson, contentKey, JobDefinition, JobRegistry } from '@app/jobs';
import { JobData, queueKeys, stopChildren } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError, FieldError } from '../http/api-error';
import { ServerTiming } from '../http/server-timing';
import { Backlog } from './backlog';
import { JobEvents } from './job-events';
import { JobStore } from './job-store';
import { isFinal, JobView, viewOfCached, viewOfCancelled, viewOfJob } from './job-view';
import { JobQueues, type JobsQueue, QUEUE_REDIS } from './queue.providers';
import { ReplicaAck } from './replica-ack';

const QUEUED_STATES = new Set(['waiting', 'prioritized', 'delayed']);
/** How long DELETE waits for a running job to be aborted by its worker before answering 202. */
const CANCEL_CONFIRM_MS = 3000;

export interface SubmitOptions {
  waitSeconds: number;
  requestId?: string;
  timing?: ServerTiming;
}

/** The job lifecycle as the HTTP API sees it: submit, read, wait, cancel. */
@Injectable()
export class JobsService {
  private readonly keys: ReturnType<typeof queueKeys>;

  constructor(
    private readonly registry: JobRegistry,
    private readonly queues: JobQueues,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    private readonly store: JobStore,
    private readonly cache: ResultCache,
    private readonly backlog: Backlog,
    private readonly events: JobEvents,
    private readonly replicas: ReplicaAck,
    private readonly lifecycle: Lifecycle,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.keys = queueKeys(config.redisPrefix);
  }

  /**
   * Validates `body` as the input of `type`, answers from the cache when it can, and otherwise
   * enqueues the job, joining an identical job already queued or running (single flight).
   */
  async submit(type: string, body: unknown, { waitSeconds, requestId, timing }: SubmitOptions): Promise<JobView> {
    const def = this.registry.get(type);
    if (!def) throw new ApiError('UNKNOWN_JOB_TYPE', `No job type named "${type}"; GET /v1/job-types lists them`);
    if (this.lifecycle.shuttingDown) throw new ApiError('SHUTTING_DOWN', 'This replica is shutting down', { retryAfterSeconds: 1 });
    const inputJson = canonicalJson(this.validate(def, body));
    const key = contentKey(def, inputJson);
    timing?.mark('validate');
    this.assertRedisUp();

    // why: the cache may be a separate Redis; when it is away, the job simply runs again.
    const cached = def.cacheTtlSeconds > 0 ? await this.cache.get(key).catch(() => undefined) : undefined;
    timing?.mark('cache');
    if (cached) return viewOfCached(cached);
    const queue = this.queues.get(def.queue);
    const backlog = await this.backlog.waiting(queue);
    if (backlog >= this.config.maxBacklog) {
      throw new ApiError('BACKLOG_FULL', `${backlog} jobs are waiting in queue "${queue.name}"; retry later`, { retryAfterSeconds: 5 });
    }

    const newId = randomUUID();
    // why subscribe first: a fast job could finish between the add and a later subscription.
    const watch = waitSeconds > 0 ? this.events.watch(newId) : undefined;
    const data: JobData = { inputJson, version: def.version, key, requestId };
    const abandon = (error: unknown): never => {
      watch?.close();
      throw error;
    };
    const job = await this.queues
      .submitter(def.queue)
      .add(def.name, data, {
        jobId: newId,
        priority: def.priority,
        // why: the deduplication key lives until the job completes or fails, so identical submissions
        // from any replica join the job in flight. The worker writes the cache before completing, so
        // once the key is released the cache answers instead.
        deduplication: { id: key },
        attempts: def.retry.attempts,
        backoff: { type: 'exponential', delay: def.retry.backoffMs },
        removeOnComplete: { age: this.config.jobRetentionSeconds },
        removeOnFail: { age: this.config.jobRetentionSeconds },
      })
      .catch(abandon);
    timing?.mark('enqueue');
    // A joined job too: joining wrote a "deduplicated" event after the job it joined, so replicas
    // that have this connection's writes have that job.
    await this.replicas.confirm(queue, job.id!, timing).catch(abandon);
    const id = job.id!;
    const queued: JobView = { id, type: def.name, status: 'queued', attempts: 0, createdAt: new Date(job.timestamp).toISOString() };
    if (id !== newId) {
      // Joined an identical job already queued or running (or just finished).
      watch?.close();
      return waitSeconds > 0 ? this.waitUntilFinal(id, waitSeconds * 1000, timing, queue) : this.get(id, undefined, queue);
    }
    if (!watch) return queued;
    const view = await watch.until(waitSeconds * 1000, (state) => this.get(id, state, queue), isFinal, queued);
    timing?.mark('wait');
    return view;
  }

  /**
   * The view of job `id`, wherever it lives now: BullMQ, the cancelled list or the result cache.
   * `knownState` and `queue`, when the caller knows them, save reads.
   */
  async get(id: string, knownState?: string, queue?: JobsQueue): Promise<JobView> {
    this.assertRedisUp();
    const view = await this.store.view(id, knownState, queue);
    if (!view) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
    return view;
  }

  /** Waits up to `timeoutMs` for job `id` to finish; returns its view either way. */
  async waitUntilFinal(id: string, timeoutMs: number, timing?: ServerTiming, queue?: JobsQueue): Promise<JobView> {
    const view = await this.events.watch(id).until(timeoutMs, (state) => this.get(id, state, queue), isFinal);
    timing?.mark('wait');
    return view;
  }

  /**
   * Cancels job `id`. A queued job is removed at once. A running one is aborted by whichever worker
   * runs it, told through Redis pub/sub; a marker key covers the worker that picks it up meanwhile.
   */
  async cancel(id: string): Promise<JobView> {
    this.assertRedisUp();
    const { record, state, queue } = await this.store.read(id);
    if (!record) {
      const view = await this.store.view(id);
      if (!view) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
      throw new ApiError('JOB_ALREADY_FINISHED', `Job "${id}" is already ${view.status}`);
    }
    const current = viewOfJob(record, state);
    if (isFinal(current)) throw new ApiError('JOB_ALREADY_FINISHED', `Job "${id}" is already ${current.status}`);

    await this.redis.set(this.keys.cancelMarker(id), '1', 'EX', this.config.jobRetentionSeconds);
    // A fan-out job waiting for its chunks: stopping them wakes it, and it ends as cancelled.
    const parent = state === 'waiting-children' ? await queue!.getJob(id) : undefined;
    if (parent) await stopChildren(parent, this.redis, this.config.redisPrefix, this.config.jobRetentionSeconds);
    else if (QUEUED_STATES.has(state) && (await this.store.removeQueued(id, queue!))) {
      const cancelled = viewOfCancelled(current);
      await this.store.saveCancelled(cancelled);
      return cancelled;
    }
    // Running (or picked up between our read and the remove, which then refuses: it holds a lock).
    await this.redis.publish(this.keys.cancelChannel, id);
    return this.waitUntilFinal(id, CANCEL_CONFIRM_MS, undefined, queue);
  }

  /**
   * why: BullMQ waits for a connection it never had (Redis down at start-up) instead of failing;
   * answering 503 at once keeps every request within its own timeout.
   */
  private assertRedisUp(): void {
    if (this.redis.status !== 'ready') {
      throw new ApiError('QUEUE_UNAVAILABLE', 'Redis is unreachable; retry shortly', { retryAfterSeconds: 5 });
    }
  }

  private validate(def: JobDefinition, body: unknown): unknown {
    const parsed = def.input.safeParse(body);
    if (parsed.success) return parsed.data;
    const errors: FieldError[] = parsed.error.issues.slice(0, 20).map((issue) => ({
      field: issue.path.map(String).join('.'),
      message: issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message,
    }));
    throw new ApiError('INVALID_INPUT', `The input for "${def.name}" is invalid`, { errors });
  }
}
