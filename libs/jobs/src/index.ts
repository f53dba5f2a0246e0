export { canonicalJson, contentKey } from './content-key';
export { defineFanOut, MAX_CHUNKS } from './define-fan-out';
export { DEFAULT_QUEUE, defineJob, DEPLOYED_QUEUES, INLINE_MAX_TIMEOUT_MS, knownVersions, MIN_SCHEDULE_EVERY_MS, previousVersion, QUEUE_NAME, runnerOf, SCHEDULE_NAME, SILENT_LOG } from './define-job';
export type { FanOut, JobContext, JobDefinition, JobLogFn, JobLogger, JobRunner, JobSchedule, JobShare, PreviousVersion, RetryPolicy } from './define-job';
export { CodedJobError, formatFailure, isRetried, JobFailureCode, parseFailure } from './job-failure';
export type { JobFailure } from './job-failure';
export { allJobs, coreJobs, JobRegistry } from './registry';
export type { InputOf, JobName, JobOf, OutputOf, SubmissionOf } from './registry';
export { sumTo } from './sum.job';
