import { DynamicModule, Module } from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import { ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { MetricsModule } from '../../libs/metrics/src';
import { FAILED_KEY_THROTTLER, FAILED_KEYS_PER_MINUTE } from './failed-key.guard';
import { GuardedJobsController } from './guarded-jobs.controller';
import { PeerApiHealthController, queueEventsProviders } from './peer-api.module';
import { resultCacheModule } from './peer-result-cache';
import { PEER_QUEUE, PeerEnv } from './peer.queue';

/**
 * The equal-guarantee peer's API (PEER_API_KEY set): the bare peer's module with what a user adds
 * for the template's guarantees, each from its usual library: `@nestjs/throttler` on
 * `@nest-lab/throttler-storage-redis` for the failed-key throttle, `@nestjs/cache-manager` on
 * `@keyv/redis` for the result cache, BullMQ's `deduplication` for single flight (the controller).
 */
@Module({})
export class GuardedPeerApiModule {
  static forRoot(env: PeerEnv): DynamicModule {
    const { connection, prefix, redisUrl } = env;
    return {
      module: GuardedPeerApiModule,
      imports: [
        MetricsModule,
        BullModule.forRoot({ connection, prefix }),
        BullModule.registerQueue({ name: PEER_QUEUE }),
        ThrottlerModule.forRoot({
          throttlers: [{ name: FAILED_KEY_THROTTLER, ttl: 60_000, limit: FAILED_KEYS_PER_MINUTE, blockDuration: 60_000 }],
          // why keyPrefix: the storage's keys go under the peer's prefix, where the bench deletes them afterwards.
          storage: new ThrottlerStorageRedisService(redisUrl, { keyPrefix: `${prefix}:` }),
        }),
        resultCacheModule(env),
      ],
      controllers: [GuardedJobsController, PeerApiHealthController],
      providers: queueEventsProviders(env),
    };
  }
}
