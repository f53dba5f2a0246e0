import { Inject, Injectable } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Gauge, Registry } from 'prom-client';
import type { JobsQueue } from './queue.providers';

const STATES = ['waiting', 'prioritized', 'delayed', 'active', 'failed', 'completed'] as const;

/** `nest_offload_queue_jobs{state}`: the shared queue's depth, read at scrape time (the signal to scale workers on). */
@Injectable()
export class QueueMetrics {
  constructor(registry: Registry, @Inject(Queue) queue: JobsQueue) {
    new Gauge({
      name: 'nest_offload_queue_jobs',
      help: 'Jobs in the shared queue by state (waiting + prioritized is the backlog workers have not picked up)',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const counts = await queue.getJobCounts(...STATES).catch(() => undefined);
        if (!counts) return; // Redis away: report nothing rather than zeros
        for (const state of STATES) this.set({ state }, counts[state] ?? 0);
      },
    });
  }
}
