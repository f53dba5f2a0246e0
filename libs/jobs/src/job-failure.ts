/**
 * Why a job failed, as a stable code. Codes cross the thread boundary and BullMQ's `failedReason`
 * as text ("CODE: message"), because error classes do not survive structured clone.
 */
export const JobFailureCode = {
  /** `run` threw. Retried per the job type's policy. */
  JOB_FAILED: 'JOB_FAILED',
  /** The thread running the job exited or crashed. Retried per policy; the pool replaces the thread. */
  JOB_CRASHED: 'JOB_CRASHED',
  /** The thread hit WORKER_MAX_MEMORY_MB. Not retried. */
  JOB_OUT_OF_MEMORY: 'JOB_OUT_OF_MEMORY',
  /** The job ran past its timeout; its thread was terminated. Not retried. */
  JOB_TIMEOUT: 'JOB_TIMEOUT',
  /** Cancelled by DELETE /v1/jobs/{id}. Not retried. */
  JOB_CANCELLED: 'JOB_CANCELLED',
  /** The job's data does not match this worker's registry (unknown type, other version, bad input). */
  JOB_REJECTED: 'JOB_REJECTED',
  /** A fan-out job's child failed for good; the rest of its children were cancelled. Not retried. */
  JOB_CHILD_FAILED: 'JOB_CHILD_FAILED',
  /** Moved to failed by BullMQ itself (e.g. stalled too many times). */
  JOB_LOST: 'JOB_LOST',
} as const;

export type JobFailureCode = (typeof JobFailureCode)[keyof typeof JobFailureCode];

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
