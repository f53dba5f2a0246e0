import { DynamicModule, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { CacheModule } from '@app/cache';
import { Config, ConfigModule } from '@app/config';
import { HEALTH_INDICATORS, HealthController, HealthIndicator, Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { type Logger, LoggingModule } from '@app/logging';
import { MetricsModule } from '@app/metrics';
import { checkSchedules } from '@app/queue';
import { closeRedis, createRedis, pingRedis, type RedisClient } from '@app/redis';
import { type Tracing, TracingModule } from '@app/tracing';
import { JobPool } from './pool/job-pool';
import { CancelListener } from './processor/cancel.listener';
import { ConnectionMetrics } from './processor/connection.metrics';
import { FanOut } from './processor/fan-out';
import { JobNotifier } from './processor/job-notifier';
import { JobProcessor } from './processor/job-processor';
import { WORKER_REDIS } from './processor/worker-redis';
import { WorkerMetrics } from './processor/worker.metrics';
import { selectQueues, WORKER_QUEUES } from './processor/worker-queues';

// why throw, not return a rejected promise: a check's promise is awaited by the health controller.
function assert(ok: boolean, problem: string): void {
  if (!ok) throw new Error(problem);
}

/** Closes the worker's queue connection last, after the BullMQ worker has let go of it. */
class WorkerRedisCloser implements OnApplicationShutdown {
  constructor(@Inject(WORKER_REDIS) private readonly redis: RedisClient) {}

  async onApplicationShutdown(): Promise<void> {
    await closeRedis(this.redis);
  }
}

/** The BullMQ consumer: takes jobs from Redis and runs them on the piscina pool. Serves probes and metrics. */
@Module({})
export class WorkerModule {
  static forRoot(config: Config, logger: Logger, tracing?: Tracing): DynamicModule {
    // why here, not in a provider: a bad WORKER_QUEUES stops start-up with its message, before Nest starts.
    const registry = JobRegistry.forConfig(config);
    const queues = selectQueues(registry, config.workerQueues);
    // why the worker too, though the API registers schedules: a build with a bad cron runs nowhere.
    checkSchedules(registry);
    return {
      module: WorkerModule,
      imports: [ConfigModule.forRoot(config), LoggingModule.forRoot(logger), TracingModule.forRoot(tracing), CacheModule, MetricsModule],
      controllers: [HealthController],
      providers: [
        { provide: JobRegistry, useValue: registry },
        { provide: WORKER_QUEUES, useValue: queues },
        { provide: WORKER_REDIS, useFactory: () => createRedis(config.queueRedis, 'durable', 'nest-offload:worker') },
        WorkerRedisCloser,
        Lifecycle,
        JobPool,
        WorkerMetrics,
        FanOut,
        JobNotifier,
        JobProcessor,
        CancelListener,
        ConnectionMetrics,
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
