import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { CACHE_REDIS, CacheModule } from '@app/cache';
import { Config, ConfigModule } from '@app/config';
import { HEALTH_INDICATORS, HealthController, HealthIndicator, Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { loggingModule } from '@app/logging';
import { MetricsModule } from '@app/metrics';
import { pingRedis } from '@app/redis';
import { ProblemFilter } from './http/problem.filter';
import { JobTypesController } from './job-types/job-types.controller';
import { JobEvents } from './jobs/job-events';
import { JobsController } from './jobs/jobs.controller';
import { JobsService } from './jobs/jobs.service';
import { QUEUE_REDIS, QueueCloser, queueProviders } from './jobs/queue.providers';

/** The HTTP API: validates, enqueues, reads and cancels jobs. Its event loop only does I/O. */
@Module({})
export class ApiModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: ApiModule,
      imports: [ConfigModule.forRoot(config), loggingModule(config, 'api'), CacheModule, MetricsModule],
      controllers: [JobsController, JobTypesController, HealthController],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: JobRegistry, useValue: JobRegistry.forConfig(config) },
        ...queueProviders,
        QueueCloser,
        Lifecycle,
        JobEvents,
        JobsService,
        {
          provide: HEALTH_INDICATORS,
          inject: [QUEUE_REDIS, CACHE_REDIS],
          useFactory: (queueRedis: IORedis, cacheRedis: IORedis): HealthIndicator[] => [
            { name: 'queueRedis', check: () => pingRedis(queueRedis) },
            { name: 'cacheRedis', check: () => pingRedis(cacheRedis) },
          ],
        },
      ],
    };
  }
}
