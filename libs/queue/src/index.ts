export type { JobData } from './job-data';
export { BULL_STRUCTURES, bullKey, childJobId, queueKeys, queuePrefix, SCHEDULED_JOB_ID, scheduledJobId, schedulerId, WEBHOOK_QUEUE, webhookDeliveryId } from './queue.keys';
export { jobOptions } from './job-options';
export { checkSchedules, nextRunOf, scheduledJob } from './schedules';
export type { ScheduledJob } from './schedules';
export type { QueueKeys } from './queue.keys';
export { stopChildren } from './children';
