import { DynamicModule, Global, Module } from '@nestjs/common';
import { JobRegistry } from '@app/jobs';
import { JobQueues, QUEUE_REDIS, queueProviders, SUBMIT_REDIS } from './queue.providers';

/**
 * The queue infrastructure of the API: the registry of job types, the queue-Redis connections and
 * the BullMQ queues on them. why global: like ConfigModule, one per process, and the core and every
 * capability read from it; none of them owns it.
 */
@Global()
@Module({})
export class QueuesModule {
  static forRoot(registry: JobRegistry): DynamicModule {
    return {
      module: QueuesModule,
      providers: [{ provide: JobRegistry, useValue: registry }, ...queueProviders],
      exports: [JobRegistry, QUEUE_REDIS, SUBMIT_REDIS, JobQueues],
    };
  }
}
