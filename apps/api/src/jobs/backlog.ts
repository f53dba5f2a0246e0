import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { fairKey } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { type JobsQueue, QUEUE_REDIS } from '../queues/queue.providers';

/** How long one reading of a queue's backlog serves every submission on this replica. */
const FRESH_MS = 250;

interface Reading {
  at: number;
  count: Promise<number>;
  /** Jobs this replica admitted since the reading, which the reading does not include yet. */
  admitted: number;
}

/**
 * The number of jobs waiting for a worker in each queue, for admission control (MAX_BACKLOG per
 * queue, counted in jobs: a batch of 1000 counts 1000). why cached: counting runs a Lua script;
 * doing it once per 250 ms instead of once per submission measured ×1.16 on trivial jobs. What this
 * replica admits in between is added to the reading, so one replica cannot overshoot the limit; a
 * flood across replicas can, by what the others admit in that window, which is fine for a guard
 * whose purpose is to keep Redis from filling up.
 */
@Injectable()
export class Backlog {
  private readonly readings = new Map<JobsQueue, Reading>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
  ) {}

  /**
   * How many of `wanted` new jobs `queue` takes now (the first ones of a batch go first), and the
   * backlog that decided it. Admitted jobs count against the limit until the next reading.
   */
  async admit(queue: JobsQueue, wanted: number): Promise<{ admitted: number; backlog: number }> {
    const reading = this.reading(queue);
    const backlog = (await reading.count) + reading.admitted;
    const admitted = Math.max(0, Math.min(wanted, this.config.maxBacklog - backlog));
    reading.admitted += admitted;
    return { admitted, backlog };
  }

  /** Jobs waiting for a worker in `queue`: waiting, prioritized and parked by fair share (not delayed retries). */
  private reading(queue: JobsQueue): Reading {
    const now = Date.now();
    const last = this.readings.get(queue);
    if (last && now - last.at <= FRESH_MS) return last;
    const count = Promise.all([queue.getJobCountByTypes('waiting', 'prioritized'), this.redis.zcard(fairKey(this.config.redisPrefix, queue.name, 'parked'))]).then(([bull, parked]) => bull + parked);
    const reading: Reading = { at: now, count, admitted: 0 };
    this.readings.set(queue, reading);
    // A failed reading must not be served to the next caller.
    reading.count.catch(() => (reading.at = 0));
    return reading;
  }
}
