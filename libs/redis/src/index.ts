export { evictionPolicy, watchEvictionPolicy } from './eviction-check';
export { pingRedis } from './redis.factory';
export { RedisConnections } from './redis.connections';
export { RedisModule } from './redis.module';
export { logRedisRefusals } from './refusal-log';
export type { RedisClient, RedisRole } from './redis.factory';
export { waitForReplicas } from './replicas';
export { checkRedisTargets } from './start-up-check';
