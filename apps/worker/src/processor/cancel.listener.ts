import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { type Logger, LOGGER } from '@app/logging';
import { queueKeys } from '@app/queue';
import { closeRedis, createRedis, type RedisClient } from '@app/redis';
import { JobProcessor } from './job-processor';

/**
 * Hears cancel requests the API publishes and aborts the job if this worker runs it. The job may run
 * on any replica, so every worker listens; the one holding it terminates its thread.
 */
@Injectable()
export class CancelListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly subscriber: RedisClient;
  private readonly logger: Logger;
  private readonly channel: string;

  constructor(
    private readonly processor: JobProcessor,
    @Inject(LOGGER) logger: Logger,
    @Inject(CONFIG) config: Config,
  ) {
    this.logger = logger.child({ context: CancelListener.name });
    this.channel = queueKeys(config.redisPrefix).cancelChannel;
    this.subscriber = createRedis(config.queueRedis, 'blocking', 'nest-offload:worker-cancel');
  }

  /** The subscriber connection (for the connection metric). */
  get connection(): RedisClient {
    return this.subscriber;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber.on('message', (channel: string, jobId: string) => {
      if (channel === this.channel && this.processor.cancel(jobId)) this.logger.info({ jobId }, 'cancelling running job');
    });
    // why: not awaited: with Redis down at start-up ioredis subscribes once it connects.
    void this.subscriber.subscribe(this.channel).catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    await closeRedis(this.subscriber);
  }
}
