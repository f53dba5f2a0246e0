import { DynamicModule, Inject, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { APP_FILTER, DiscoveryModule } from '@nestjs/core';
import type { BlobStore } from '@app/blobs';
import { CACHE_REDIS, CacheModule } from '@app/cache';
import { CONFIG, Config, ConfigModule } from '@app/config';
import { HEALTH_INDICATORS, HealthController, HealthIndicator } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { type Logger, LoggingModule } from '@app/logging';
import { MetricsModule } from '@app/metrics';
import { OtelTracingModule } from '@app/otel';
import { checkSchedules } from '@app/queue';
import { pingRedis, type RedisClient, RedisModule } from '@app/redis';
import { TracingModule } from '@app/tracing';
import { BatchModule } from './batch/batch.module';
import { DeadLettersModule } from './dead-letters/dead-letters.module';
import { DemoModule } from './demo/demo.module';
import { FairShareModule } from './fair-share/fair-share.module';
import { FilesModule } from './files/files.module';
import { ApiDocsModule } from './docs/api-docs.module';
import { ProblemFilter } from './http/problem.filter';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { JobTypesController } from './job-types/job-types.controller';
import { JobsModule } from './jobs/jobs.module';
import { QUEUE_REDIS } from './queues/queue.providers';
import { QueueDashboardModule } from './queue-dashboard/queue-dashboard.module';
import { QueuesModule } from './queues/queues.module';
import { SchedulesModule } from './schedules/schedules.module';
import { UploadsModule } from './uploads/uploads.module';
import { AccessMiddleware } from './security/access.middleware';
import { WebhooksModule } from './webhooks/webhooks.module';

/**
 * The HTTP API: validates, enqueues, reads and cancels jobs. Its event loop only does I/O. The core
 * is JobsModule; each optional capability is one module below (tracing's is libs/otel, in the
 * worker's list too), and deleting its folder and its line leaves the rest whole
 * (test/template.e2e-spec.ts).
 */
@Module({})
export class ApiModule implements NestModule {
  /** `blobs`: the store start-up opened and checked (see openConfiguredBlobStore), or null without one. */
  static forRoot(config: Config, logger: Logger, blobs: BlobStore | null): DynamicModule {
    const registry = JobRegistry.forConfig(config);
    // why here: a cron expression BullMQ cannot parse stops start-up with its message, before Nest starts.
    checkSchedules(registry);
    return {
      module: ApiModule,
      imports: [
        // why first: its connections then close after every other module's shutdown hook (see RedisModule).
        RedisModule,
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        TracingModule,
        OtelTracingModule.forRoot('api'),
        QueuesModule.forRoot(registry),
        CacheModule,
        FilesModule.forRoot(blobs),
        MetricsModule,
        DiscoveryModule,
        JobsModule,
        BatchModule,
        IdempotencyModule,
        WebhooksModule,
        SchedulesModule,
        FairShareModule,
        UploadsModule,
        DeadLettersModule,
        ...(config.demo ? [DemoModule] : []),
        ...(config.apiDocs ? [ApiDocsModule] : []),
        ...(config.queueDashboard ? [QueueDashboardModule] : []),
      ],
      controllers: [JobTypesController, HealthController],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
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
