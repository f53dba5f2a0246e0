import { Inject, Injectable } from '@nestjs/common';
import { Gauge, Registry } from 'prom-client';
import { CONFIG, type Config } from '@app/config';
import { METRICS } from '@app/metrics';
import { fairKey } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { JobQueues, QUEUE_REDIS } from '../queues/queue.providers';

const STATES = ['waiting', 'prioritized', 'delayed', 'waiting-children', 'active', 'failed', 'completed'] as const;

/** Names KEDA's ScaledObjects read (docker/kubernetes); test/deploy.e2e-spec.ts checks them against these. */
export const QUEUE_JOBS_METRIC = METRICS.queueJobs;
export const QUEUE_BACKLOG_METRIC = METRICS.queueBacklog;
/** The states counted in QUEUE_BACKLOG_METRIC. */
export const BACKLOG_STATES = ['waiting', 'prioritized', 'active'] as const satisfies readonly (typeof STATES)[number][];

type Counts = Map<string, Partial<Record<(typeof STATES)[number] | 'parked', number>>>;

/**
 * `nest_offload_queue_jobs{queue,state}`: each queue's depth, read at scrape time, and
 * `nest_offload_queue_backlog{queue}`: the work its workers must run or are running (waiting +
 * prioritized + active, and the jobs fair share parked, which BullMQ counts as delayed), the one
 * number to scale a queue's workers on (see docker/kubernetes).
 */
@Injectable()
export class QueueMetrics {
  private reading?: { at: number; counts: Promise<Counts> };

  constructor(registry: Registry, queues: JobQueues, @Inject(QUEUE_REDIS) redis: RedisClient, @Inject(CONFIG) config: Config) {
    // why one reading for both gauges: a scrape collects them one after the other; they must agree.
    const read = (): Promise<Counts> => {
      if (this.reading && Date.now() - this.reading.at < 1000) return this.reading.counts;
      const counts = Promise.all(
        queues.list().map(async (queue): Promise<[string, Record<string, number>] | undefined> => {
          const read = await Promise.all([queue.getJobCounts(...STATES), redis.zcard(fairKey(config.redisPrefix, queue.name, 'parked'))]).catch(() => undefined);
          return read && [queue.name, { ...read[0], parked: read[1] }];
        }),
      ).then((entries) => new Map(entries.filter((e) => e !== undefined)));
      this.reading = { at: Date.now(), counts };
      return counts;
    };
    new Gauge({
      name: METRICS.queueJobs,
      help: 'Jobs in each queue by state (waiting + prioritized is the backlog workers have not picked up)',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        // Redis away: a queue is left out rather than reported as zeros.
        for (const [queue, counts] of await read()) for (const state of STATES) this.set({ queue, state }, counts[state] ?? 0);
      },
    });
    new Gauge({
      name: METRICS.queueBacklog,
      help: "Jobs a queue's workers must run or are running: waiting + prioritized + active + parked by fair share (scale workers on this)",
      labelNames: ['queue'],
      registers: [registry],
      async collect() {
        for (const [queue, c] of await read()) this.set({ queue }, BACKLOG_STATES.reduce((sum, state) => sum + (c[state] ?? 0), c.parked ?? 0));
      },
    });
  }
}
