export { canonicalJson, contentKey } from './content-key';
export { defineJob } from './define-job';
export type { JobContext, JobDefinition, RetryPolicy } from './define-job';
export { CodedJobError, formatFailure, JobFailureCode, parseFailure } from './job-failure';
export type { JobFailure } from './job-failure';
export { allJobs, coreJobs, JobRegistry } from './registry';
export type { InputOf, JobName, JobOf, OutputOf } from './registry';
export { sumTo } from './sum.job';
