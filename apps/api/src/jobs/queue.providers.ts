import { Inject, Injectable, OnApplicationShutdown, Provider } from '@nestjs/common';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { JobData, queuePrefix } from '@app/queue';
import { closeRedis, createRedis } from '@app/redis';
import { type Tracing, TRACING } from '@app/tracing';

/** Injection token of the API's queue-Redis connection (fail-fast: see RedisRole). */
export const QUEUE_REDIS = Symbol('QUEUE_REDIS');

export type JobsQueue = Queue<JobData, unknown, string>;

/**
 * The BullMQ queues the registered job types go to, by name. They share the API's request
 * connection; each has its own key prefix and hash tag (see queuePrefix).
 */
export class JobQueues {
  private readonly byName = new Map<string, JobsQueue>();

  constructor(
    registry: JobRegistry,
    private readonly redis: IORedis,
    config: Config,
    tracing?: Tracing | null,
  ) {
    for (const name of registry.queues()) {
      const queue = new Queue<JobData, unknown, string>(name, {
        connection: redis,
        prefix: queuePrefix(config.redisPrefix, name),
        // why: BullMQ's producer span, and the trace context it stores in the job for the worker.
        telemetry: tracing?.telemetry,
      });
      // why: failures reach callers through rejected commands (→ 503) and readiness; nothing to add here.
      this.byName.set(name, queue.on('error', () => undefined));
    }
  }

  /** The queue of a registered type's queue name. */
  get(name: string): JobsQueue {
    const queue = this.byName.get(name);
    if (!queue) throw new Error(`no queue named "${name}"`);
    return queue;
  }

  list(): JobsQueue[] {
    return [...this.byName.values()];
  }

  /**
   * The queue that holds job `id`, if one still does. why ask each: ids are plain UUIDs that clients
   * already hold; with one queue (the common case) this costs nothing, and with several one EXISTS
   * per queue, sent together.
   */
  async locate(id: string): Promise<JobsQueue | undefined> {
    const queues = this.list();
    if (queues.length === 1) return queues[0];
    const found = await Promise.all(queues.map((queue) => this.redis.exists(queue.toKey(id))));
    return queues[found.findIndex((n) => n === 1)];
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.list().map((queue) => queue.close()));
  }
}

export const queueProviders: Provider[] = [
  {
    provide: QUEUE_REDIS,
    inject: [CONFIG],
    useFactory: (config: Config) => createRedis(config.redisUrl, 'request', 'nest-offload:api'),
  },
  {
    provide: JobQueues,
    inject: [JobRegistry, QUEUE_REDIS, CONFIG, TRACING],
    useFactory: (registry: JobRegistry, redis: IORedis, config: Config, tracing: Tracing | null) => new JobQueues(registry, redis, config, tracing),
  },
];

/** Closes the queues and their connection after the HTTP server has drained (Nest's last shutdown hook). */
@Injectable()
export class QueueCloser implements OnApplicationShutdown {
  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: IORedis,
    private readonly queues: JobQueues,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.queues.close();
    await closeRedis(this.redis);
  }
}
