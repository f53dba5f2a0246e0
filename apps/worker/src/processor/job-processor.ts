import { Inject, Injectable, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { DelayedError, UnrecoverableError, WaitingChildrenError, WaitingError } from 'bullmq';
import { ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { CodedJobError, isRetried, JobFailureCode, JobRegistry, knownVersions, parseFailure, runnerOf } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { contentKeyOf, JOINABLE_AFTER_COMPLETION_MS, keepJoinable, listUntil, ownersKey, pastDeadline, queuePrefix, startDeadlinesKey, SWEEP_GRACE_SECONDS } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { SPAN_ATTRIBUTES, type Tracing, TRACING } from '@app/tracing';
import { JobPool, type RunOptions } from '../pool/job-pool';
import { CancelRequests } from './cancel-requests';
import { FairRelease } from './fair-release';
import { FAILED_JOBS, type FailedJobs } from './failed-jobs';
import { FanOut } from './fan-out';
import { FileLeases } from './file-leases';
import { InputFiles } from './input-files';
import { JobNotifier } from './job-notifier';
import { completeAt, type QueueJob, SlotWorker } from './slot-worker';
import { Slots } from './slots';
import { WorkerMetrics } from './worker.metrics';
import { WORKER_QUEUES } from './worker-queues';
import { WORKER_REDIS } from './worker-redis';

/** Abort reason for jobs handed back to the queue at shutdown (see `drain`). */
const HAND_BACK = 'nest-offload:hand-back';
/**
 * How long a job of a newer version than this worker knows is put back for a newer worker (a
 * rolling update that started the new API first) before it fails as JOB_REJECTED.
 */
const NEWER_VERSION_GRACE_MS = 5 * 60_000;
const NEWER_VERSION_RETRY_MS = 2000;

class HandBack extends Error {}

/**
 * At least how long BullMQ keeps `job` once it completes, in seconds (0: maybe not at all): the
 * `age` of its removeOnComplete (jobOptions), read from the job, which the replica that added it
 * set. why a count or `true` is 0: BullMQ may then remove it at any later completion.
 */
function keptFor(job: QueueJob): number {
  const keep = job.opts.removeOnComplete;
  return typeof keep === 'object' && 'age' in keep && keep.count === undefined ? keep.age : 0;
}

/** Why BullMQ aborted a running job: handed back at shutdown, or cancelled by request. */
const abortReason = (signal: AbortSignal): Error =>
  signal.reason === HAND_BACK ? new HandBack() : new CodedJobError(JobFailureCode.JOB_CANCELLED, 'cancelled while running');

/**
 * The signal a pool thread's run gets: aborted at `timeoutMs` (JOB_TIMEOUT), or when BullMQ aborts
 * the job (abortReason). `dispose` once the run has ended.
 */
function stopSignal(signal: AbortSignal, timeoutMs: number): { signal: AbortSignal; dispose: () => void } {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new CodedJobError(JobFailureCode.JOB_TIMEOUT, `the job ran longer than ${timeoutMs} ms; its thread was terminated`)), timeoutMs);
  const onAbort = () => abort.abort(abortReason(signal));
  signal.addEventListener('abort', onAbort, { once: true });
  return {
    signal: abort.signal,
    dispose: () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * The BullMQ consumer. Its event loop only moves data: job code runs on the pool, so lock renewals,
 * progress, cancellation and probes stay prompt however heavy the jobs are. Per job it does what
 * the job needs and no more: no Redis command whose answer it already has (a cancel arrives with the
 * job or by message), the cache write pipelined before BullMQ's completion on the same connection
 * and in the same write (see coalesceWrites in libs/redis), log lines at debug level, bound metric series.
 */
@Injectable()
export class JobProcessor implements OnApplicationBootstrap {
  private workers: SlotWorker[] = [];
  private readonly logger: Logger;
  private readonly cancels = new CancelRequests();
  /**
   * The cache writes go out on this: the worker's queue connection when the cache lives on the
   * queue Redis, so a result is written before the completion that follows it on that connection
   * (an identical submission never finds the job gone and the result not yet cached), without
   * waiting for the write; the cache's own connection when it is a Redis of its own (awaited then).
   */
  private readonly cacheWriter: ResultCache;
  private readonly cacheOnQueueRedis: boolean;

  constructor(
    private readonly registry: JobRegistry,
    private readonly pool: JobPool,
    private readonly cache: ResultCache,
    private readonly metrics: WorkerMetrics,
    private readonly fanOut: FanOut,
    private readonly notifier: JobNotifier,
    private readonly inputFiles: InputFiles,
    private readonly fileLeases: FileLeases,
    @Inject(WORKER_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly rootLogger: Logger,
    @Inject(WORKER_QUEUES) private readonly queues: readonly string[],
    @Inject(TRACING) private readonly tracing: Tracing | null,
    @Optional() @Inject(FAILED_JOBS) private readonly failedJobs?: FailedJobs,
  ) {
    this.logger = rootLogger.child({ context: JobProcessor.name });
    this.cacheOnQueueRedis = config.cacheRedis === config.queueRedis;
    this.cacheWriter = this.cacheOnQueueRedis ? new ResultCache(redis, config.redisPrefix) : cache;
  }

  onApplicationBootstrap(): void {
    // why one set of slots for all queues: one job per pool thread, whatever the queue. Taking more
    // would hoard jobs other replicas could run now.
    const slots = new Slots(this.config.workerThreads);
    this.workers = this.queues.map((name) =>
      new SlotWorker(
        name,
        (job, token, signal) => this.process(job, token!, signal!),
        {
          connection: this.redis,
          prefix: queuePrefix(this.config.redisPrefix, name),
          lockDuration: this.config.jobLockMs,
          stalledInterval: this.config.jobLockMs,
          telemetry: this.tracing?.telemetry,
        },
        slots,
        // Cancelled while queued and not removed (a schedule's next tick, or picked up meanwhile): BullMQ fails it unrun.
        (job) => {
          this.metrics.count(job.name, parseFailure(job.deferredFailure).code);
          this.ownersOutlive(job, this.config.jobRetentionSeconds);
        },
        () => new FairRelease(this.redis, this.config.redisPrefix, name, (error) => this.logger.warn({ err: error, queue: name }, 'fair share: a release or settle failed; the next heal retries it')),
      )
        .on('error', (error) => this.logger.warn({ err: error, queue: name }, 'BullMQ worker error'))
        // Sent once BullMQ has recorded the end, so a replica that reads the job on the notice sees it.
        .on('completed', (job, result) => this.notifier.final(job, 'completed', result))
        // A failure BullMQ retries is no end: finishedOn is set only on the last one. A job that
        // stalled too often (JOB_LOST) fails here too, at its next pickup (BullMQ's deferred failure).
        .on('failed', (job) => {
          if (!job?.finishedOn) return;
          this.notifier.final(job, 'failed');
          this.keepFailed(job);
        })
        // A job that stalled went back to the queue, or failed for good (JOB_LOST): its watchers read it.
        .on('stalled', (id) => this.notifier.settled(name, id)),
    );
  }

  get running(): boolean {
    return this.workers.length > 0 && this.workers.every((worker) => worker.isRunning());
  }

  get activeJobs(): number {
    return this.metrics.active;
  }

  /** Aborts job `id` if this worker runs it (a cancel request from the API); else keeps it for its start. */
  cancel(id: string): boolean {
    if (this.workers.some((worker) => worker.cancelJob(id, 'cancelled by request'))) return true;
    // why keep it: the job may be this worker's already (fetched) without its run having begun.
    this.cancels.add(id);
    return false;
  }

  /**
   * Stops taking jobs and lets the active ones finish for up to `deadlineMs`; then aborts the rest
   * and hands them back to the queue, so another worker runs them at once.
   */
  async drain(deadlineMs: number): Promise<void> {
    if (this.workers.length === 0) return;
    const closing = Promise.all(this.workers.map((worker) => worker.close()));
    let timer: NodeJS.Timeout | undefined;
    const expired = await Promise.race([
      closing.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (expired) {
      this.logger.warn({ active: this.metrics.active }, 'shutdown deadline reached: handing active jobs back to the queue');
      for (const worker of this.workers) worker.cancelAllJobs(HAND_BACK);
      await closing;
    }
  }

  /**
   * Gives a finished job's owner set (see the API's JobOwners) the lifetime of what stays readable:
   * the job for JOB_RETENTION_SECONDS, its cached result for the type's TTL; the listing forgets the
   * job then (libs/queue/src/job-index.ts), and the owners stay SWEEP_GRACE_SECONDS longer for it.
   * why here and unawaited: sent on the connection that finishes the job, they are applied before
   * the job is; a missing set (no API keys) costs one no-op command. A fan-out chunk is nobody's: not
   * listed; with JOB_LISTING=off no job is.
   */
  private ownersOutlive(job: QueueJob, seconds: number): void {
    const prefix = this.config.redisPrefix;
    void this.redis.expire(ownersKey(prefix, job.queueName, job.id!), seconds + SWEEP_GRACE_SECONDS).catch(() => undefined);
    if (job.data.parent === undefined && this.config.jobListing !== 'off') void listUntil(this.redis, prefix, job.queueName, job.id!, Date.now() + seconds * 1000).catch(() => undefined);
  }

  /**
   * Keeps `job`, failed for good, as a dead letter (libs/queue/src/dead-letters.ts) for
   * DEAD_LETTER_RETENTION_SECONDS, if its failure is one and the dead-letters capability is there
   * (FAILED_JOBS). why here: BullMQ has recorded the failure, and the owners and tags it copies
   * still live (ownersOutlive gave them the job's retention).
   */
  private keepFailed(job: QueueJob): void {
    if (!this.failedJobs) return;
    void this.failedJobs.keep(this.redis, this.config.redisPrefix, job, this.config.deadLetterRetentionSeconds).catch((error: unknown) =>
      this.logger.warn({ err: error, jobId: job.id, type: job.name }, 'could not keep the failed job as a dead letter'),
    );
  }

  /**
   * True when `job` must not run: no attempt of it has ended (a fan-out job resuming for its merge
   * has started) and it is past its start deadline, raised by any submission that joined it (see
   * start-deadlines.ts). why the data first: a job picked up in time costs no Redis command.
   */
  private async pastStartDeadline(job: QueueJob): Promise<boolean> {
    const { startBy, chunks } = job.data;
    if (startBy === undefined || job.attemptsMade > 0 || chunks !== undefined || Date.now() < startBy) return false;
    return pastDeadline(this.redis, startDeadlinesKey(this.config.redisPrefix, job.queueName), job.id!);
  }

  /**
   * The error BullMQ gets for a failed attempt: a code that is never retried (see isRetried) as an
   * UnrecoverableError, so BullMQ fails the job at once; a retried one as is, for its attempts and backoff.
   */
  private failure(job: QueueJob, error: CodedJobError): Error {
    const final = !isRetried(error.code);
    if (final || job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) this.ownersOutlive(job, this.config.jobRetentionSeconds);
    return final ? new UnrecoverableError(error.message) : error;
  }

  private async process(job: QueueJob, token: string, signal: AbortSignal): Promise<unknown> {
    const fields = { jobId: job.id, type: job.name, requestId: job.data.requestId, attempt: job.attemptsMade + 1 };
    // why made on first use: most jobs write no line at the default level, and a child logger per job is an allocation.
    let child: Logger | undefined;
    const log = () => (child ??= this.logger.child(fields));
    const debug = this.logger.isLevelEnabled('debug');
    // On BullMQ's `process` span, when tracing is on.
    this.tracing?.setAttributes({ [SPAN_ATTRIBUTES.requestId]: fields.requestId, [SPAN_ATTRIBUTES.jobType]: job.name, [SPAN_ATTRIBUTES.jobAttempt]: fields.attempt });
    const refuse = (code: JobFailureCode, message: string) => {
      this.metrics.count(job.name, code);
      log().warn({ code }, `job failed: ${message}`);
      return this.failure(job, new CodedJobError(code, message));
    };
    const def = this.registry.get(job.name);
    if (!def) throw refuse(JobFailureCode.JOB_REJECTED, `this worker has no job type "${job.name}"`);
    const runner = runnerOf(def, job.data.version);
    if (!runner) {
      if (job.data.version > def.version && Date.now() - job.timestamp < NEWER_VERSION_GRACE_MS) {
        // why: a newer API is up before the newer workers; put the job back for one of them.
        log().info({ version: job.data.version }, `job is for a newer version than v${def.version}; putting it back for a newer worker`);
        await job.moveToDelayed(Date.now() + NEWER_VERSION_RETRY_MS, token);
        throw new DelayedError();
      }
      const runs = knownVersions(def).map((v) => `v${v}`).join(', ');
      throw refuse(JobFailureCode.JOB_REJECTED, `job is for ${def.name} v${job.data.version}; this worker runs ${runs}`);
    }
    if (this.cancels.take(job.id!) || signal.aborted) {
      if (def.fanOut && job.data.chunks !== undefined) await this.fanOut.abandon(job);
      throw refuse(JobFailureCode.JOB_CANCELLED, job.data.chunks === undefined ? 'cancelled before it started' : 'cancelled while its chunks ran');
    }
    if (await this.pastStartDeadline(job)) {
      this.metrics.expired(def.name);
      if (debug) log().debug('job expired: not started by its start deadline');
      throw this.failure(job, new CodedJobError(JobFailureCode.JOB_EXPIRED, 'not started by its start deadline'));
    }
    // First pickups only: a handed-back job, or a fan-out job resuming for its merge, was picked up before.
    if (job.attemptsStarted <= 1 && job.data.chunks === undefined) this.metrics.waited(def.name, job.queueName, Date.now() - job.timestamp);
    // Added by the API under its content key: the API looked the input up just before, and an
    // identical job that completed since is joined, not run again (keepJoinable below).
    const joinable = job.data.key === undefined && job.deduplicationId !== undefined;
    // why a look for the others: a schedule's tick and a fan-out chunk were added without one, and a
    // job edited on the dashboard under another input's key. why not an inline type: running it
    // again costs less than the look (a round trip to Redis).
    if (def.cacheTtlSeconds > 0 && !def.inline && !joinable) {
      const dataKey = contentKeyOf(job);
      const cached = dataKey === undefined ? undefined : await this.cache.get(dataKey).catch(() => undefined);
      // A cached result whose file a sweep removed is no answer: the job runs.
      if (cached && (!FileLeases.uses(job.data.files, cached.result) || (await this.fileLeases.hold(def, job.data.files, cached.result)).length === 0)) {
        this.metrics.completed(def.name, job.queueName, Date.now() - job.timestamp);
        return cached.result;
      }
    }

    const timeoutMs = Math.min(def.timeoutMs, this.config.jobTimeoutMs);
    // why none for an inline run: nothing could stop it; the pool checks its time and BullMQ's
    // signal once it returns (JobPool.runInline), and a timer and a controller per job cost more.
    const stop = def.inline ? undefined : stopSignal(signal, timeoutMs);

    const startedAt = Date.now();
    this.metrics.started();
    if (debug) log().debug('job started');
    const onProgress = (percent: number) => {
      void this.notifier.progress(job, percent).catch(() => undefined);
      if (job.data.parent) void this.notifier.childProgress(job, percent).catch(() => undefined);
    };
    try {
      const options: RunOptions = {
        attempt: job.attemptsMade + 1,
        scope: job.data.scope,
        // why not a chunk's: its parent merges the chunks' results from Redis.
        storeLarge: job.data.parent === undefined,
        // A store that fails here fails the attempt, which retries: the files stay where they are.
        ...(job.data.files && { files: await this.inputFiles.forThread(job.data.files, timeoutMs) }),
        signal: stop?.signal ?? signal,
        onProgress,
        log: () => this.rootLogger.child({ context: 'job', ...fields }),
        spanAttributes: { [SPAN_ATTRIBUTES.jobId]: job.id, [SPAN_ATTRIBUTES.requestId]: fields.requestId },
        ...(def.inline && { inline: { timeoutMs } }),
      };
      const { value: result, key } = def.fanOut
        ? await this.fanOut.run(job, token, def, runner.version, options)
        : await this.pool.run(def.name, runner.version, job.data.inputJson, options);
      const lost = FileLeases.uses(job.data.files, result) ? await this.fileLeases.hold(def, job.data.files, result) : [];
      if (lost.length > 0) throw new Error(`the result file(s) ${lost.join(', ')} left the blob store before their lease; the attempt is retried`);
      const finishedAt = Date.now();
      this.metrics.ended(def.name, 'completed', finishedAt - startedAt);
      if (job.data.parent) void this.notifier.childProgress(job, 100).catch(() => undefined);
      // why the thread's key, not the job's (contentKeyOf): job data could name another input's key (cache poisoning).
      if (key !== contentKeyOf(job)) log().warn({ dataKey: contentKeyOf(job), key }, "job data named another content key than its input gives; caching under the input's");
      // The cache writes, the owners' expiry and BullMQ's completion after them leave in one write (coalesceWrites).
      const caching = this.cacheWriter
        .set(key, { id: job.id!, type: def.name, result, attempts: job.attemptsMade + 1, createdAt: job.timestamp, startedAt: job.processedOn ?? startedAt, finishedAt }, def.cacheTtlSeconds, keptFor(job) >= def.cacheTtlSeconds)
        .catch((error: unknown) => log().warn({ err: error }, 'could not cache the result; the job still completes'));
      if (!this.cacheOnQueueRedis) await caching;
      // why before the completion, on its connection: the completion would drop the deduplication id.
      if (joinable && def.cacheTtlSeconds > 0 && key === job.deduplicationId) {
        const ms = Math.min(JOINABLE_AFTER_COMPLETION_MS, this.config.jobRetentionSeconds * 1000);
        void keepJoinable(this.redis, this.config.redisPrefix, job.queueName, job.id!, key, ms).catch(() => undefined);
      }
      // why: GET of the job shows BullMQ's times; the cache entry's (a cached answer's) must be the
      // same. The final notice goes right behind the completion, in its write.
      completeAt(job, finishedAt, () => this.notifier.completing(job, result, finishedAt));
      this.ownersOutlive(job, Math.max(this.config.jobRetentionSeconds, def.cacheTtlSeconds));
      if (debug) log().debug({ ms: finishedAt - startedAt }, 'job completed');
      this.metrics.completed(def.name, job.queueName, finishedAt - job.timestamp);
      return result;
    } catch (thrown) {
      // An inline run that found BullMQ's signal aborted threw its reason, a string.
      const error = def.inline && signal.aborted && thrown === signal.reason ? abortReason(signal) : thrown;
      const ms = Date.now() - startedAt;
      if (error instanceof WaitingChildrenError) {
        this.metrics.ended(def.name, 'split', ms);
        if (debug) log().debug({ chunks: job.data.chunks }, 'job split into chunks; it resumes when they finish');
        throw error;
      }
      if (error instanceof HandBack) {
        this.metrics.ended(def.name, 'handed_back', ms);
        log().warn('job handed back to the queue for another worker');
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const coded = error instanceof CodedJobError ? error : new CodedJobError(JobFailureCode.JOB_FAILED, String(error));
      this.metrics.ended(def.name, coded.code, ms);
      log().warn({ code: coded.code, ms }, `job failed: ${coded.message}`);
      throw this.failure(job, coded);
    } finally {
      stop?.dispose();
    }
  }
}
