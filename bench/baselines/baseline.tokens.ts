/** Injection tokens of the baseline servers. */
export const BASELINE_REDIS = Symbol('BASELINE_REDIS');
export const BASELINE_PREFIX = Symbol('BASELINE_PREFIX');
/** The in-process @nestjs/bullmq baseline's queue. */
export const INPROC_QUEUE = 'inproc';
/** The raw BullMQ queue the per-job overhead scenario compares against. */
export const RAW_QUEUE = 'raw';
