export { evictionPolicy, watchEvictionPolicy } from './eviction-check';
export { closeRedis, createRedis, pingRedis } from './redis.factory';
export { logRedisRefusals } from './refusal-log';
export type { RedisClient, RedisRole } from './redis.factory';
export { waitForReplicas } from './replicas';
export { checkRedisTargets } from './start-up-check';
