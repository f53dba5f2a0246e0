import { DynamicModule, Module } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@app/blobs';
import { CacheModule } from '@app/cache';
import { Config, ConfigModule } from '@app/config';
import { HEALTH_INDICATORS, HealthController, HealthIndicator, Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { type Logger, LoggingModule } from '@app/logging';
import { MetricsModule } from '@app/metrics';
import { OtelTracingModule } from '@app/otel';
import { checkSchedules } from '@app/queue';
import { pingRedis, type RedisClient, RedisConnections, RedisModule } from '@app/redis';
import { TracingModule } from '@app/tracing';
import { DeadLettersModule } from '../../api/src/dead-letters/dead-letters.worker-module';
import { JobPool } from './pool/job-pool';
import { CancelListener } from './processor/cancel.listener';
import { FanOut } from './processor/fan-out';
import { JobNotifier } from './processor/job-notifier';
import { FileLeases } from './processor/file-leases';
import { InputFiles } from './processor/input-files';
import { JobProcessor } from './processor/job-processor';
import { WORKER_REDIS } from './processor/worker-redis';
import { WorkerMetrics } from './processor/worker.metrics';
import { selectQueues, WORKER_QUEUES } from './processor/worker-queues';

// why throw, not return a rejected promise: a check's promise is awaited by the health controller.
function assert(ok: boolean, problem: string): void {
  if (!ok) throw new Error(problem);
}

/** The BullMQ consumer: takes jobs from Redis and runs them on the piscina pool. Serves probes and metrics. */
@Module({})
export class WorkerModule {
  /** `blobs`: the store start-up opened and checked (see openConfiguredBlobStore), or null without one. */
  static forRoot(config: Config, logger: Logger, blobs: BlobStore | null): DynamicModule {
    // why here, not in a provider: a bad WORKER_QUEUES stops start-up with its message, before Nest starts.
    const registry = JobRegistry.forConfig(config);
    const queues = selectQueues(registry, config.workerQueues);
    // why the worker too, though the API registers schedules: a build with a bad cron runs nowhere.
    checkSchedules(registry);
    return {
      module: WorkerModule,
      // why RedisModule first: its connections then close after every other module's shutdown hook (see RedisModule).
      imports: [
        RedisModule,
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        TracingModule,
        OtelTracingModule.forRoot('worker'),
        CacheModule,
        MetricsModule,
        DeadLettersModule,
      ],
      controllers: [HealthController],
      providers: [
        { provide: JobRegistry, useValue: registry },
        { provide: WORKER_QUEUES, useValue: queues },
        { provide: BLOB_STORE, useValue: blobs },
        {
          provide: WORKER_REDIS,
          inject: [RedisConnections],
          useFactory: (connections: RedisConnections) => connections.open('queue', config.queueRedis, 'durable', 'nest-offload:worker'),
        },
        Lifecycle,
        JobPool,
        WorkerMetrics,
        FanOut,
        JobNotifier,
        InputFiles,
        FileLeases,
        JobProcessor,
        CancelListener,
        {
          provide: HEALTH_INDICATORS,
          inject: [WORKER_REDIS, JobPool, JobProcessor],
          useFactory: (redis: RedisClient, pool: JobPool, processor: JobProcessor): HealthIndicator[] => [
            { name: 'queueRedis', check: () => pingRedis(redis) },
            { name: 'pool', check: async () => assert(pool.alive, 'pool closed') },
            { name: 'consumer', check: async () => assert(processor.running, 'not consuming every queue') },
          ],
        },
      ],
    };
  }
}
