import type { JobsOptions } from 'bullmq';
import type { JobDefinition } from '@app/jobs';
import { type JobData, jobOptions, PARK_DELAY_MS } from '@app/queue';
import type { PreparedJob } from './job-input';

/**
 * What one submission (a POST, single or batch) carries into every job it creates besides the input.
 * why one type: a new per-submission option (a callback URL, say) is added here and in `newJob`, and
 * reaches single and batch submissions, idempotent or not, alike.
 */
export interface Submission {
  /** Request id of the POST, so the worker's log lines for its jobs carry it. */
  readonly requestId?: string;
  /** Its `Start-Within`, in ms; undefined: the type's `startWithinMs`, if any (see startDeadline). */
  readonly startWithinMs?: number;
  /** Its `Job-Tags`: the caller's tags for the jobs it gets (see JobOwners.add). */
  readonly tags?: readonly string[];
}

/** The start deadline (epoch ms) of the jobs a submission of `def` adds `now`, or undefined: none. */
export function startDeadline(def: JobDefinition, submission: Submission, now = Date.now()): number | undefined {
  const within = submission.startWithinMs ?? def.startWithinMs;
  return within === undefined ? undefined : now + within;
}

/** A job as BullMQ's `add` and `addBulk` take it. */
export interface NewJob {
  name: string;
  data: JobData;
  opts: JobsOptions;
}

/**
 * The BullMQ job for `job` with id `jobId`, to start by `startBy` (epoch ms) if set, parked as
 * `caller`'s when set (fair share: delayed until released, see libs/queue's fair-share.ts): the one
 * place its data and options are decided.
 */
export function newJob(job: PreparedJob, jobId: string, submission: Submission, retentionSeconds: number, startBy?: number, caller?: string): NewJob {
  const { def, inputJson, key, scope, files } = job;
  return {
    name: def.name,
    data: { inputJson, version: def.version, ...(scope === undefined ? {} : { scope }), ...(files && { files }), requestId: submission.requestId, ...(startBy === undefined ? {} : { startBy }), ...(caller === undefined ? {} : { caller }) },
    opts: {
      jobId,
      ...jobOptions(def, retentionSeconds),
      // why: the deduplication key lives until the job completes or fails, so identical submissions
      // from any replica join the job in flight. The worker writes the cache before completing, so
      // once the key is released the cache answers instead. It is also the job's content key, which
      // its data then leaves out (see JobData.key).
      deduplication: { id: key },
      ...(caller !== undefined && { delay: PARK_DELAY_MS }),
    },
  };
}
