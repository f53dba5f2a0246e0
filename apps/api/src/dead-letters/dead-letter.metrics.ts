import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';
import { JobRegistry } from '@app/jobs';
import { METRICS } from '@app/metrics';

/** `nest_offload_dead_letters_replayed_total{type}`: dead letters replayed as new jobs; every series starts at 0. */
@Injectable()
export class DeadLetterMetrics {
  private readonly counter: Counter<'type'>;

  constructor(metrics: Registry, jobs: JobRegistry) {
    this.counter = new Counter({
      name: METRICS.deadLettersReplayed,
      help: 'Dead letters (jobs that failed for good) replayed as new jobs by POST /admin/dead-letters/replay, by type',
      labelNames: ['type'],
      registers: [metrics],
    });
    for (const { name: type } of jobs.list()) this.counter.inc({ type }, 0);
  }

  replayed(type: string): void {
    this.counter.inc({ type });
  }
}
