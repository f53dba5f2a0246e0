export { JobsClient } from './jobs-client';
export type { CallOptions, FileBody, FilePart, JobRef, JobsClientOptions, SubmitOptions, WaitOptions } from './jobs-client';
export type { JobEvent, JobFile, JobStatus, JobTypeInfo, JobView } from './job-view';
export { ProblemError } from './problem-error';
export type { FieldError } from './problem-error';
export type { JobName, OutputOf, SubmissionOf } from '@app/jobs';
