export { evictionPolicy, watchEvictionPolicy } from './eviction-check';
export { closeRedis, createRedis, pingRedis } from './redis.factory';
export type { RedisRole } from './redis.factory';
