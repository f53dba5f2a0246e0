import { Inject, Injectable, OnApplicationShutdown, Provider } from '@nestjs/common';
import { Queue, QueueEvents } from 'bullmq';
import type IORedis from 'ioredis';
import { CONFIG, type Config } from '@app/config';
import { JOBS_QUEUE, JobData } from '@app/queue';
import { closeRedis, createRedis } from '@app/redis';

/** Injection token of the API's queue-Redis connection (fail-fast: see RedisRole). */
export const QUEUE_REDIS = Symbol('QUEUE_REDIS');
/** The blocking connection on which QueueEvents reads the event stream. */
const EVENTS_REDIS = Symbol('EVENTS_REDIS');

export type JobsQueue = Queue<JobData, unknown, string>;

export const queueProviders: Provider[] = [
  {
    provide: QUEUE_REDIS,
    inject: [CONFIG],
    useFactory: (config: Config) => createRedis(config.redisUrl, 'request', 'nest-offload:api'),
  },
  {
    provide: Queue,
    inject: [QUEUE_REDIS, CONFIG],
    useFactory: (redis: IORedis, config: Config): JobsQueue =>
      new Queue<JobData, unknown, string>(JOBS_QUEUE, { connection: redis, prefix: config.redisPrefix }).on('error', () => {
        // why: failures reach callers through rejected commands (→ 503) and readiness; nothing to add here.
      }),
  },
  {
    provide: EVENTS_REDIS,
    inject: [CONFIG],
    // why: QueueEvents holds a blocking XREAD open, so it gets a connection of its own.
    useFactory: (config: Config) => createRedis(config.redisUrl, 'blocking', 'nest-offload:api-events'),
  },
  {
    provide: QueueEvents,
    inject: [EVENTS_REDIS, CONFIG],
    useFactory: (redis: IORedis, config: Config) =>
      new QueueEvents(JOBS_QUEUE, { connection: redis, prefix: config.redisPrefix }).on('error', () => undefined),
  },
];

/** Closes the queue connections after the HTTP server has drained (Nest's last shutdown hook). */
@Injectable()
export class QueueCloser implements OnApplicationShutdown {
  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: IORedis,
    @Inject(EVENTS_REDIS) private readonly eventsRedis: IORedis,
    @Inject(Queue) private readonly queue: JobsQueue,
    private readonly events: QueueEvents,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.queue.close(), this.events.close()]);
    await Promise.allSettled([closeRedis(this.redis), closeRedis(this.eventsRedis)]);
  }
}
