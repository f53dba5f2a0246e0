import { OnApplicationShutdown, Provider } from '@nestjs/common';
import { Queue } from 'bullmq';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { JobData, queuePrefix } from '@app/queue';
import { type RedisClient, RedisConnections } from '@app/redis';
import { type Tracing, TRACING } from '@app/tracing';

/** Injection token of the API's queue-Redis connection (fail-fast: see RedisRole). */
export const QUEUE_REDIS = Symbol('QUEUE_REDIS');
/**
 * Injection token of the connection submissions are added through: QUEUE_REDIS, or with
 * REDIS_MIN_REPLICAS_ACK a connection of their own. why its own: Redis WAIT blocks the connection
 * it is sent on (for up to a second when replicas lag), and reads and the readiness ping must not
 * queue behind it.
 */
export const SUBMIT_REDIS = Symbol('SUBMIT_REDIS');

export type JobsQueue = Queue<JobData, unknown, string>;

/**
 * The BullMQ queues the registered job types go to, by name. They share the API's request
 * connection (submissions the SUBMIT_REDIS one); each has its own key prefix and hash tag (see
 * queuePrefix). Closed at shutdown, after the HTTP server has drained and before RedisConnections
 * closes their connections.
 */
export class JobQueues implements OnApplicationShutdown {
  private readonly byName = new Map<string, JobsQueue>();
  private readonly submitters = new Map<string, JobsQueue>();

  constructor(
    registry: JobRegistry,
    private readonly redis: RedisClient,
    /** The connection submissions are added through (see SUBMIT_REDIS). */
    readonly submitConnection: RedisClient,
    config: Config,
    tracing?: Tracing | null,
  ) {
    const open = (name: string, connection: RedisClient) =>
      new Queue<JobData, unknown, string>(name, {
        connection,
        prefix: queuePrefix(config.redisPrefix, name),
        // why: BullMQ's producer span, and the trace context it stores in the job for the worker.
        telemetry: tracing?.telemetry,
      })
        // why: failures reach callers through rejected commands (→ 503) and readiness; nothing to add here.
        .on('error', () => undefined);
    for (const name of registry.queues()) {
      const queue = open(name, redis);
      this.byName.set(name, queue);
      this.submitters.set(name, submitConnection === redis ? queue : open(name, submitConnection));
    }
  }

  /** The queue to add jobs of queue `name` to (on SUBMIT_REDIS). */
  submitter(name: string): JobsQueue {
    const queue = this.submitters.get(name);
    if (!queue) throw new Error(`no queue named "${name}"`);
    return queue;
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

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...new Set([...this.byName.values(), ...this.submitters.values()])].map((queue) => queue.close()));
  }
}

export const queueProviders: Provider[] = [
  {
    provide: QUEUE_REDIS,
    inject: [CONFIG, RedisConnections],
    useFactory: (config: Config, connections: RedisConnections) => connections.open('queue', config.queueRedis, 'request', 'nest-offload:api'),
  },
  {
    provide: SUBMIT_REDIS,
    inject: [CONFIG, RedisConnections, QUEUE_REDIS],
    useFactory: (config: Config, connections: RedisConnections, redis: RedisClient) =>
      config.redisMinReplicasAck > 0 ? connections.open('submit', config.queueRedis, 'request', 'nest-offload:api-submit') : redis,
  },
  {
    provide: JobQueues,
    inject: [JobRegistry, QUEUE_REDIS, SUBMIT_REDIS, CONFIG, TRACING],
    useFactory: (registry: JobRegistry, redis: RedisClient, submitRedis: RedisClient, config: Config, tracing: Tracing | null) =>
      new JobQueues(registry, redis, submitRedis, config, tracing),
  },
];
