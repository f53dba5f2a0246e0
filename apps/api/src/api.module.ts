import { DynamicModule, Inject, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Queue } from 'bullmq';
import { CACHE_REDIS, CacheModule } from '@app/cache';
import { CONFIG, Config, ConfigModule } from '@app/config';
import { HEALTH_INDICATORS, HealthController, HealthIndicator, Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { type Logger, LoggingModule } from '@app/logging';
import { MetricsModule } from '@app/metrics';
import { pingRedis, type RedisClient } from '@app/redis';
import { DemoModule } from './demo/demo.module';
import { ProblemFilter } from './http/problem.filter';
import { JobTypesController } from './job-types/job-types.controller';
import { Backlog } from './jobs/backlog';
import { JobEvents } from './jobs/job-events';
import { JobStore } from './jobs/job-store';
import { JobsController } from './jobs/jobs.controller';
import { JobsService } from './jobs/jobs.service';
import { QueueMetrics } from './jobs/queue.metrics';
import { QUEUE_REDIS, QueueCloser, queueProviders } from './jobs/queue.providers';
import { ReplicaAck } from './jobs/replica-ack';
import { AccessMiddleware } from './security/access.middleware';

/** The HTTP API: validates, enqueues, reads and cancels jobs. Its event loop only does I/O. */
@Module({})
export class ApiModule implements NestModule {
  static forRoot(config: Config, logger: Logger): DynamicModule {
    return {
      module: ApiModule,
      imports: [ConfigModule.forRoot(config), LoggingModule.forRoot(logger), CacheModule, MetricsModule, ...(config.demo ? [DemoModule] : [])],
      controllers: [JobsController, JobTypesController, HealthController],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: JobRegistry, useValue: JobRegistry.forConfig(config) },
        ...queueProviders,
        QueueCloser,
        Lifecycle,
        JobEvents,
        JobStore,
        Backlog,
        ReplicaAck,
        JobsService,
        QueueMetrics,
        {
          provide: HEALTH_INDICATORS,
          inject: [QUEUE_REDIS, CACHE_REDIS],
          useFactory: (queueRedis: RedisClient, cacheRedis: RedisClient): HealthIndicator[] => [
            { name: 'queueRedis', check: () => pingRedis(queueRedis) },
            // why not critical: without the cache every submission still runs, just without reuse.
            { name: 'cacheRedis', check: () => pingRedis(cacheRedis), critical: false },
          ],
        },
      ],
    };
  }

  constructor(@Inject(CONFIG) private readonly config: Config) {}

  /** API keys and rate limits guard every /v1 route; probes and metrics stay open. */
  configure(consumer: MiddlewareConsumer): void {
    // why only when configured: a middleware costs every request, even when it has nothing to check.
    if (this.config.apiKeys.length === 0 && this.config.rateLimitPerMinute === 0) return;
    consumer.apply(AccessMiddleware).forRoutes({ path: 'v1/*splat', method: RequestMethod.ALL });
  }
}
