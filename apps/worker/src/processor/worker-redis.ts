/** Injection token of the worker's durable queue-Redis connection. */
export const WORKER_REDIS = Symbol('WORKER_REDIS');
