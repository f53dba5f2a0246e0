import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Registry } from 'prom-client';
import { JobRegistry } from '@app/jobs';
import { BoundCounter, BoundHistogram, type BoundObserver, type BoundSeries, METRICS } from '@app/metrics';
import { JobPool, REPLACEMENT_REASONS } from '../pool/job-pool';

/** Seconds from queued to started, and to completed: from a few ms on an idle queue to a long backlog. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** A series per label pair, bound on first use and kept (see BoundCounter: no allocation per job). */
class Series<T> {
  private readonly byFirst = new Map<string, Map<string, T>>();

  constructor(private readonly bind: (a: string, b: string) => T) {}

  of(a: string, b: string): T {
    let byB = this.byFirst.get(a);
    if (!byB) this.byFirst.set(a, (byB = new Map()));
    let series = byB.get(b);
    if (!series) byB.set(b, (series = this.bind(a, b)));
    return series;
  }
}

/**
 * What the worker counts: jobs by type and outcome, their run, wait and end-to-end times, how many
 * run now, the pool's state and its thread replacements. Per job it does arithmetic on series bound
 * once per label set.
 */
@Injectable()
export class WorkerMetrics {
  private readonly finished: Series<BoundSeries>;
  private readonly duration: Series<BoundObserver>;
  private readonly wait: Series<BoundObserver>;
  private readonly endToEnd: Series<BoundObserver>;
  private readonly expiredJobs = new Map<string, BoundSeries>();
  private running = 0;

  constructor(registry: Registry, pool: JobPool, jobs: JobRegistry) {
    const expired = new BoundCounter({
      name: METRICS.jobsExpired,
      help: 'Jobs that ended expired, never started: by type (API: removed while queued; worker: found past the deadline when picked up)',
      labelNames: ['type'],
      registers: [registry],
    });
    // Every series from 0, so the API's and the workers' counts add up in a ratio from the start.
    for (const { name: type } of jobs.list()) this.expiredJobs.set(type, expired.bind({ type }));
    const finished = new BoundCounter({
      name: METRICS.jobsFinished,
      help: 'Job attempts finished by this worker, by type and outcome (completed or a failure code)',
      labelNames: ['type', 'outcome'],
      registers: [registry],
    });
    this.finished = new Series((type, outcome) => finished.bind({ type, outcome }));
    const duration = new BoundHistogram({
      name: METRICS.jobRun,
      help: 'Time a job attempt spent on the pool, by type and outcome',
      labelNames: ['type', 'outcome'],
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 300],
      registers: [registry],
    });
    this.duration = new Series((type, outcome) => duration.bind({ type, outcome }));
    const wait = new BoundHistogram({
      name: METRICS.jobWait,
      help: 'Time first attempts waited in the queue, from submission to a worker starting them, by type and queue',
      labelNames: ['type', 'queue'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.wait = new Series((type, queue) => wait.bind({ type, queue }));
    const endToEnd = new BoundHistogram({
      name: METRICS.jobEndToEnd,
      help: 'Time from submission to completion of completed jobs (waits, retries and fan-out chunks included), by type and queue',
      labelNames: ['type', 'queue'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.endToEnd = new Series((type, queue) => endToEnd.bind({ type, queue }));
    const replacements = new Counter({
      name: METRICS.poolThreadReplacements,
      help: 'Pool threads terminated and replaced, by reason: timeout, cancelled (a running job aborted), crash, out_of_memory',
      labelNames: ['reason'],
      registers: [registry],
    });
    for (const reason of REPLACEMENT_REASONS) replacements.inc({ reason }, 0);
    pool.onThreadReplaced((reason) => replacements.inc({ reason }));
    const dropped = new Counter({
      name: METRICS.jobLogLinesDropped,
      help: "Log lines jobs wrote through ctx.log beyond their rate limit, dropped",
      registers: [registry],
    });
    pool.onLogLinesDropped((lines) => dropped.inc(lines));
    const self = this;
    new Gauge({
      name: METRICS.jobsActive,
      help: 'Jobs this worker is running now',
      registers: [registry],
      collect() {
        this.set(self.running);
      },
    });
    new Gauge({
      name: METRICS.poolThreads,
      help: 'Live threads in the piscina pool',
      registers: [registry],
      collect() {
        this.set(pool.threads);
      },
    });
    new Gauge({
      name: METRICS.poolUtilization,
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
    this.finished.of(type, outcome).inc();
  }

  /** A job picked up past its start deadline ends expired, unrun. */
  expired(type: string): void {
    this.expiredJobs.get(type)?.inc();
  }

  /** A job's first attempt starts, `ms` after it was submitted. */
  waited(type: string, queue: string, ms: number): void {
    this.wait.of(type, queue).observe(Math.max(0, ms) / 1000);
  }

  /** A job completed, `ms` after it was submitted. */
  completed(type: string, queue: string, ms: number): void {
    this.endToEnd.of(type, queue).observe(Math.max(0, ms) / 1000);
  }

  /** An attempt starts on the pool. */
  started(): void {
    this.running++;
  }

  /** An attempt that started ends, after `ms` on the pool, with `outcome`. */
  ended(type: string, outcome: string, ms: number): void {
    this.running--;
    this.duration.of(type, outcome).observe(ms / 1000);
    this.finished.of(type, outcome).inc();
  }
}
