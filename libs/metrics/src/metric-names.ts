/**
 * The name of every metric family the apps export. The Grafana dashboard, the alert rules and the
 * Kubernetes manifests name these (test/monitoring.e2e-spec.ts checks them against a real scrape).
 */
export const METRIC_PREFIX = 'nest_offload_';

export const METRICS = {
  // Both apps
  /** Histogram {route, method, status}: route is the template (`/v1/jobs/:type`), `unmatched` for 404s. */
  httpRequestDuration: 'nest_offload_http_request_duration_seconds',
  /** Gauge {connection}: 1 while that Redis connection is ready, else 0. */
  redisConnected: 'nest_offload_redis_connected',
  /** prom-client's default: p99 of the event loop's delay, sampled since the last scrape. */
  eventLoopLagP99: 'nest_offload_nodejs_eventloop_lag_p99_seconds',
  /** Counter {type}: jobs that ended expired (not started by their start deadline): the API's removed while queued, a worker's found late at pickup. */
  jobsExpired: 'nest_offload_jobs_expired_total',

  // API
  /** Counter {type, outcome}: outcome is cached, joined, queued or rejected. */
  jobsSubmitted: 'nest_offload_jobs_submitted_total',
  /** Counter {type, result}: the API's result-cache lookups, result hit, miss or error. */
  cacheLookups: 'nest_offload_cache_lookups_total',
  /** Gauge {queue, state}: jobs in each queue by BullMQ state, read at scrape time. */
  queueJobs: 'nest_offload_queue_jobs',
  /** Gauge {queue}: waiting + prioritized + active + parked by fair share; scale a queue's workers on it. */
  queueBacklog: 'nest_offload_queue_backlog',
  /** Gauge {queue, caller, state}: with fair share, each API key's jobs waiting in its share and running (released, not finished). */
  callerJobs: 'nest_offload_caller_jobs',
  /** Counter {type}: dead letters replayed as new jobs (the dead-letters capability, POST /admin/dead-letters/replay). */
  deadLettersReplayed: 'nest_offload_dead_letters_replayed_total',
  /** Gauge: jobs this API replica waits on (Prefer: wait, event streams, cancels, webhook deliveries). */
  jobsWatched: 'nest_offload_jobs_watched',

  // Worker
  /** Counter {type, outcome}: attempts finished, outcome completed, split, handed_back or a failure code. */
  jobsFinished: 'nest_offload_jobs_finished_total',
  /** Histogram {type, outcome}: time an attempt spent on the pool. */
  jobRun: 'nest_offload_job_run_seconds',
  /** Histogram {type, queue}: first attempts, from queued to started by a worker. */
  jobWait: 'nest_offload_job_wait_seconds',
  /** Histogram {type, queue}: completed jobs, from queued to completed (retries and chunks included). */
  jobEndToEnd: 'nest_offload_job_end_to_end_seconds',
  /** Gauge: jobs this worker runs now. */
  jobsActive: 'nest_offload_jobs_active',
  /** Gauge: live pool threads. */
  poolThreads: 'nest_offload_pool_threads',
  /** Gauge: share of the pool's capacity used since start (0-1). */
  poolUtilization: 'nest_offload_pool_utilization',
  /** Counter {reason}: pool threads terminated and replaced: timeout, cancelled, crash, out_of_memory. */
  poolThreadReplacements: 'nest_offload_pool_thread_replacements_total',
  /** Counter: log lines a job's `ctx.log` wrote past its rate limit, dropped (see JobContext.log). */
  jobLogLinesDropped: 'nest_offload_job_log_lines_dropped_total',
} as const;

export type MetricName = (typeof METRICS)[keyof typeof METRICS];
