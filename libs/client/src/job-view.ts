import type { JobFailure, JobName, OutputOf } from '@app/jobs';

// why hand-written here: the client must not import from apps/api; test/client.e2e-spec.ts checks
// these shapes against what the built API answers.

interface JobViewFields<N extends JobName> {
  id: string;
  type: N;
  /** Percent, while running and once done. */
  progress?: number;
  /** Served from the result cache. */
  cached?: boolean;
  attempts: number;
  /** ISO 8601. */
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** A file a completed job returned (or its result, when larger than 64 KiB: `result.json`); `client.download(file)` fetches it. */
export interface JobFile {
  name: string;
  bytes: number;
  contentType: string;
  sha256: string;
  /** `/v1/jobs/{id}/files/{name}`, on the API. */
  url: string;
}

/**
 * A job as the API shows it, typed by its job type `N`: narrow on `status` to reach `result` (typed
 * by the type's output schema) or `error`. Without `N` it is the union over every type, which
 * `type` narrows.
 */
export type JobView<N extends JobName = JobName> = N extends JobName
  ?
      | (JobViewFields<N> & { status: 'queued' | 'active' })
      | (JobViewFields<N> & { status: 'completed'; result: OutputOf<N>; files?: JobFile[] })
      | (JobViewFields<N> & { status: 'failed' | 'cancelled' | 'expired'; error: JobFailure })
  : never;

export type JobStatus = JobView['status'];

/** What the job's event stream (`GET /v1/jobs/{id}/events`) delivers: progress, then exactly one final view. */
export type JobEvent<N extends JobName = JobName> =
  | { event: 'progress'; progress: number }
  | { event: 'completed'; job: Extract<JobView<N>, { status: 'completed' }> }
  | { event: 'failed' | 'cancelled' | 'expired'; job: Extract<JobView<N>, { status: 'failed' | 'cancelled' | 'expired' }> };

/** One entry of `GET /v1/job-types`. */
export interface JobTypeInfo {
  type: string;
  version: number;
  /** Every version whose queued jobs the workers still run, newest first. */
  runsVersions: number[];
  description: string;
  queue: string;
  /** BullMQ priority within its queue (1 first), or null. */
  priority: number | null;
  /** JSON Schema of the input. */
  inputSchema: unknown;
  /** JSON Schema of the result. */
  outputSchema: unknown;
  /** Request bodies that show how to call it. */
  examples: unknown[];
  timeoutMs: number;
  cacheTtlSeconds: number;
  /** Its jobs' default start deadline, or null: none. */
  startWithinMs: number | null;
  maxAttempts: number;
}
