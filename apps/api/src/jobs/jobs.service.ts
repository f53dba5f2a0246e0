import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { type CachedResult, ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobDefinition, JobRegistry } from '@app/jobs';
import { queueKeys, stopChildren } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import { ServerTiming } from '../http/server-timing';
import { Claim, Idempotency, IdempotencyKey } from '../idempotency/idempotency';
import { requestFingerprint } from '../idempotency/idempotency-key';
import { Backlog } from './backlog';
import { JobEvents } from './job-events';
import { PreparedJob, prepareJob } from './job-input';
import { JobOwners } from './job-owners';
import { JobStore } from './job-store';
import { isFinal, iso, JobView, viewOfCached, viewOfCancelled, viewOfJob, viewOfWithdrawn } from './job-view';
import { newJob, Submission } from './new-job';
import { JobQueues, type JobsQueue, QUEUE_REDIS } from './queue.providers';
import { ReplicaAck } from './replica-ack';
import { SubmissionMetrics } from './submission.metrics';

const QUEUED_STATES = new Set(['waiting', 'prioritized', 'delayed']);

/** Whether a submission's outcome was counted yet: anything thrown before that counts as rejected. */
interface Tally {
  counted: boolean;
}
/** How long DELETE waits for a running job to be aborted by its worker before answering 202. */
const CANCEL_CONFIRM_MS = 3000;

