import { Injectable } from '@nestjs/common';
import type { JobsQueue } from './queue.providers';

/** How long one reading of a queue's backlog serves every submission on this replica. */
const FRESH_MS = 250;

/**
 * The number of jobs waiting for a worker in each queue, for admission control (MAX_BACKLOG per
 * queue). why cached: counting runs a Lua script; doing it once per 250 ms instead of once per
 * submission measured ×1.16 on trivial jobs. A flood can overshoot the limit by what arrives in
 * that window, which is fine for a guard whose purpose is to keep Redis from filling up.
 */
@Injectable()
export class Backlog {
  private readonly readings = new Map<JobsQueue, { at: number; count: Promise<number> }>();

  /** Jobs waiting for a worker in `queue`: waiting and prioritized (not delayed retries). */
  waiting(queue: JobsQueue): Promise<number> {
    const now = Date.now();
    const last = this.readings.get(queue);
    if (last && now - last.at <= FRESH_MS) return last.count;
    const reading = { at: now, count: queue.getJobCountByTypes('waiting', 'prioritized') };
    this.readings.set(queue, reading);
    // A failed reading must not be served to the next caller.
    reading.count.catch(() => (reading.at = 0));
    return reading.count;
  }
}
