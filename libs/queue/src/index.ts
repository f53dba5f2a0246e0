export type { JobData } from './job-data';
export { JOBS_QUEUE, queueKeys } from './queue.keys';
export type { QueueKeys } from './queue.keys';
