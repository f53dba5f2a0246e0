import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bullmq';
import type { RedisClient } from '@app/redis';
import { CONFIG, type Config } from '@app/config';
import { queuePrefix, WEBHOOK_QUEUE, webhookDeliveryId } from '@app/queue';
import { ApiError } from '../http/api-error';
import type { JobCallbacks } from '../jobs/submit-hooks';
import { QUEUE_REDIS } from '../queues/queue.providers';
import { keyNameOf } from '../security/caller';
import { CallbackUrlPolicy } from './callback-url';

/** One callback: what the delivery queue's job holds. */
export interface DeliveryData {
  /** The job whose final view is delivered. */
  jobId: string;
  /** The callback URL, normalized (see CallbackUrlPolicy). */
  url: string;
  /** The signed body, fixed once the job is final, so every attempt sends the same event. */
  body?: string;
  /** The submission's request id, for the delivery's log lines. */
  requestId?: string;
  /** The scope of the caller that asked for it: its key's name is in the signed body. */
  scope?: string;
}

export type DeliveryQueue = Queue<DeliveryData, void, string>;

export function deliveryQueue(connection: RedisClient, prefix: string): DeliveryQueue {
  return new Queue<DeliveryData, void, string>(WEBHOOK_QUEUE, { connection, prefix: queuePrefix(prefix, WEBHOOK_QUEUE) }).on('error', () => undefined);
}

/**
 * The submission side of webhooks: checks a `Callback-Url` before any work is queued, and registers
 * a delivery durably once the job's id is known. A delivery is a job in its own BullMQ queue,
 * whose id is derived from the job id and the URL: a retried or joined submission with the same URL
 * adds nothing, and one with another URL gets its own callback. The delivery waits for the job to
 * finish (see WebhookDispatcher), so no finish can be missed, whichever process ends the job.
 */
@Injectable()
export class WebhookDeliveries implements JobCallbacks, OnApplicationShutdown {
  private readonly policy?: CallbackUrlPolicy;
  private readonly queue?: DeliveryQueue;

  constructor(
    @Inject(QUEUE_REDIS) redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    if (!config.webhooks) return;
    this.policy = new CallbackUrlPolicy(config.webhooks);
    this.queue = deliveryQueue(redis, config.redisPrefix);
  }

  /**
   * The `Callback-Url` header as deliveries will call it, or undefined without one. A 400 problem when
   * it is refused for the caller of `scope` (see CallbackUrlPolicy) or when webhooks are off.
   */
  accept(header: string | undefined, scope: string): string | undefined {
    if (header === undefined) return undefined;
    if (!this.policy) {
      throw new ApiError('WEBHOOKS_DISABLED', 'This service sends no webhooks (WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS are not set); submit without Callback-Url');
    }
    const check = this.policy.check(header.trim(), keyNameOf(scope));
    if (!check.ok) throw new ApiError('INVALID_CALLBACK_URL', `Callback-Url refused: ${check.reason}`);
    return check.url;
  }

  /**
   * Registers one callback to `url` for each of `jobIds` (a submission's job, or a batch's), in one
   * round trip to Redis. Call it once the jobs are queued (or answered from the cache): a failure
   * here is a 503, and the client's retry joins the same jobs and registers again.
   */
  async register(jobIds: readonly string[], url: string, scope: string, requestId?: string): Promise<void> {
    const { maxAttempts } = this.config.webhooks!;
    await this.queue!.addBulk(
      jobIds.map((jobId) => ({
        name: 'deliver',
        data: { jobId, url, scope, ...(requestId ? { requestId } : {}) },
        opts: {
          jobId: webhookDeliveryId(jobId, url, scope),
          attempts: maxAttempts,
          backoff: { type: 'webhook' }, // WebhookDispatcher's strategy: exponential with jitter, or the receiver's Retry-After
          removeOnComplete: { age: this.config.jobRetentionSeconds },
          removeOnFail: { age: this.config.jobRetentionSeconds },
        },
      })),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue?.close();
  }
}
