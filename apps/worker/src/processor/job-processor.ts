import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Job, UnrecoverableError, WaitingError, Worker } from 'bullmq';
import type IORedis from 'ioredis';
import { ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { CodedJobError, formatFailure, JobFailureCode, JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { JOBS_QUEUE, JobData, queueKeys } from '@app/queue';
import { JobPool } from '../pool/job-pool';
import { WorkerMetrics } from './worker.metrics';

/** Injection token of the worker's durable queue-Redis connection. */
export const WORKER_REDIS = Symbol('WORKER_REDIS');

/** Abort reason for jobs handed back to the queue at shutdown (see `drain`). */
const HAND_BACK = 'nest-offload:hand-back';

/** Failures that would fail again: retrying only wastes a thread. */
const FINAL_FAILURES = new Set<string>([
  JobFailureCode.JOB_TIMEOUT,
  JobFailureCode.JOB_CANCELLED,
  JobFailureCode.JOB_OUT_OF_MEMORY,
  JobFailureCode.JOB_REJECTED,
]);

class HandBack extends Error {}

/**
 * The BullMQ consumer. Its event loop only moves data: job code runs on the pool, so lock renewals,
 * progress, cancellation and probes stay prompt however heavy the jobs are.
 */
@Injectable()
export class JobProcessor implements OnApplicationBootstrap {
  private worker?: Worker<JobData, unknown, string>;
  private readonly keys: ReturnType<typeof queueKeys>;
  private readonly logger: Logger;

  constructor(
    private readonly registry: JobRegistry,
    private readonly pool: JobPool,
    private readonly cache: ResultCache,
    private readonly metrics: WorkerMetrics,
    @Inject(WORKER_REDIS) private readonly redis: IORedis,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: JobProcessor.name });
    this.keys = queueKeys(config.redisPrefix);
  }

  onApplicationBootstrap(): void {
    this.worker = new Worker<JobData, unknown, string>(JOBS_QUEUE, (job, token, signal) => this.process(job, token!, signal!), {
      connection: this.redis,
      prefix: this.config.redisPrefix,
      // why: one job per pool thread. Taking more would hoard jobs other replicas could run now.
      concurrency: this.config.workerThreads,
      lockDuration: this.config.jobLockMs,
      stalledInterval: this.config.jobLockMs,
    });
    this.worker.on('error', (error) => this.logger.warn({ err: error }, 'BullMQ worker error'));
  }

  get running(): boolean {
    return this.worker?.isRunning() ?? false;
  }

  get activeJobs(): number {
    return this.metrics.active;
  }

  /** Aborts job `id` if this worker runs it (a cancel request from the API). */
  cancel(id: string): boolean {
    return this.worker?.cancelJob(id, 'cancelled by request') ?? false;
  }

  /**
   * Stops taking jobs and lets the active ones finish for up to `deadlineMs`; then aborts the rest
   * and hands them back to the queue, so another worker runs them at once.
   */
  async drain(deadlineMs: number): Promise<void> {
    if (!this.worker) return;
    const closing = this.worker.close();
    let timer: NodeJS.Timeout | undefined;
    const expired = await Promise.race([
      closing.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (expired) {
      this.logger.warn({ active: this.metrics.active }, 'shutdown deadline reached: handing active jobs back to the queue');
      this.worker.cancelAllJobs(HAND_BACK);
      await closing;
    }
  }

  private async process(job: Job<JobData, unknown, string>, token: string, signal: AbortSignal): Promise<unknown> {
    const log = this.logger.child({ jobId: job.id, type: job.name, requestId: job.data.requestId, attempt: job.attemptsMade + 1 });
    const refuse = (code: JobFailureCode, message: string) => {
      this.metrics.count(job.name, code);
      log.warn({ code }, `job failed: ${message}`);
      return new UnrecoverableError(formatFailure(code, message));
    };
    const def = this.registry.get(job.name);
    if (!def) throw refuse(JobFailureCode.JOB_REJECTED, `this worker has no job type "${job.name}"`);
    if (job.data.version !== def.version) {
      throw refuse(JobFailureCode.JOB_REJECTED, `job is for ${def.name} v${job.data.version}; this worker runs v${def.version}`);
    }
    const [cancelled, cached] = await Promise.all([
      this.redis.exists(this.keys.cancelMarker(job.id!)),
      def.cacheTtlSeconds > 0 ? this.cache.get(job.data.key).catch(() => undefined) : undefined,
    ]);
    if (cancelled) throw refuse(JobFailureCode.JOB_CANCELLED, 'cancelled before it started');
    // why: an identical job finished between the API's cache check and this pickup; reuse its result.
    if (cached) return cached.result;

    const timeoutMs = Math.min(def.timeoutMs, this.config.jobTimeoutMs);
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new CodedJobError(JobFailureCode.JOB_TIMEOUT, `the job ran longer than ${timeoutMs} ms; its thread was terminated`)),
      timeoutMs,
    );
    const onAbort = () =>
      abort.abort(signal.reason === HAND_BACK ? new HandBack() : new CodedJobError(JobFailureCode.JOB_CANCELLED, 'cancelled while running'));
    signal.addEventListener('abort', onAbort, { once: true });

    const startedAt = Date.now();
    const stopTimer = this.metrics.start(def.name);
    log.info('job started');
    try {
      const result = await this.pool.run(def.name, job.data.inputJson, {
        attempt: job.attemptsMade + 1,
        signal: abort.signal,
        onProgress: (percent) => void job.updateProgress(percent).catch(() => undefined),
      });
      stopTimer('completed');
      await this.cache
        .set(job.data.key, { id: job.id!, type: def.name, result, attempts: job.attemptsMade + 1, createdAt: job.timestamp, startedAt, finishedAt: Date.now() }, def.cacheTtlSeconds)
        .catch((error: unknown) => log.warn({ err: error }, 'could not cache the result; the job still completes'));
      log.info({ ms: Date.now() - startedAt }, 'job completed');
      return result;
    } catch (error) {
      if (error instanceof HandBack) {
        stopTimer('handed_back');
        log.warn('job handed back to the queue for another worker');
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const coded = error instanceof CodedJobError ? error : new CodedJobError(JobFailureCode.JOB_FAILED, String(error));
      stopTimer(coded.code);
      log.warn({ code: coded.code, ms: Date.now() - startedAt }, `job failed: ${coded.message}`);
      if (FINAL_FAILURES.has(coded.code)) throw new UnrecoverableError(coded.message);
      throw coded;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }
}
