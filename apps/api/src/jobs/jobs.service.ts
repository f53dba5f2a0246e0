import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type IORedis from 'ioredis';
import { type CachedResult, ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { canonicalJson, contentKey, JobDefinition, JobRegistry } from '@app/jobs';
import { JobData, queueKeys, stopChildren } from '@app/queue';
import { ApiError, FieldError } from '../http/api-error';
import { ServerTiming } from '../http/server-timing';
import { Backlog } from './backlog';
import { JobEvents, type JobWatch } from './job-events';
import { JobStore } from './job-store';
import { isFinal, JobView, viewOfCached, viewOfCancelled, viewOfJob } from './job-view';
import { JobQueues, type JobsQueue, QUEUE_REDIS } from './queue.providers';
import { SubmissionMetrics } from './submission.metrics';

const QUEUED_STATES = new Set(['waiting', 'prioritized', 'delayed']);
/** How long DELETE waits for a running job to be aborted by its worker before answering 202. */
const CANCEL_CONFIRM_MS = 3000;

type Admission =
  | { outcome: 'cached'; view: JobView }
  | { outcome: 'joined'; id: string; queue: JobsQueue }
  | { outcome: 'queued'; id: string; queue: JobsQueue; queued: JobView; watch?: JobWatch };

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
    @Inject(QUEUE_REDIS) private readonly redis: IORedis,
    private readonly store: JobStore,
    private readonly cache: ResultCache,
    private readonly backlog: Backlog,
    private readonly events: JobEvents,
    private readonly lifecycle: Lifecycle,
    private readonly metrics: SubmissionMetrics,
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
    let admission: Admission;
    try {
      admission = await this.admit(def, body, waitSeconds, requestId, timing);
    } catch (error) {
      this.metrics.submission(def.name, 'rejected');
      throw error;
    }
    this.metrics.submission(def.name, admission.outcome);
    switch (admission.outcome) {
      case 'cached':
        return admission.view;
      case 'joined':
        return waitSeconds > 0 ? this.waitUntilFinal(admission.id, waitSeconds * 1000, timing, admission.queue) : this.get(admission.id, undefined, admission.queue);
      case 'queued': {
        const { id, queue, queued, watch } = admission;
        if (!watch) return queued;
        const view = await watch.until(waitSeconds * 1000, (state) => this.get(id, state, queue), isFinal, queued);
        timing?.mark('wait');
        return view;
      }
    }
  }

  /** Validation, the cache, admission control and the add: what a submission becomes. */
  private async admit(def: JobDefinition, body: unknown, waitSeconds: number, requestId?: string, timing?: ServerTiming): Promise<Admission> {
    if (this.lifecycle.shuttingDown) throw new ApiError('SHUTTING_DOWN', 'This replica is shutting down', { retryAfterSeconds: 1 });
    const inputJson = canonicalJson(this.validate(def, body));
    const key = contentKey(def, inputJson);
    timing?.mark('validate');
    this.assertRedisUp();

    let cached: CachedResult | null | undefined;
    if (def.cacheTtlSeconds > 0) {
      // why: the cache may be a separate Redis; when it is away (null), the job simply runs again.
      cached = await this.cache.get(key).catch(() => null);
      this.metrics.cacheLookup(def.name, cached ? 'hit' : cached === null ? 'error' : 'miss');
    }
    timing?.mark('cache');
    if (cached) return { outcome: 'cached', view: viewOfCached(cached) };
    const queue = this.queues.get(def.queue);
    const backlog = await this.backlog.waiting(queue);
    if (backlog >= this.config.maxBacklog) {
      throw new ApiError('BACKLOG_FULL', `${backlog} jobs are waiting in queue "${queue.name}"; retry later`, { retryAfterSeconds: 5 });
    }

    const newId = randomUUID();
    // why subscribe first: a fast job could finish between the add and a later subscription.
    const watch = waitSeconds > 0 ? this.events.watch(newId) : undefined;
    const data: JobData = { inputJson, version: def.version, key, requestId };
    const job = await queue
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
      .catch((error: unknown) => {
        watch?.close();
        throw error;
      });
    timing?.mark('enqueue');
    const id = job.id!;
    if (id !== newId) {
      // Joined an identical job already queued or running (or just finished).
      watch?.close();
      return { outcome: 'joined', id, queue };
    }
    const queued: JobView = { id, type: def.name, status: 'queued', attempts: 0, createdAt: new Date(job.timestamp).toISOString() };
    return { outcome: 'queued', id, queue, queued, watch };
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
