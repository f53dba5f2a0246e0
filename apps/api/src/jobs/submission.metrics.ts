import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';
import { JobRegistry } from '@app/jobs';
import { METRICS } from '@app/metrics';

/** What became of a submission: answered from the cache, joined an identical job, queued, or refused. */
export type SubmissionOutcome = 'cached' | 'joined' | 'queued' | 'rejected';
export type CacheLookup = 'hit' | 'miss' | 'error';

const OUTCOMES: readonly SubmissionOutcome[] = ['cached', 'joined', 'queued', 'rejected'];
const LOOKUPS: readonly CacheLookup[] = ['hit', 'miss', 'error'];

/**
 * `nest_offload_jobs_submitted_total{type,outcome}` and `nest_offload_cache_lookups_total{type,result}`,
 * for registered types only (an unknown type in the URL never becomes a label). Every series starts
 * at 0, so rates and ratios exist before the first event.
 */
@Injectable()
export class SubmissionMetrics {
  // why resolved children: a submission counts twice on the hot path; two property reads are cheaper
  // than prom-client validating and hashing a label object each time.
  private readonly submitted = new Map<string, Record<SubmissionOutcome, Counter.Internal>>();
  private readonly lookups = new Map<string, Record<CacheLookup, Counter.Internal>>();

  constructor(metrics: Registry, jobs: JobRegistry) {
    const submitted = new Counter({
      name: METRICS.jobsSubmitted,
      help: 'Job submissions by type and outcome: cached (answered from the cache), joined (an identical job in flight), queued, rejected (invalid, backlog full, Redis away)',
      labelNames: ['type', 'outcome'],
      registers: [metrics],
    });
    const lookups = new Counter({
      name: METRICS.cacheLookups,
      help: "Result-cache lookups of submissions by type and result (hit, miss, error: the cache Redis did not answer)",
      labelNames: ['type', 'result'],
      registers: [metrics],
    });
    const series = <K extends string>(counter: Counter<string>, type: string, values: readonly K[]) =>
      Object.fromEntries(values.map((v) => [v, counter.labels(type, v)] as const)) as Record<K, Counter.Internal>;
    for (const def of jobs.list()) {
      this.submitted.set(def.name, series(submitted, def.name, OUTCOMES));
      if (def.cacheTtlSeconds > 0) this.lookups.set(def.name, series(lookups, def.name, LOOKUPS));
    }
    for (const children of [...this.submitted.values(), ...this.lookups.values()]) for (const child of Object.values(children)) child.inc(0);
  }

  submission(type: string, outcome: SubmissionOutcome): void {
    this.submitted.get(type)?.[outcome].inc();
  }

  cacheLookup(type: string, result: CacheLookup): void {
    this.lookups.get(type)?.[result].inc();
  }
}
