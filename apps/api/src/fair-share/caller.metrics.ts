import { Inject, Injectable } from '@nestjs/common';
import { Gauge, Registry } from 'prom-client';
import { CONFIG, type Config } from '@app/config';
import { METRICS } from '@app/metrics';
import { callerShares } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { JobQueues, QUEUE_REDIS } from '../queues/queue.providers';

/**
 * `nest_offload_caller_jobs{queue,caller,state}`: each API key's jobs waiting in its share of each
 * queue and running (released, not finished), read at scrape time. The caller label is the key's
 * name, so the series are bounded by API_KEYS.
 */
@Injectable()
export class CallerMetrics {
  constructor(registry: Registry, queues: JobQueues, @Inject(QUEUE_REDIS) redis: RedisClient, @Inject(CONFIG) config: Config) {
    new Gauge({
      name: METRICS.callerJobs,
      help: "Each API key's jobs waiting in its fair share of a queue, and running (released, not finished)",
      labelNames: ['queue', 'caller', 'state'],
      registers: [registry],
      async collect() {
        for (const queue of queues.list()) {
          // Redis away: the queue is left out rather than reported as zeros.
          const shares = await callerShares(redis, config.redisPrefix, queue.name).catch(() => []);
          for (const { caller, waiting, running } of shares) {
            this.set({ queue: queue.name, caller, state: 'waiting' }, waiting);
            this.set({ queue: queue.name, caller, state: 'running' }, running);
          }
        }
      },
    });
  }
}
