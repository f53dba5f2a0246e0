import { DynamicModule, Inject, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Queue } from 'bullmq';
import { CACHE_REDIS, CacheModule } from '@app/cache';
import { CONFIG, Config, ConfigModule } from '@app/config';
import { HEALTH_INDICATORS, HealthController, HealthIndicator, Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { type Logger, LoggingModule } from '@app/logging';
import { MetricsModule } from '@app/metrics';
import { checkSchedules } from '@app/queue';
import { pingRedis, type RedisClient } from '@app/redis';
import { type Tracing, TracingModule } from '@app/tracing';
import { BatchController } from './batch/batch.controller';
import { BatchService } from './batch/batch.service';
import { DemoModule } from './demo/demo.module';
import { ProblemFilter } from './http/problem.filter';
import { Idempotency } from './idempotency/idempotency';
import { JobTypesController } from './job-types/job-types.controller';
import { Backlog } from './jobs/backlog';
import { ConnectionMetrics } from './jobs/connection.metrics';
import { JobEvents } from './jobs/job-events';
import { JobOwners } from './jobs/job-owners';
import { JobStore } from './jobs/job-store';
import { JobsController } from './jobs/jobs.controller';
import { JobsService } from './jobs/jobs.service';
import { QueueMetrics } from './jobs/queue.metrics';
import { QUEUE_REDIS, QueueCloser, queueProviders } from './jobs/queue.providers';
import { ReplicaAck } from './jobs/replica-ack';
import { ScheduleRegistrar } from './schedules/schedule-registrar';
import { SchedulesController } from './schedules/schedules.controller';
import { SubmissionMetrics } from './jobs/submission.metrics';
import { AccessMiddleware } from './security/access.middleware';
import { webhookProviders } from './webhooks/webhooks.providers';

/** The HTTP API: validates, enqueues, reads and cancels jobs. Its event loop only does I/O. */
@Module({})
export class ApiModule implements NestModule {
  static forRoot(config: Config, logger: Logger, tracing?: Tracing): DynamicModule {
    const registry = JobRegistry.forConfig(config);
    // why here: a cron expression BullMQ cannot parse stops start-up with its message, before Nest starts.
    checkSchedules(registry);
    return {
      module: ApiModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        TracingModule.forRoot(tracing),
        CacheModule,
        MetricsModule,
        ...(config.demo ? [DemoModule] : []),
      ],
      controllers: [BatchController, JobsController, JobTypesController, SchedulesController, HealthController],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: JobRegistry, useValue: registry },
        ...queueProviders,
        QueueCloser,
        Lifecycle,
        JobEvents,
        JobStore,
        JobOwners,
        Backlog,
        Idempotency,
        ReplicaAck,
        JobsService,
        BatchService,
        QueueMetrics,
        ScheduleRegistrar,
        ...webhookProviders,
        SubmissionMetrics,
        ConnectionMetrics,
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