export interface SubmitOptions {
  /** Who submits: with API keys, the job's owners grow by this scope (see JobOwners). */
  scope: string;
  waitSeconds: number;
  /** What the POST carries into the job besides its input (see Submission). */
  submission: Submission;
  timing?: ServerTiming;
  /** The request's Idempotency-Key: a retry with it gets the same job. */
  idempotency?: IdempotencyKey;
  /** The request's Callback-Url (registered by the controller): part of what an Idempotency-Key covers. */
  callbackUrl?: string;
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
    private readonly idempotency: Idempotency,
    private readonly metrics: SubmissionMetrics,
    private readonly owners: JobOwners,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.keys = queueKeys(config.redisPrefix);
  }

  /**
   * Validates `body` as the input of `type`, answers from the cache when it can, and otherwise
   * enqueues the job, joining an identical job already queued or running (single flight). With an
   * Idempotency-Key, a retry gets the job the first request got, whatever became of it.
   */
  async submit(type: string, body: unknown, options: SubmitOptions): Promise<JobView> {
    const def = this.definition(type);
    const tally: Tally = { counted: false };
    try {
      return await this.submitAs(def, body, options, tally);
    } catch (error) {
      // Invalid input, backlog full, Redis away: thrown before the job was cached, joined or queued.
      if (!tally.counted) this.metrics.submission(def.name, 'rejected');
      throw error;
    }
  }

  private async submitAs(def: JobDefinition, body: unknown, options: SubmitOptions, tally: Tally): Promise<JobView> {
    const job = prepareJob(def, body, options.scope);
    options.timing?.mark('validate');
    if (!options.idempotency) return this.enqueue(job, options, tally);
    this.assertRedisUp();
    const callback = options.callbackUrl ? [`callback ${options.callbackUrl}`] : [];
    const fingerprint = requestFingerprint([`POST /v1/jobs/${def.name}`, job.inputJson, ...callback]);
    let view: JobView | undefined;
    const id = await this.idempotency.once(options.idempotency, fingerprint, async (claim) => {
      view = await this.enqueue(job, { ...options, waitSeconds: 0 }, tally, claim);
      return view.id;
    });
    // A retry under the key joins the job the first request got.
    if (!tally.counted) this.count(def, 'joined', tally);
    if (view?.id === id && (isFinal(view) || options.waitSeconds === 0)) return view;
    return options.waitSeconds > 0 ? this.waitUntilFinal(id, options.waitSeconds * 1000, options.timing) : this.get(id);
  }

  private count(def: JobDefinition, outcome: 'cached' | 'joined' | 'queued', tally: Tally): void {
    tally.counted = true;
    this.metrics.submission(def.name, outcome);
  }

  /** The definition of a registered type, if this replica takes work: else a 404 or 503 problem. */
  definition(type: string): JobDefinition {
    const def = this.registry.get(type);
    if (!def) throw new ApiError('UNKNOWN_JOB_TYPE', `No job type named "${type}"; GET /v1/job-types lists them`);
    if (this.lifecycle.shuttingDown) throw new ApiError('SHUTTING_DOWN', 'This replica is shutting down', { retryAfterSeconds: 1 });
    return def;
  }

  /**
   * Answers `job` from the cache, or enqueues it (or joins an identical one in flight): under a new
   * id, or under an Idempotency-Key's claim.
   */
  private async enqueue(job: PreparedJob, { scope, waitSeconds, submission, timing }: SubmitOptions, tally: Tally, claim?: Claim): Promise<JobView> {
    const { def, key } = job;
    this.assertRedisUp();
    let cached: CachedResult | null | undefined;
    if (def.cacheTtlSeconds > 0) {
      // why: the cache may be a separate Redis; when it is away (null), the job simply runs again.
      cached = await this.cache.get(key).catch(() => null);
      this.metrics.cacheLookup(def.name, cached ? 'hit' : cached === null ? 'error' : 'miss');
    }
    timing?.mark('cache');
    if (cached) {
      // The caller may read the result by its id from now on, like the caller whose job produced it.
      await this.owners.add([cached.id], scope);
      this.count(def, 'cached', tally);
      return viewOfCached(cached);
    }
    const queue = this.queues.get(def.queue);
    const { admitted, backlog } = await this.backlog.admit(queue, 1);
    if (admitted === 0) {
      throw new ApiError('BACKLOG_FULL', `${backlog} jobs are waiting in queue "${queue.name}"; retry later`, { retryAfterSeconds: 5 });
    }
    const newId = claim?.plannedId ?? randomUUID();
    // why subscribe first: a fast job could finish between the add and a later subscription.
    const watch = waitSeconds > 0 ? this.events.watch(newId) : undefined;
    const { name, data, opts } = newJob(job, newId, submission, this.config.jobRetentionSeconds);
    const abandon = (error: unknown): never => {
      watch?.close();
      throw error;
    };
    claim?.adding();
    // why together: the owner is recorded in the same round trip as the job; a join records it below.
    const [added] = await Promise.all([this.queues.submitter(def.queue).add(name, data, opts), this.owners.add([newId], scope)]).catch(abandon);
    timing?.mark('enqueue');
    // A joined job too: joining wrote a "deduplicated" event after the job it joined, so replicas
    // that have this connection's writes have that job.
    await this.replicas.confirm(queue, added.id!, timing).catch(abandon);
    const id = added.id!;
    const queued: JobView = { id, type: def.name, status: 'queued', attempts: 0, createdAt: iso(added.timestamp)! };
    if (id !== newId || claim?.takeover) {
      // Joined an identical job already queued or running (or just finished), or, taking over a
      // dead request's key, found the job it had added.
      watch?.close();
      if (id !== newId) await this.owners.add([id], scope);
      this.count(def, 'joined', tally);
      return waitSeconds > 0 ? this.waitUntilFinal(id, waitSeconds * 1000, timing, queue) : this.get(id, undefined, queue);
    }
    this.count(def, 'queued', tally);
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

  /**
   * The view of job `id` for the caller of `scope`: 404 unless it is one of the job's owners (with
   * API keys), exactly as for an id nobody knows, so ids of others' jobs reveal nothing.
   */
  async getFor(id: string, scope: string): Promise<JobView> {
    this.assertRedisUp();
    const [view, owns] = await Promise.all([this.store.view(id), this.owners.owns(id, scope)]);
    if (!view || !owns) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
    return view;
  }

  /** Waits up to `timeoutMs` for job `id` to finish; returns its view either way. */
  async waitUntilFinal(id: string, timeoutMs: number, timing?: ServerTiming, queue?: JobsQueue): Promise<JobView> {
    const view = await this.events.watch(id).until(timeoutMs, (state) => this.get(id, state, queue), isFinal);
    timing?.mark('wait');
    return view;
  }

  /**
   * Cancels job `id` for the caller of `scope`. With API keys, a job several callers submitted (single
   * flight) keeps running for the others: this caller's interest is withdrawn, and the run is
   * cancelled only once no owner is left. A queued job is removed at once. A running one is aborted
   * by whichever worker runs it, told through Redis pub/sub; a marker key covers the worker that
   * picks it up meanwhile.
   */
  async cancel(id: string, scope: string): Promise<JobView> {
    this.assertRedisUp();
    const [{ record, state, queue }, owns] = await Promise.all([this.store.read(id), this.owners.owns(id, scope)]);
    if (!owns) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
    if (!record) {
      const view = await this.store.view(id);
      if (!view) throw new ApiError('JOB_NOT_FOUND', `No job with id "${id}"`);
      throw new ApiError('JOB_ALREADY_FINISHED', `Job "${id}" is already ${view.status}`);
    }
    const current = viewOfJob(record, state);
    if (isFinal(current)) throw new ApiError('JOB_ALREADY_FINISHED', `Job "${id}" is already ${current.status}`);
    if (this.owners.enabled && (await this.owners.withdraw(id, scope)) > 0) return viewOfWithdrawn(current);

    await this.redis.set(this.keys.cancelMarker(id), '1', 'EX', this.config.jobRetentionSeconds);
    // A fan-out job waiting for its chunks: stopping them wakes it, and it ends as cancelled.
    const parent = state === 'waiting-children' ? await queue!.getJob(id) : undefined;
    if (parent) await stopChildren(parent, this.redis, this.config.redisPrefix, this.config.jobRetentionSeconds);
    else if (QUEUED_STATES.has(state) && (await this.store.removeQueued(id, queue!))) {
      const cancelled = viewOfCancelled(current);
      await this.store.saveCancelled(cancelled);
      await this.owners.finished(id, this.config.jobRetentionSeconds);
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
  assertRedisUp(): void {
    if (this.redis.status !== 'ready') {
      throw new ApiError('QUEUE_UNAVAILABLE', 'Redis is unreachable; retry shortly', { retryAfterSeconds: 5 });
    }
  }
}
