import type { RedisClient } from '@app/redis';
import type { QueueJob } from './slot-worker';

/** Injection token of what keeps the jobs that fail for good (the dead-letters capability, apps/api/src/dead-letters). */
export const FAILED_JOBS = Symbol('FAILED_JOBS');

/**
 * What the worker asks of the dead-letters capability: keep `job`, which BullMQ has just failed for
 * good, for `retentionSeconds` (libs/queue/src/dead-letters.ts). Without the capability nothing is
 * kept: the failed job lives JOB_RETENTION_SECONDS like any other, and nobody writes dead letters
 * that nobody lists.
 */
export interface FailedJobs {
  keep(redis: RedisClient, prefix: string, job: QueueJob, retentionSeconds: number): Promise<boolean>;
}
