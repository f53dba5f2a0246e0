import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '@app/redis';
import { Registry } from 'prom-client';
import { CACHE_REDIS } from '@app/cache';
import { registerRedisMetrics } from '@app/metrics';
import { CancelListener } from './cancel.listener';
import { WORKER_REDIS } from './worker-redis';

/** `nest_offload_redis_connected{connection}` for the worker's connections: queue, cache, cancel. */
@Injectable()
export class ConnectionMetrics {
  constructor(registry: Registry, @Inject(WORKER_REDIS) queue: RedisClient, @Inject(CACHE_REDIS) cache: RedisClient, cancel: CancelListener) {
    registerRedisMetrics(registry, [
      { role: 'queue', redis: queue },
      { role: 'cache', redis: cache },
      { role: 'cancel', redis: cancel.connection },
    ]);
  }
}
