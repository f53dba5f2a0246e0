import { Global, Module } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { type RedisClient, RedisConnections } from '@app/redis';
import { ResultCache } from './result-cache';

/** Injection token of the cache Redis connection (CACHE_REDIS_URL). */
export const CACHE_REDIS = Symbol('CACHE_REDIS');

@Global()
@Module({
  providers: [
    {
      provide: CACHE_REDIS,
      inject: [CONFIG, RedisConnections],
      useFactory: (config: Config, connections: RedisConnections) => connections.open('cache', config.cacheRedis, 'request', 'nest-offload:cache'),
    },
    {
      provide: ResultCache,
      inject: [CACHE_REDIS, CONFIG],
      useFactory: (redis: RedisClient, config: Config) => new ResultCache(redis, config.redisPrefix, config.cacheMemoryMb * 1024 ** 2),
    },
  ],
  exports: [CACHE_REDIS, ResultCache],
})
export class CacheModule {}
