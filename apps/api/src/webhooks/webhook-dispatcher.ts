import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq';
import { CONFIG, type Config, type WebhookConfig } from '@app/config';
import { type Logger, LOGGER } from '@app/logging';
import { queuePrefix, WEBHOOK_QUEUE } from '@app/queue';
import { RedisConnections } from '@app/redis';
import { JobNotices } from '../jobs/job-notices';
import { JobOwners } from '../jobs/job-owners';
import { JobStore } from '../jobs/job-store';
import { JobQueues } from '../queues/queue.providers';
import { ANONYMOUS, keyNameOf } from '../security/caller';
import { isFinal, type JobView } from '../jobs/job-view';
import { CallbackUrlPolicy } from './callback-url';
import { type DeliveryData, type DeliveryQueue, deliveryQueue } from './webhook-deliveries';
import { webhookBody } from './webhook-payload';
import { WebhookSender } from './webhook-sender';
import { WebhookMetrics } from './webhook.metrics';

/** Deliveries one API replica sends at once (each is a socket waiting on a receiver). */
const CONCURRENCY = 32;
/** Re-checks of a job not yet finished: after as long as it has waited, within these bounds. */
const RECHECK_MIN_MS = 1000;
const RECHECK_MAX_MS = 60_000;
/** Longest Retry-After a receiver can ask for. */
const RETRY_AFTER_MAX_MS = 3_600_000;
/** Jobs this replica listens to for the deliveries waiting on them; past it, re-checks alone find them. */
const WATCHED_MAX = 100_000;

type DeliveryJob = Job<DeliveryData, void, string>;

/** A delivery that ended for good; already counted and logged. */
class GaveUp extends UnrecoverableError {}

/** A failed attempt that will be retried; already counted and logged. */
class AttemptFailed extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

interface Watch {
  settled: boolean;
  stop(): void;
}

