import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Registry } from 'prom-client';
import type { RedisTarget } from '@app/config';
import { registerRedisMetrics } from '@app/metrics';
import { closeRedis, createRedis, type RedisClient, type RedisRole } from './redis.factory';

/**
 * Every Redis connection of the process: opened here, reported here as
 * `nest_offload_redis_connected{connection}`, and closed here, newest first, after every other
 * shutdown hook (see RedisModule): the BullMQ queues and workers on them have let go by then.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly opened: Array<{ connection: string; client: RedisClient }> = [];

  constructor(metrics: Registry) {
    registerRedisMetrics(metrics, this.opened);
  }

  /**
   * Opens a connection to `target` for `role` (see RedisRole), named `name` in Redis (CLIENT LIST),
   * reported under `connection` in the metric.
   */
  open(connection: string, target: RedisTarget, role: RedisRole, name: string): RedisClient {
    const client = createRedis(target, role, name);
    this.opened.push({ connection, client });
    return client;
  }

  async onApplicationShutdown(): Promise<void> {
    // why newest first, one at a time: what was opened on top of the queue connection (subscribers,
    // the webhooks' connection) stops before it; the connection everything started on goes last.
    for (const { client } of this.opened.toReversed()) await closeRedis(client);
  }
}
