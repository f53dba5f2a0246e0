export type { JobData } from './job-data';
export { BULL_STRUCTURES, bullKey, childJobId, queueKeys, queuePrefix } from './queue.keys';
export type { QueueKeys } from './queue.keys';
export { stopChildren } from './children';