/**
 * Sends webhooks from the `_webhooks` queue, in the API process. A delivery first waits for its job
 * to be final: it reads the view, and while the job runs it goes back to the delayed set, re-checked
 * after as long as it has waited (1 s … 60 s), and woken at once by the notice of its end
 * (completed, failed, JOB_LOST, or removed by a cancel) that reaches this replica as one of the
 * job's watchers (see JobNotices). Then it fixes the signed body and POSTs it, retrying with
 * exponential backoff for WEBHOOK_MAX_ATTEMPTS.
 *
 * why the API: it is the I/O tier and already waits on jobs for its clients, so a finish reaches a
 * waiting delivery the way it reaches a `Prefer: wait`; the workers' event loops stay for lock
 * renewals and their network needs no way out. A replica that dies mid-delivery leaves it
 * active; its lock lapses (JOB_LOCK_MS) and another replica sends it again: at least once.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private worker?: Worker<DeliveryData, void, string>;
  private queue?: DeliveryQueue;
  private sender?: WebhookSender;
  private policy?: CallbackUrlPolicy;
  private readonly watching = new Map<string, Watch>();
  private readonly logger: Logger;

  constructor(
    private readonly store: JobStore,
    private readonly owners: JobOwners,
    private readonly notices: JobNotices,
    private readonly queues: JobQueues,
    private readonly metrics: WebhookMetrics,
    private readonly connections: RedisConnections,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: WebhookDispatcher.name });
  }

  onApplicationBootstrap(): void {
    const webhooks = this.config.webhooks;
    if (!webhooks) return;
    this.policy = new CallbackUrlPolicy(webhooks);
    this.sender = new WebhookSender(webhooks);
    const connection = this.connections.open('webhooks', this.config.queueRedis, 'durable', 'nest-offload:api-webhooks');
    this.queue = deliveryQueue(connection, this.config.redisPrefix);
    this.worker = new Worker<DeliveryData, void, string>(WEBHOOK_QUEUE, (job, token) => this.deliver(job, token!), {
      connection,
      prefix: queuePrefix(this.config.redisPrefix, WEBHOOK_QUEUE),
      concurrency: CONCURRENCY,
      lockDuration: this.config.jobLockMs,
      stalledInterval: this.config.jobLockMs,
      // why more than BullMQ's 1: a delivery only stalls when its replica dies; it is sent again, never failed for it.
      maxStalledCount: 10,
      settings: { backoffStrategy: (attemptsMade: number, _type?: string, error?: Error) => this.backoff(webhooks, attemptsMade, error) },
    })
      .on('error', (error) => this.logger.warn({ err: error }, 'webhook worker error'))
      .on('failed', (job, error) => {
        // Ours are logged where they happen; anything else (Redis away mid-step) is retried like an attempt.
        if (!(error instanceof GaveUp || error instanceof AttemptFailed)) this.logger.warn({ err: error, deliveryId: job?.id }, 'webhook delivery step failed; it will be retried');
      });
  }

  async onApplicationShutdown(): Promise<void> {
    // why close waits: deliveries in flight finish (each within WEBHOOK_TIMEOUT_MS); waiting ones stay in Redis.
    // Their connection closes after this, with the others (RedisConnections).
    await this.worker?.close();
    for (const watch of this.watching.values()) watch.stop();
    this.sender?.close();
    await this.queue?.close();
  }

  private async deliver(job: DeliveryJob, token: string): Promise<void> {
    const { jobId, url, requestId, scope } = job.data;
    const keyName = scope === undefined ? undefined : keyNameOf(scope);
    const log = this.logger.child({ deliveryId: job.id, jobId, requestId, caller: keyName, host: new URL(url).host });
    let body = job.data.body;
    if (body === undefined) {
      const view = await this.finalView(job, token, log);
      // A caller that withdrew from the job (DELETE while others still wait for it) is not told how it ended.
      if (scope !== undefined && !(await this.owners.owns(jobId, scope))) {
        this.metrics.ended('withdrawn');
        log.info('webhook dropped: the caller withdrew from the job');
        return;
      }
      // The caller's own tags (Job-Tags), as its view shows them.
      const tags = await this.owners.tagsOf(jobId, scope ?? ANONYMOUS.scope);
      body = webhookBody(tags ? { ...view, tags } : view, keyName);
      await job.updateData({ ...job.data, body });
    }
    const attempt = job.attemptsMade + 1;
    // The allowed hosts may have changed since the submission (a new release): check again.
    const check = this.policy!.check(url, keyName);
    const result = check.ok ? await this.sender!.send(url, job.id!, body) : { outcome: 'refused' as const, detail: check.reason, ms: 0 };
    this.metrics.attempt(result.outcome, result.ms);
    const fields = { attempt, outcome: result.outcome, status: result.status, ms: Math.round(result.ms) };
    if (result.outcome === 'delivered') {
      this.metrics.ended('delivered');
      log.info(fields, 'webhook delivered');
      return;
    }
    const final = result.outcome === 'refused' || result.outcome === 'gone' || attempt >= (job.opts.attempts ?? 1);
    if (final) {
      this.metrics.ended(result.outcome === 'refused' ? 'refused' : 'gave_up');
      log.error({ ...fields, detail: result.detail }, 'webhook delivery gave up');
      throw new GaveUp(result.detail);
    }
    log.warn({ ...fields, detail: result.detail }, 'webhook attempt failed; it will be retried');
    throw new AttemptFailed(result.detail, result.retryAfterMs);
  }

  /** The job's final view; else moves the delivery back to wait for it, and throws DelayedError. */
  private async finalView(job: DeliveryJob, token: string, log: Logger): Promise<JobView> {
    const { jobId } = job.data;
    // why listen before reading: a finish between the read and the move back is not missed.
    const watch = this.watch(jobId, job.id!);
    // why not fail on a read error: waiting for the job is not a delivery attempt; look again soon.
    const view = await this.watchedView(jobId).catch((error: unknown) => {
      log.warn({ err: error }, 'could not read the job for its webhook; looking again shortly');
      return null;
    });
    if (view && isFinal(view)) {
      this.unwatch(job.id!);
      return view;
    }
    const waited = Date.now() - job.timestamp;
    if (view === undefined && waited > this.config.jobRetentionSeconds * 1000) {
      this.unwatch(job.id!);
      this.metrics.ended('job_unknown');
      log.error({ waitedMs: waited }, 'webhook delivery gave up: the job is unknown');
      throw new GaveUp(`job ${jobId} is unknown`);
    }
    // A job that settled but is not found yet (a cancel writes its view just after the removal) is read again in 1 s.
    const delay = watch.settled || view === null ? RECHECK_MIN_MS : Math.min(Math.max(waited, RECHECK_MIN_MS), RECHECK_MAX_MS);
    await job.moveToDelayed(Date.now() + delay, token);
    // It finished while we looked: the wake-up found the delivery still active, so move it on now.
    if (watch.settled && view) await job.promote().catch(() => undefined);
    throw new DelayedError();
  }

  private watch(jobId: string, deliveryId: string): Watch {
    const known = this.watching.get(deliveryId);
    if (known) return known;
    if (this.watching.size >= WATCHED_MAX) this.unwatch(this.watching.keys().next().value!);
    const watch: Watch = { settled: false, stop: () => undefined };
    watch.stop = this.notices.subscribe(jobId, (event) => {
      if (event.kind === 'progress') return;
      watch.settled = true;
      this.unwatch(deliveryId);
      void this.wake(deliveryId);
    });
    this.watching.set(deliveryId, watch);
    return watch;
  }

  /** Job `jobId`'s view, read once this replica is one of its watchers (its end then reaches `watch`). */
  private async watchedView(jobId: string): Promise<JobView | undefined> {
    const queue = await this.queues.locate(jobId);
    if (queue) await this.notices.register(queue.name, jobId);
    return this.store.view(jobId, undefined, queue);
  }

  private unwatch(deliveryId: string): void {
    this.watching.get(deliveryId)?.stop();
    this.watching.delete(deliveryId);
  }

  /** Moves a delivery waiting in the delayed set to the front; harmless when it is not there. */
  private async wake(deliveryId: string): Promise<void> {
    await (await this.queue!.getJob(deliveryId).catch(() => undefined))?.promote().catch(() => undefined);
  }

  /** Exponential backoff with 20% jitter (Standard Webhooks recommends both), or the receiver's Retry-After when longer. */
  private backoff(webhooks: WebhookConfig, attemptsMade: number, error?: Error): number {
    const exponential = webhooks.backoffMs * 2 ** Math.max(attemptsMade - 1, 0) * (0.8 + 0.2 * Math.random());
    const asked = error instanceof AttemptFailed ? Math.min(error.retryAfterMs ?? 0, RETRY_AFTER_MAX_MS) : 0;
    return Math.round(Math.max(exponential, asked));
  }
}
