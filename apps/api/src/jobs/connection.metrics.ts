import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '@app/redis';
import { Registry } from 'prom-client';
import { CACHE_REDIS } from '@app/cache';
import { registerRedisMetrics } from '@app/metrics';
import { JobNotices } from './job-notices';
import { QUEUE_REDIS } from '../queues/queue.providers';

/** `nest_offload_redis_connected{connection}` for the API's connections: queue, cache, events (the job notices' subscriber). */
@Injectable()
export class ConnectionMetrics {
  constructor(registry: Registry, @Inject(QUEUE_REDIS) queue: RedisClient, @Inject(CACHE_REDIS) cache: RedisClient, notices: JobNotices) {
    registerRedisMetrics(registry, [
      { role: 'queue', redis: queue },
      { role: 'cache', redis: cache },
      { role: 'events', redis: notices.connection },
    ]);
  }
}
