import { METRIC_PREFIX } from '@app/metrics';
import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { JobPool } from '../pool/job-pool';

/** What the worker counts: jobs by type and outcome, their run time, how many run now, the pool's state. */
@Injectable()
export class WorkerMetrics {
  private readonly finished: Counter<'type' | 'outcome'>;
  private readonly duration: Histogram<'type' | 'outcome'>;
  private running = 0;

  constructor(registry: Registry, pool: JobPool) {
    this.finished = new Counter({
      name: `${METRIC_PREFIX}jobs_finished_total`,
      help: 'Job attempts finished by this worker, by type and outcome (completed or a failure code)',
      labelNames: ['type', 'outcome'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: `${METRIC_PREFIX}job_run_seconds`,
      help: 'Time a job attempt spent on the pool, by type and outcome',
      labelNames: ['type', 'outcome'],
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 300],
      registers: [registry],
    });
    const self = this;
    new Gauge({
      name: `${METRIC_PREFIX}jobs_active`,
      help: 'Jobs this worker is running now',
      registers: [registry],
      collect() {
        this.set(self.running);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}pool_threads`,
      help: 'Live threads in the piscina pool',
      registers: [registry],
      collect() {
        this.set(pool.threads);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}pool_utilization`,
      help: 'Share of the pool threads\' capacity in use since start (piscina utilization, 0-1)',
      registers: [registry],
      collect() {
        this.set(pool.utilization);
      },
    });
  }

  get active(): number {
    return this.running;
  }

  /** Counts an attempt that ended before it reached the pool (rejected or cancelled while queued). */
  count(type: string, outcome: string): void {
    this.finished.inc({ type, outcome });
  }

  /** Starts timing one attempt; call the returned function with its outcome. */
  start(type: string): (outcome: string) => void {
    this.running++;
    const end = this.duration.startTimer({ type });
    return (outcome) => {
      this.running--;
      end({ outcome });
      this.finished.inc({ type, outcome });
    };
  }
}
