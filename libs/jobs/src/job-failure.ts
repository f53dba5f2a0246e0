/**
 * Why a job failed, as a stable code, and whether BullMQ may retry it (as its `shouldRetryJob` asks
 * of an error): the one place that decides. A retried code gets the job type's `retry` attempts and
 * backoff (see jobOptions in @app/queue); a final one fails the job at once, since it would fail again.
 * Codes cross the thread boundary and BullMQ's `failedReason` as text ("CODE: message"), because
 * error classes do not survive structured clone.
 */
const FAILURES = {
  /** `run` threw. */
  JOB_FAILED: { retried: true },
  /** The thread running the job exited or crashed; the pool replaces the thread. */
  JOB_CRASHED: { retried: true },
  /** The thread hit WORKER_MAX_MEMORY_MB. */
  JOB_OUT_OF_MEMORY: { retried: false },
  /** The job ran past its timeout; its thread was terminated. */
  JOB_TIMEOUT: { retried: false },
  /** Cancelled by DELETE /v1/jobs/{id}. */
  JOB_CANCELLED: { retried: false },
  /** The job's data does not match this worker's registry (unknown type, other version, bad input). */
  JOB_REJECTED: { retried: false },
  /** A fan-out job's child failed for good; the rest of its children were cancelled. */
  JOB_CHILD_FAILED: { retried: false },
  /** Not started by its start deadline (`Start-Within`, `startWithinMs`): it never ran. */
  JOB_EXPIRED: { retried: false },
  /** Moved to failed by BullMQ itself (e.g. stalled too many times): BullMQ has given up on it. */
  JOB_LOST: { retried: false },
} as const satisfies Record<string, { readonly retried: boolean }>;

export type JobFailureCode = keyof typeof FAILURES;

export const JobFailureCode = Object.freeze(Object.fromEntries(Object.keys(FAILURES).map((code) => [code, code]))) as {
  readonly [C in keyof typeof FAILURES]: C;
};

/** Whether a job that failed with `code` is retried (while its type's attempts last); false: it fails for good. */
export function isRetried(code: JobFailureCode): boolean {
  return FAILURES[code].retried;
}

export interface JobFailure {
  code: JobFailureCode;
  message: string;
}

const CODED = /^([A-Z_]+): ([\s\S]*)$/;

export function formatFailure(code: JobFailureCode, message: string): string {
  return `${code}: ${message}`;
}

/** Reads a failure back from BullMQ's failedReason; reasons BullMQ wrote itself become JOB_LOST. */
export function parseFailure(reason: string | undefined): JobFailure {
  const match = CODED.exec(reason ?? '');
  if (match && match[1] in JobFailureCode) return { code: match[1] as JobFailureCode, message: match[2] };
  return { code: JobFailureCode.JOB_LOST, message: reason || 'unknown failure' };
}

/** An Error whose message carries its code, for BullMQ to store. */
export class CodedJobError extends Error {
  constructor(
    readonly code: JobFailureCode,
    detail: string,
  ) {
    super(formatFailure(code, detail));
    this.name = 'CodedJobError';
  }
}
