export type { JobData } from './job-data';
export { BULL_STRUCTURES, bullKey, childJobId, queueKeys, queuePrefix, SCHEDULED_JOB_ID, scheduledJobId, schedulerId, WEBHOOK_QUEUE, webhookDeliveryId } from './queue.keys';
export { jobOptions } from './job-options';
export { checkSchedules, nextRunOf, scheduledJob } from './schedules';
export type { ScheduledJob } from './schedules';
export type { QueueKeys } from './queue.keys';
export { flagCancelled, stopChildren } from './children';
export { NOTICE_RESULT_MAX, noticeChannel, NOTIFY, watchersKey } from './job-notices';
export type { JobNotice, JobRecord } from './job-notices';
