import { Inject, Injectable, Optional } from '@nestjs/common';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import type { ServerTiming } from '../http/server-timing';
import { JobQueues, type JobsQueue, QUEUE_REDIS } from '../queues/queue.providers';
import { JOB_ARCHIVE, type JobArchive, NO_ARCHIVE } from './job-archive';
import { JobNotices } from './job-notices';
import { JobOwners } from './job-owners';
import { JobStore } from './job-store';
import { isFinal, JobView, viewOfJob, viewOfWithdrawn } from './job-view';
import type { Outcome } from './outcome';

/** The job lifecycle's read side as the HTTP API sees it: read a job, wait for it, watch it. */
@Injectable()
export class JobReads {
  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    private readonly queues: JobQueues,
    private readonly store: JobStore,
    private readonly owners: JobOwners,
    private readonly notices: JobNotices,
    @Optional() @Inject(JOB_ARCHIVE) private readonly archive: JobArchive = NO_ARCHIVE,
  ) {}

  /**
   * The answer to one outcome of the submit pipeline for a job of `queueName`: its view, once final
   * if the caller waits (`waitMs`), read from the notice that ends the job when it carries the job.
   */
  async answer(outcome: Outcome, waitMs: number, queueName: string, timing?: ServerTiming): Promise<JobView> {
    if (outcome.kind === 'rejected') throw outcome.error;
    if (outcome.kind === 'cached') return outcome.view;
    const queue = this.queues.get(queueName);
    const id = outcome.kind === 'queued' ? outcome.view.id : outcome.id;
    if (!outcome.watch) return outcome.kind === 'queued' ? outcome.view : this.get(id, undefined, queue);
    const initial = outcome.kind === 'queued' ? outcome.view : undefined;
    const view = await outcome.watch.until(waitMs, (state) => this.get(id, state, queue), isFinal, viewOfJob, initial);
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

  /**
   * The view of job `id` for the caller of `scope`: 404 unless it is one of the job's owners (with
   * API keys), exactly as for an id nobody knows, so ids of others' jobs reveal nothing.
   */
  async getFor(id: string, scope: string): Promise<JobView> {
    this.assertRedisUp();
    const [found, owned, tags] = await Promise.all([this.store.view(id), this.owners.owns(id, scope), this.owners.tagsOf(id, scope)]);
    let view = found;
    let owns = owned;
    // A job that failed for good may be kept longer than BullMQ keeps it (dead letters), and name its replay.
    if (!view || view.status === 'failed') {
      const kept = await this.archive.find(id);
      if (kept) {
        view = view ? { ...view, ...(kept.view.replayedAs !== undefined && { replayedAs: kept.view.replayedAs }) } : kept.view;
        owns ||= !this.owners.enabled || kept.owners.includes(scope);
      }
    }
    if (!view || !owns) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
    // why a copy: a cached view is shared by every caller.
    return tags ? { ...view, tags } : view;
  }

  /**
   * `view` as the caller of `scope` may see it: as it is while that caller owns the job (with the
   * tags it gave it, as getFor shows them), and once it
   * has withdrawn (DELETE while others still wait for the job) as its own cancelled view, without
   * the result. For the paths that read a job its caller once had (an open event stream, a retry
   * under an Idempotency-Key), which must not hand over what a withdrawal gave up.
   */
  async asSeenBy(view: JobView, scope: string): Promise<JobView> {
    const [owns, tags] = await Promise.all([this.owners.owns(view.id, scope), this.owners.tagsOf(view.id, scope)]);
    if (!owns) return viewOfWithdrawn(view);
    // why a copy: a cached view is shared by every caller.
    return tags ? { ...view, tags } : view;
  }

  /**
   * The view of job `id` for the caller of `scope` (see getFor), once this replica watches the job:
   * what an event stream starts from, so that no notice after the read is missed.
   */
  async watchFor(id: string, scope: string): Promise<JobView> {
    this.assertRedisUp();
    const [queue, owns] = await Promise.all([this.queues.locate(id), this.owners.owns(id, scope)]);
    if (!owns) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
    if (queue) await this.notices.register(queue.name, id);
    return this.getFor(id, scope);
  }

  /**
   * Waits up to `timeoutMs` for job `id` to finish; returns its view either way. This replica
   * becomes one of the job's watchers before it reads the job, so no end is missed.
   */
  async waitUntilFinal(id: string, timeoutMs: number, timing?: ServerTiming, queue?: JobsQueue): Promise<JobView> {
    const watch = this.notices.watch(id);
    try {
      queue ??= await this.queues.locate(id);
      if (queue) await this.notices.register(queue.name, id);
    } catch (error) {
      watch.close();
      throw error;
    }
    const view = await watch.until(timeoutMs, (state) => this.get(id, state, queue), isFinal, viewOfJob);
    timing?.mark('wait');
    return view;
  }

  /**
   * why: BullMQ waits for a connection it never had (Redis down at start-up) instead of failing;
   * answering 503 at once keeps every request within its own timeout.
   */
  assertRedisUp(): void {
    if (this.redis.status !== 'ready') {
      throw new ApiError('QUEUE_UNAVAILABLE', 'Redis is unreachable; retry shortly', { retryAfterSeconds: 5 });
    }
  }
}
