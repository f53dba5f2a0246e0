import { Inject, Injectable } from '@nestjs/common';
import type IORedis from 'ioredis';
import { Registry } from 'prom-client';
import { CACHE_REDIS } from '@app/cache';
import { registerRedisMetrics } from '@app/metrics';
import { JobEvents } from './job-events';
import { QUEUE_REDIS } from './queue.providers';

/** `nest_offload_redis_connected{connection}` for the API's connections: queue, cache, events. */
@Injectable()
export class ConnectionMetrics {
  constructor(registry: Registry, @Inject(QUEUE_REDIS) queue: IORedis, @Inject(CACHE_REDIS) cache: IORedis, events: JobEvents) {
    registerRedisMetrics(registry, [
      { role: 'queue', redis: queue },
      { role: 'cache', redis: cache },
      ...events.connections.map((redis) => ({ role: 'events', redis })),
    ]);
  }
}
