import { Global, Module } from '@nestjs/common';
import { RedisConnections } from './redis.connections';

/**
 * The process's Redis connections (RedisConnections). Import it first in the root module: Nest runs
 * the shutdown hooks of global modules last, in reverse order of import, so the connections close
 * after every module that uses them has closed its queues and workers. why global: one per process,
 * like ConfigModule; the core and every capability open theirs here.
 */
@Global()
@Module({ providers: [RedisConnections], exports: [RedisConnections] })
export class RedisModule {}
