export { closeRedis, createRedis, pingRedis } from './redis.factory';
export type { RedisRole } from './redis.factory';
