import { Injectable } from '@nestjs/common';
import { Registry } from 'prom-client';
import { JobRegistry } from '@app/jobs';
import { BoundCounter, type BoundSeries, METRICS } from '@app/metrics';

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
  // Bound series (see BoundCounter): a submission counts twice on the request path.
  private readonly submitted = new Map<string, Record<SubmissionOutcome, BoundSeries>>();
  private readonly lookups = new Map<string, Record<CacheLookup, BoundSeries>>();

  constructor(metrics: Registry, jobs: JobRegistry) {
    const submitted = new BoundCounter({
      name: METRICS.jobsSubmitted,
      help: 'Job submissions by type and outcome: cached (answered from the cache), joined (an identical job in flight), queued, rejected (invalid, backlog full, Redis away)',
      labelNames: ['type', 'outcome'],
      registers: [metrics],
    });
    const lookups = new BoundCounter({
      name: METRICS.cacheLookups,
      help: "Result-cache lookups of submissions by type and result (hit, miss, error: the cache Redis did not answer)",
      labelNames: ['type', 'result'],
      registers: [metrics],
    });
    for (const { name: type, cacheTtlSeconds } of jobs.list()) {
      this.submitted.set(type, Object.fromEntries(OUTCOMES.map((outcome) => [outcome, submitted.bind({ type, outcome })])) as Record<SubmissionOutcome, BoundSeries>);
      if (cacheTtlSeconds > 0) {
        this.lookups.set(type, Object.fromEntries(LOOKUPS.map((result) => [result, lookups.bind({ type, result })])) as Record<CacheLookup, BoundSeries>);
      }
    }
  }

  submission(type: string, outcome: SubmissionOutcome): void {
    this.submitted.get(type)?.[outcome].inc();
  }

  cacheLookup(type: string, result: CacheLookup): void {
    this.lookups.get(type)?.[result].inc();
  }
}
